import { PlbError } from '../core/errors.js';
import { admissionFor, AdmittingRouter } from './admission.js';
import { GroupedLeastLoaded, NO_GROUP } from './least-loaded.js';
import {
  rebalanceSteps,
  repairTarget,
  resolveBorrowing,
  shouldBorrow,
  shouldReturn,
  type PlbReplicaView,
} from './plb-rules.js';
import { resolveReadings } from './readings.js';
import { DEFAULT_REFERENCE, fullReference, partitionFor } from './role-vector.js';
import { admissionKey, DEFAULT_SLOW_START_MS, slowStartRamp } from './slow-start.js';
import { STRATEGY_NAMES } from './strategies.js';
import { ZonedRouter } from './zones.js';
import type {
  Admission,
  BorrowThresholds,
  PlbReadings,
  ReplicaSnapshot,
  ReplicaSpec,
  Role,
  RoleChange,
  RoleChangeReason,
  RoleVector,
  Router,
  RouterOptions,
  StrategyName,
} from './types.js';
import type { ServiceClass } from '../core/service-class.js';

// Module-local handles on the rules used per admission (cheaper than a cross-module binding per call).
const keyFn = admissionKey;
const rampFn = slowStartRamp;
const returnFn = shouldReturn;
const borrowFn = shouldBorrow;

interface ReplicaState extends PlbReplicaView {
  id: string;
}

function normaliseReplicas(replicas: ReadonlyArray<string | ReplicaSpec>): ReplicaState[] {
  if (!Array.isArray(replicas) || replicas.length === 0) {
    throw new PlbError('BAD_INPUT', 'replicas must list at least one replica');
  }
  const seen = new Set<string>();
  return replicas.map((r, index) => {
    const spec: ReplicaSpec = typeof r === 'string' ? { id: r } : r;
    const weight = spec.weight ?? 1;
    if (typeof spec.id !== 'string' || spec.id === '')
      throw new PlbError('BAD_INPUT', `replicas[${index}] has no id`);
    if (seen.has(spec.id)) throw new PlbError('BAD_INPUT', `replicas: duplicate id '${spec.id}'`);
    if (!(weight > 0) || !Number.isFinite(weight)) {
      throw new PlbError(
        'BAD_INPUT',
        `replicas[${index}].weight must be a finite number > 0, got ${String(weight)}`,
      );
    }
    seen.add(spec.id);
    return {
      id: spec.id,
      index,
      weight,
      healthy: true,
      role: 'mixed' as Role,
      borrowedBy: undefined,
      upSinceMs: undefined,
      sessions: { premium: 0, freemium: 0 },
    };
  });
}

abstract class BaseRouter implements Router {
  protected readonly replicas: ReplicaState[];
  protected healthyCount: number;
  protected readonly byId = new Map<string, number>();
  private changes: RoleChange[] = [];
  private readonly onRoleChange: ((change: RoleChange) => void) | undefined;

  constructor(
    readonly strategy: StrategyName,
    options: RouterOptions,
  ) {
    this.replicas = normaliseReplicas(options.replicas);
    this.healthyCount = this.replicas.length;
    for (const r of this.replicas) this.byId.set(r.id, r.index);
    this.onRoleChange = options.onRoleChange;
  }

  admit(cls: ServiceClass, nowMs: number): Admission {
    if (cls !== 'premium' && cls !== 'freemium') throw this.badClass(cls);
    const i = this.pick(cls, nowMs);
    const r = this.replicas[i];
    if (r === undefined) throw this.noReplica(cls);
    r.sessions[cls] += 1;
    this.sessionsChanged(i);
    return { replica: r.id };
  }

  release(replica: string, cls: ServiceClass, _nowMs: number): boolean {
    const i = this.byId.get(replica);
    if (i === undefined) return false;
    const r = this.replicas[i] as ReplicaState;
    // Counts never go negative; a session opened before a markDown still counts until released.
    if (!(r.sessions[cls] > 0)) return false;
    r.sessions[cls] -= 1;
    this.sessionsChanged(i);
    return true;
  }

  /** Counts a session of cls on a replica the caller chose (admission control picked it). */
  assign(replica: string, cls: ServiceClass, _nowMs: number): Admission {
    const r = this.replica(replica);
    if (!r.healthy) throw this.noReplica(cls);
    r.sessions[cls] += 1;
    this.sessionsChanged(r.index);
    return { replica: r.id };
  }

  protected badClass(cls: unknown): PlbError {
    return new PlbError('BAD_INPUT', `class must be premium or freemium, got '${String(cls)}'`);
  }

  protected noReplica(cls: ServiceClass): PlbError {
    return new PlbError(
      'NO_REPLICA',
      `no healthy replica may take a ${cls} session (strategy ${this.strategy})`,
      {
        hint: 'wait for a replica to come back, or use a strategy that shares replicas across classes',
      },
    );
  }

  markDown(replica: string, nowMs: number): void {
    const r = this.replica(replica);
    if (!r.healthy) return;
    r.healthy = false;
    this.healthyCount -= 1;
    this.record(r, r.role, 'down', 'down', nowMs);
    this.onDown(r, nowMs);
  }

  markUp(replica: string, nowMs: number): void {
    const r = this.replica(replica);
    if (r.healthy) return;
    r.healthy = true;
    this.healthyCount += 1;
    r.upSinceMs = nowMs;
    this.onUp(r, nowMs);
  }

  setWeight(replica: string, weight: number): void {
    if (!(weight > 0) || !Number.isFinite(weight))
      throw new PlbError(
        'BAD_INPUT',
        `weight of ${replica} must be a finite number > 0, got ${String(weight)}`,
      );
    const r = this.replica(replica);
    if (r.weight === weight) return;
    r.weight = weight;
    // The same re-keying as a session count change: the load key is sessions / weight.
    this.sessionsChanged(r.index);
  }

  snapshot(): ReplicaSnapshot[] {
    return this.replicas.map((r) => {
      const s: ReplicaSnapshot = {
        id: r.id,
        healthy: r.healthy,
        role: r.role,
        weight: r.weight,
        sessions: { premium: r.sessions.premium, freemium: r.sessions.freemium },
      };
      if (r.borrowedBy !== undefined) s.borrowedBy = r.borrowedBy;
      return s;
    });
  }

  drainChanges(): RoleChange[] {
    const out = this.changes;
    this.changes = [];
    return out;
  }

  protected record(
    r: ReplicaState,
    from: Role | 'down',
    to: Role | 'down',
    reason: RoleChangeReason,
    nowMs: number,
  ): void {
    const change: RoleChange = { replica: r.id, from, to, reason, nowMs };
    if (to !== 'down' && r.borrowedBy !== undefined) change.borrowedBy = r.borrowedBy;
    if (this.onRoleChange) this.onRoleChange(change);
    else this.changes.push(change);
  }

  private replica(id: string): ReplicaState {
    const i = this.byId.get(id);
    if (i === undefined) throw new PlbError('BAD_INPUT', `unknown replica '${id}'`);
    return this.replicas[i] as ReplicaState;
  }

  /** The replica index for a new session of cls, or -1 for NO_REPLICA. */
  protected abstract pick(cls: ServiceClass, nowMs: number): number;
  protected abstract sessionsChanged(i: number): void;
  protected abstract onDown(r: ReplicaState, nowMs: number): void;
  /** r is healthy again; its role is still the old one. */
  protected abstract onUp(r: ReplicaState, nowMs: number): void;
}

/** Round robin over the healthy members of a fixed list, resuming after the last one chosen. */
class Rotation {
  private healthy: number[] = [];
  private pos = 0;
  private next = 0; // replica index the rotation resumes from

  constructor(private readonly members: readonly number[]) {}

  rebuild(replicas: readonly ReplicaState[]): void {
    this.healthy = this.members.filter((i) => (replicas[i] as ReplicaState).healthy);
    const p = this.healthy.findIndex((i) => i >= this.next);
    this.pos = p < 0 ? 0 : p;
  }

  pick(): number {
    const n = this.healthy.length;
    if (n === 0) return -1;
    if (this.pos >= n) this.pos = 0;
    const i = this.healthy[this.pos] as number;
    this.pos += 1;
    this.next = i + 1;
    return i;
  }
}

/** rr: class-blind round robin over all healthy replicas ("5RR"). Every replica reports role mixed. */
class RoundRobinRouter extends BaseRouter {
  private readonly rotation: Rotation;

  constructor(options: RouterOptions) {
    super('rr', options);
    this.rotation = new Rotation(this.replicas.map((r) => r.index));
    this.rotation.rebuild(this.replicas);
  }

  protected pick(): number {
    return this.rotation.pick();
  }
  protected sessionsChanged(): void {}
  protected onDown(): void {
    this.rotation.rebuild(this.replicas);
  }
  protected onUp(r: ReplicaState, nowMs: number): void {
    this.record(r, 'down', r.role, 'rejoin', nowMs);
    this.rotation.rebuild(this.replicas);
  }
}

/** static: the first partition.premium replicas serve premium only, the rest freemium; round robin inside. */
class StaticRouter extends BaseRouter {
  private readonly rotations: Record<ServiceClass, Rotation>;

  constructor(options: RouterOptions) {
    super('static', options);
    const part = partitionFor(this.replicas.length, options.partition);
    const premium: number[] = [];
    const freemium: number[] = [];
    for (const r of this.replicas) {
      r.role = r.index < part.premium ? 'premium' : 'freemium';
      (r.role === 'premium' ? premium : freemium).push(r.index);
    }
    this.rotations = { premium: new Rotation(premium), freemium: new Rotation(freemium) };
    this.rebuild();
  }

  private rebuild(): void {
    this.rotations.premium.rebuild(this.replicas);
    this.rotations.freemium.rebuild(this.replicas);
  }

  protected pick(cls: ServiceClass): number {
    return this.rotations[cls].pick();
  }
  protected sessionsChanged(): void {}
  protected onDown(): void {
    this.rebuild();
  }
  protected onUp(r: ReplicaState, nowMs: number): void {
    this.record(r, 'down', r.role, 'rejoin', nowMs);
    this.rebuild();
  }
}

/** lc: least sessions (weights ignored, no slow start); wlc: sessions / (weight * slow-start ramp). */
class LeastSessionsRouter extends BaseRouter {
  private readonly pool: GroupedLeastLoaded;
  private static readonly ALL = 0;

  constructor(
    strategy: 'lc' | 'wlc',
    options: RouterOptions,
    private readonly slowStartMs: number,
  ) {
    super(strategy, options);
    const weighted = strategy === 'wlc';
    const w = (i: number): number => (weighted ? (this.replicas[i] as ReplicaState).weight : 1);
    const total = (i: number): number => {
      const s = (this.replicas[i] as ReplicaState).sessions;
      return s.premium + s.freemium;
    };
    const ramp = (i: number, nowMs: number): number =>
      rampFn(nowMs, (this.replicas[i] as ReplicaState).upSinceMs, this.slowStartMs);
    this.pool = new GroupedLeastLoaded(
      this.replicas.length,
      1,
      (i, nowMs) => keyFn(total(i), w(i), ramp(i, nowMs)),
      (i, nowMs) => ramp(i, nowMs) < 1,
      (i) => keyFn(total(i), w(i), 1),
    );
    for (const r of this.replicas) this.pool.place(r.index, LeastSessionsRouter.ALL, 0);
  }

  protected pick(_cls: ServiceClass, nowMs: number): number {
    return this.pool.best(1 << LeastSessionsRouter.ALL, nowMs);
  }
  protected sessionsChanged(i: number): void {
    this.pool.changed(i);
  }
  protected onDown(r: ReplicaState, nowMs: number): void {
    this.pool.place(r.index, NO_GROUP, nowMs);
  }
  protected onUp(r: ReplicaState, nowMs: number): void {
    this.record(r, 'down', r.role, 'rejoin', nowMs);
    this.pool.place(r.index, LeastSessionsRouter.ALL, nowMs);
  }
}

// PLB groups: a replica's role, or its role while borrowed (PB: premium role borrowed by freemium).
// Numbered so the pool indexes them by array and queries name several at once by a bit mask.
const G_P = 0;
const G_M = 1;
const G_F = 2;
const G_PB = 3;
const G_FB = 4;
const PLB_GROUPS = 5;
// Per class: own = role cls or mixed (lent out or not); eligible = own + what cls borrowed.
const OWN_PREMIUM = (1 << G_P) | (1 << G_PB) | (1 << G_M);
const OWN_FREEMIUM = (1 << G_F) | (1 << G_FB) | (1 << G_M);
const ELIGIBLE_PREMIUM = OWN_PREMIUM | (1 << G_FB);
const ELIGIBLE_FREEMIUM = OWN_FREEMIUM | (1 << G_PB);

function plbGroup(role: Role, borrowedBy: ServiceClass | undefined): number {
  if (role === 'mixed') return G_M;
  if (role === 'premium') return borrowedBy === 'freemium' ? G_PB : G_P;
  return borrowedBy === 'premium' ? G_FB : G_F;
}

/**
 * plb: roles, repair-to-target on every markDown/markUp (as the readings say), class-aware
 * least-loaded admission, borrowing. The readings change only what events do to the roles;
 * admission and borrowing are the same under all of them.
 */
class PlbRouter extends BaseRouter {
  private readonly pool: GroupedLeastLoaded;
  private readonly full: RoleVector;
  private readonly readings: PlbReadings;
  private readonly premiumT: BorrowThresholds;
  private readonly freemiumT: BorrowThresholds;

  constructor(
    options: RouterOptions,
    private readonly slowStartMs: number,
  ) {
    super('plb', options);
    this.readings = resolveReadings(options.readings);
    this.full = fullReference(
      this.replicas.length,
      options.reference ?? DEFAULT_REFERENCE,
      this.readings.reference,
    );
    const borrowing = resolveBorrowing(options.borrowing);
    this.premiumT = borrowing.premium;
    this.freemiumT = borrowing.freemium;
    const total = (i: number): number => {
      const s = (this.replicas[i] as ReplicaState).sessions;
      return s.premium + s.freemium;
    };
    const w = (i: number): number => (this.replicas[i] as ReplicaState).weight;
    const ramp = (i: number, nowMs: number): number =>
      rampFn(nowMs, (this.replicas[i] as ReplicaState).upSinceMs, this.slowStartMs);
    this.pool = new GroupedLeastLoaded(
      this.replicas.length,
      PLB_GROUPS,
      (i, nowMs) => keyFn(total(i), w(i), ramp(i, nowMs)),
      (i, nowMs) => ramp(i, nowMs) < 1,
      (i) => keyFn(total(i), w(i), 1),
      [G_PB, G_FB],
    );
    // The first replicas in order take premium, then mixed, then freemium.
    for (const r of this.replicas) {
      r.role =
        r.index < this.full.premium
          ? 'premium'
          : r.index < this.full.premium + this.full.mixed
            ? 'mixed'
            : 'freemium';
      this.pool.place(r.index, plbGroup(r.role, undefined), 0);
    }
  }

  // admit and release are the per-session hot path: overridden so they stay monomorphic, branch on the
  // class instead of indexing by it, and move a heap entry only in the direction its key went.
  override admit(cls: ServiceClass, nowMs: number): Admission {
    const premium = cls === 'premium';
    if (!premium && cls !== 'freemium') throw this.badClass(cls);
    const i = this.choose(premium, nowMs);
    if (i < 0) throw this.noReplica(cls);
    const r = this.replicas[i] as ReplicaState;
    const s = r.sessions;
    if (premium) s.premium += 1;
    else s.freemium += 1;
    this.pool.raised(i, keyFn(s.premium + s.freemium, r.weight, 1));
    return { replica: r.id };
  }

  override release(replica: string, cls: ServiceClass, _nowMs: number): boolean {
    const i = this.byId.get(replica);
    if (i === undefined) return false;
    const r = this.replicas[i] as ReplicaState;
    const s = r.sessions;
    // Counts never go negative; a session opened before a markDown still counts until released.
    if (cls === 'premium') {
      if (!(s.premium > 0)) return false;
      s.premium -= 1;
    } else if (cls === 'freemium') {
      if (!(s.freemium > 0)) return false;
      s.freemium -= 1;
    } else return false;
    this.pool.lowered(i, keyFn(s.premium + s.freemium, r.weight, 1));
    return true;
  }

  private keyNow(i: number, nowMs: number): number {
    const r = this.replicas[i] as ReplicaState;
    if (r.upSinceMs === undefined) return this.pool.warmKeyOf(i);
    const ramp = rampFn(nowMs, r.upSinceMs, this.slowStartMs);
    return keyFn(r.sessions.premium + r.sessions.freemium, r.weight, ramp);
  }

  private setState(r: ReplicaState, role: Role, borrowedBy: ServiceClass | undefined, nowMs: number): void {
    r.role = role;
    r.borrowedBy = borrowedBy;
    this.pool.place(r.index, plbGroup(role, borrowedBy), nowMs);
  }

  protected pick(cls: ServiceClass, nowMs: number): number {
    return this.choose(cls === 'premium', nowMs);
  }

  /** The replica index for a new session (premium or freemium), or -1; applies returns and borrowing. */
  private choose(premium: boolean, nowMs: number): number {
    if (this.healthyCount === 0) return -1;
    const cls: ServiceClass = premium ? 'premium' : 'freemium';
    const t = premium ? this.premiumT : this.freemiumT;
    const pool = this.pool;
    const own = pool.best(premium ? OWN_PREMIUM : OWN_FREEMIUM, nowMs);
    const pressure = own < 0 ? Number.POSITIVE_INFINITY : this.keyNow(own, nowMs);
    let changed = false;
    // Return borrowed replicas, most loaded first: shouldReturn only grows with the key, so the
    // warm ones stop at the first that stays; the few still in slow start are checked one by one.
    const borrowedGroup = premium ? G_FB : G_PB;
    for (let i = pool.worstWarm(borrowedGroup); i >= 0; i = pool.worstWarm(borrowedGroup)) {
      if (!returnFn(pressure, pool.warmKeyOf(i), t)) break;
      this.giveBack(i, nowMs);
      changed = true;
    }
    if (pool.hasRamping()) {
      for (const i of pool.rampingMembers(borrowedGroup)) {
        if (!returnFn(pressure, this.keyNow(i, nowMs), t)) continue;
        this.giveBack(i, nowMs);
        changed = true;
      }
    }
    // Below minLoad shouldBorrow is false whatever the lender's key: skip looking for one.
    if (t.enabled && pressure >= t.minLoad) {
      const lender = pool.best(1 << (premium ? G_F : G_P), nowMs);
      if (lender >= 0 && borrowFn(pressure, this.keyNow(lender, nowMs), t)) {
        const r = this.replicas[lender] as ReplicaState;
        this.setState(r, r.role, cls, nowMs);
        this.record(r, r.role, r.role, 'borrow', nowMs);
        changed = true;
      }
    }
    if (changed) return pool.best(premium ? ELIGIBLE_PREMIUM : ELIGIBLE_FREEMIUM, nowMs);
    // Nothing moved: eligible = own replicas + those the class borrowed, so one more heap top will do.
    const b = pool.best(1 << borrowedGroup, nowMs);
    if (b < 0) return own;
    if (own < 0) return b;
    const kb = this.keyNow(b, nowMs);
    return kb < pressure || (kb === pressure && b < own) ? b : own;
  }

  private giveBack(i: number, nowMs: number): void {
    const r = this.replicas[i] as ReplicaState;
    this.setState(r, r.role, undefined, nowMs);
    this.record(r, r.role, r.role, 'return', nowMs);
  }

  protected sessionsChanged(i: number): void {
    const r = this.replicas[i] as ReplicaState;
    this.pool.changed(i, keyFn(r.sessions.premium + r.sessions.freemium, r.weight, 1));
  }

  protected onDown(r: ReplicaState, nowMs: number): void {
    r.borrowedBy = undefined;
    this.pool.place(r.index, NO_GROUP, nowMs);
    this.rebalance(nowMs);
  }

  protected onUp(r: ReplicaState, nowMs: number): void {
    // Without repair a rejoining replica takes back its old role; otherwise it enters as shared
    // capacity, then repair runs.
    const role = this.readings.repair === 'none' ? r.role : 'mixed';
    this.setState(r, role, undefined, nowMs);
    this.record(r, 'down', role, 'rejoin', nowMs);
    this.rebalance(nowMs);
  }

  /** Canonicalize, then repair toward the target of the current survivors (rebalanceSteps). */
  private rebalance(nowMs: number): void {
    const target = repairTarget(this.healthyCount, this.replicas.length, this.full, this.readings);
    for (const step of rebalanceSteps(this.replicas, target, this.readings)) {
      const r = this.replicas[step.index] as ReplicaState;
      this.setState(r, step.to, undefined, nowMs);
      this.record(r, step.from, step.to, step.reason, nowMs);
    }
  }
}

/** A router for one strategy over a fixed list of replicas (all healthy at the start). */
export function createRouter(options: RouterOptions): Router {
  if (options?.zones !== undefined) return new ZonedRouter(options, options.zones, createRouter);
  const strategy = options?.strategy;
  if (!STRATEGY_NAMES.includes(strategy)) {
    throw new PlbError(
      'BAD_INPUT',
      `strategy must be one of ${STRATEGY_NAMES.join(', ')}, got '${String(strategy)}'`,
    );
  }
  const slowStartMs = options.slowStartMs ?? DEFAULT_SLOW_START_MS;
  if (!(slowStartMs >= 0) || !Number.isFinite(slowStartMs)) {
    throw new PlbError('BAD_INPUT', `slowStartMs must be a finite number >= 0, got ${String(slowStartMs)}`);
  }
  switch (strategy) {
    case 'plb':
      return new PlbRouter(options, slowStartMs);
    case 'rr':
      return new RoundRobinRouter(options);
    case 'static':
      return new StaticRouter(options);
    case 'lc':
      return new LeastSessionsRouter('lc', options, 0);
    case 'wlc':
      return new LeastSessionsRouter('wlc', options, slowStartMs);
    case 'plb-admit':
      return new AdmittingRouter(
        new PlbRouter(options, slowStartMs),
        strategy,
        admissionFor(options, slowStartMs),
      );
    case 'lc-queue': {
      // HAProxy's queue knows no classes and no SLO: one FIFO, no guard.
      const { guard: _guard, ...plain } = admissionFor(options, 0);
      return new AdmittingRouter(new LeastSessionsRouter('lc', options, 0), strategy, {
        ...plain,
        classBlind: true,
      });
    }
  }
}
