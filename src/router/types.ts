import type { StrategyName } from './strategy-registry.js';
import type { AdmissionOptions } from './admission/admission-types.js';
import type { ServiceClass } from '../core/service-class.js';
export type Role = 'premium' | 'mixed' | 'freemium';
export interface RoleVector {
  premium: number;
  mixed: number;
  freemium: number;
}

/** The routing strategies plb compares (DESIGN.md), from the registry (router/strategy-registry.ts). */
export type { StrategyName };

/** A static per-class partition: the first `premium` replicas serve premium, the rest freemium. */
export interface Partition {
  premium: number;
  freemium: number;
}

/** A replica of the read pool; weight (default 1) is its relative capacity. */
export interface ReplicaSpec {
  id: string;
  weight?: number;
}

/** A replica added to a running router (addReplica); zone: its zone, when the router has zones. */
export interface AddedReplica extends ReplicaSpec {
  zone?: string;
}

/**
 * When a class may borrow a replica of the other class's dedicated role. The borrower's pressure is
 * the admission key of its best own replica (role = class or mixed), key = (sessions+1)/(weight*ramp).
 * Borrow the least-loaded lender when pressure >= minLoad and pressure >= pressureRatio * lender key;
 * return it when its key >= returnRatio * pressure (it no longer relieves) or pressure < minLoad/2.
 */
export interface BorrowThresholds {
  enabled: boolean;
  pressureRatio: number;
  returnRatio: number;
  minLoad: number;
}

export interface BorrowingOptions {
  premium?: Partial<BorrowThresholds>;
  freemium?: Partial<BorrowThresholds>;
}

/**
 * Where the PLB paper allows more than one reading of a rule, the one the router applies
 * (src/router/readings.ts describes each; DEFAULT_READINGS is the paper read literally).
 */
export interface PlbReadings {
  /** Who donates to a role below target: only a role above its target, or Mixed first always. */
  donors: 'above-target' | 'mixed-first';
  /** Which replicas canonicalization re-roles before repair: borrowed ones, or every healthy one. */
  canonicalize: 'borrowed' | 'all';
  /** A reference that sums to K: used as given at K+=K, or passed through the floor rules too. */
  reference: 'literal' | 'floored';
  /** What an event does to the roles: repair to target, nothing (ablation), or a shared pool (ablation). */
  repair: 'target' | 'none' | 'shared';
  /** Borrowing: act on the first admission that sees the condition, or once it held for a dwell. */
  hold: 'none' | 'dwell';
  /** The floors of the target from K+=4 on: premium, freemium and mixed >= 1, or only the two classes. */
  floors: 'mixed' | 'classes';
  /** When replicas are lent: in every phase, or only while every replica is healthy. */
  lend: 'always' | 'normal';
  /** Whether premium under pressure takes back its replicas lent to freemium (and lends no more). */
  reclaim: 'none' | 'premium';
}

export interface RouterOptions {
  /** plb-admit and lc-queue: session limits, the queue and the SLO guard (admission.ts). */
  admission?: Omit<AdmissionOptions, 'slowStartMs'>;
  strategy: StrategyName;
  replicas: ReadonlyArray<string | ReplicaSpec>;
  /** plb: premium:mixed:freemium ratio, scaled to K with targetRoleVector (default 2:1:2). */
  reference?: RoleVector;
  /** static: used as given when it sums to K, otherwise scaled (default 3:2). */
  partition?: Partition;
  /** plb and wlc: a rejoining replica's weight ramps linearly over this many ms (default 30000, 0 = off). */
  slowStartMs?: number;
  /** plb: borrowing thresholds per borrowing class, or false to disable borrowing. */
  borrowing?: BorrowingOptions | false;
  /** plb: the readings of the paper's rules; unset keys take DEFAULT_READINGS. */
  readings?: Partial<PlbReadings>;
  /** Called synchronously for every role change; when given, drainChanges() stays empty. */
  onRoleChange?: (change: RoleChange) => void;
  /**
   * Replica id -> zone: each zone's replicas become a pool of the strategy, a session prefers its
   * own zone's pool (zones.ts). Absent: one pool, no zone preference.
   */
  zones?: Readonly<Record<string, string>>;
  /** With zones: spill to another zone when its best key is this many times lower (default 2). */
  zoneSpill?: number;
  /** With zones: the zone of an admission that names none (a proxy's own zone, `plb proxy --zone`). */
  homeZone?: string;
}

export interface Admission {
  replica: string;
}

export interface ReplicaSnapshot {
  id: string;
  healthy: boolean;
  /** plb: the current role (the last one while down); static: the partition class; rr/lc/wlc: 'mixed'. */
  role: Role;
  /** plb: set while the other class borrows this premium- or freemium-role replica. */
  borrowedBy?: ServiceClass;
  weight: number;
  sessions: { premium: number; freemium: number };
}

export type RoleChangeReason =
  | 'down'
  | 'rejoin'
  | 'canonicalize'
  | 'repair'
  | 'borrow'
  | 'return'
  | 'reclaim';

/** One change of a replica's role; 'down' stands for "not in the pool". borrowedBy is the new state. */
export interface RoleChange {
  replica: string;
  from: Role | 'down';
  to: Role | 'down';
  borrowedBy?: ServiceClass;
  reason: RoleChangeReason;
  nowMs: number;
}

/**
 * The part of a router a session and the runner use: the one interface the bench's runner, the
 * DataSource and `--strategy via`'s admissions (an external balancer) share. Router is the whole
 * of it, as the strategies implement it.
 */
export interface SessionRouter {
  /** Pick a replica for a new session. `zone`: the client's zone, preferred when the router has zones. */
  admit(cls: ServiceClass, nowMs: number, zone?: string): Admission;
  /** A session ended. */
  release(replica: string, cls: ServiceClass, nowMs: number): unknown;
  /**
   * The connection landed on `replica` rather than the target admit() named (an external balancer
   * chose, `--strategy via`): from now on the session counts there, and is released from there.
   */
  landed?(target: string, replica: string, cls: ServiceClass, nowMs: number): void;
  markDown(replica: string, nowMs: number): void;
  markUp(replica: string, nowMs: number): void;
  /**
   * The `replica` view: sets a replica's per-class session counts to what the replica itself
   * reported; the router's own admissions and releases count on from there. Absent: the router
   * only knows its own sessions (a wrapping router: admission limits, zones).
   */
  observeSessions?(replica: string, counts: { premium: number; freemium: number }, nowMs: number): void;
  /** Lag-derived weights (lag-weight.ts); absent in routers made for tests. */
  setWeight?(replica: string, weight: number): void;
  snapshot(): ReadonlyArray<{
    id: string;
    healthy: boolean;
    role: string;
    weight?: number;
    sessions: { premium: number; freemium: number };
  }>;
}

export interface Router extends SessionRouter {
  readonly strategy: StrategyName;
  /**
   * Pick a replica for a new session; throws PlbError NO_REPLICA when no healthy replica may take
   * cls. `zone`: the client's zone, preferred when the router has zones (ignored otherwise).
   */
  admit(cls: ServiceClass, nowMs: number, zone?: string): Admission;
  /** A session ended; false (and nothing changes) when there was no such session to release. */
  release(replica: string, cls: ServiceClass, nowMs: number): boolean;
  markDown(replica: string, nowMs: number): void;
  markUp(replica: string, nowMs: number): void;
  snapshot(): ReplicaSnapshot[];
  /** Role changes since the last call, oldest first. */
  drainChanges(): RoleChange[];
  /**
   * Changes a replica's weight (> 0), e.g. from its replication lag (lag-weight.ts); strategies
   * that weigh replicas (wlc, plb) use it from the next admission on, the others ignore it.
   */
  setWeight(replica: string, weight: number): void;
  /**
   * A replica joins at run time (a proxy's reload): known from now on but down, so it takes no
   * session until markUp, which brings it in as a rejoin (slow start; plb: shared capacity, then
   * repair toward the target of the larger K). Throws BAD_INPUT for a known id or a bad weight.
   */
  addReplica(spec: AddedReplica, nowMs: number): void;
  /** Counts a session of cls on a replica chosen by admission control (admission.ts). */
  assign?(replica: string, cls: ServiceClass, nowMs: number): Admission;
}
