// What every strategy shares: the replica list, session counts, health, weights and the role-change
// record. A strategy adds only how it picks a replica and what it keeps in step with the counts.
import { PlbError } from '../core/errors.js';
import type { PlbReplicaView } from './plb-rules.js';
import type {
  AddedReplica,
  Admission,
  ReplicaSnapshot,
  ReplicaSpec,
  Role,
  RoleChange,
  RoleChangeReason,
  Router,
  RouterOptions,
  StrategyName,
} from './types.js';
import type { ServiceClass } from '../core/service-class.js';

export interface ReplicaState extends PlbReplicaView {
  id: string;
}

function replicaState(spec: ReplicaSpec, index: number, field: string): ReplicaState {
  const weight = spec.weight ?? 1;
  if (typeof spec.id !== 'string' || spec.id === '') throw new PlbError('BAD_INPUT', `${field} has no id`);
  if (!(weight > 0) || !Number.isFinite(weight)) {
    throw new PlbError('BAD_INPUT', `${field}.weight must be a finite number > 0, got ${String(weight)}`);
  }
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
}

function normaliseReplicas(replicas: ReadonlyArray<string | ReplicaSpec>): ReplicaState[] {
  if (!Array.isArray(replicas) || replicas.length === 0) {
    throw new PlbError('BAD_INPUT', 'replicas must list at least one replica');
  }
  const seen = new Set<string>();
  return replicas.map((r, index) => {
    const state = replicaState(typeof r === 'string' ? { id: r } : r, index, `replicas[${index}]`);
    if (seen.has(state.id)) throw new PlbError('BAD_INPUT', `replicas: duplicate id '${state.id}'`);
    seen.add(state.id);
    return state;
  });
}

export abstract class BaseRouter implements Router {
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

  /** A replica joins, down (Router.addReplica); the strategy makes room for it in onAdd. */
  addReplica(spec: AddedReplica, nowMs: number): void {
    if (spec.zone !== undefined)
      throw new PlbError(
        'BAD_INPUT',
        `replica ${spec.id}: zone ${spec.zone}, but the replicas have no zones`,
      );
    const r = replicaState(
      { id: spec.id, weight: spec.weight ?? 1 },
      this.replicas.length,
      `replica ${spec.id}`,
    );
    if (this.byId.has(r.id)) throw new PlbError('BAD_INPUT', `replica ${r.id} is known already`);
    r.healthy = false;
    this.replicas.push(r);
    this.byId.set(r.id, r.index);
    this.onAdd(r, nowMs);
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

  /**
   * The `replica` view: a replica's session counts as read from the replica itself (every router's
   * sessions); this router's own admissions and releases count on from there until the next read.
   */
  observeSessions(replica: string, counts: { premium: number; freemium: number }, _nowMs: number): void {
    const r = this.replica(replica);
    for (const cls of ['premium', 'freemium'] as const) {
      const n = counts[cls];
      if (!(n >= 0) || !Number.isInteger(n))
        throw new PlbError(
          'BAD_INPUT',
          `${cls} sessions of ${replica} must be an integer >= 0, got ${String(n)}`,
        );
    }
    if (r.sessions.premium === counts.premium && r.sessions.freemium === counts.freemium) return;
    r.sessions.premium = counts.premium;
    r.sessions.freemium = counts.freemium;
    this.sessionsChanged(r.index);
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

  /**
   * The live state of every replica, in index order, for readers that must not pay a snapshot's copy
   * of all K per session (admission.ts). Read only: the router alone changes it.
   */
  liveReplicas(): readonly Readonly<ReplicaState>[] {
    return this.replicas;
  }

  /** A replica's index in liveReplicas(), or undefined for an unknown id. */
  indexOf(replica: string): number | undefined {
    return this.byId.get(replica);
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
  /** r was just added, down, at the last index: make room for it (its markUp comes later). */
  protected abstract onAdd(r: ReplicaState, nowMs: number): void;
}
