/**
 * Zone preference with cross-zone backup (reference: replica-load-balancing, "zone preference
 * without hard partitioning"): each zone's replicas are a pool of their own, run by the inner
 * strategy (as a backend per zone in HAProxy, the other zones' servers as backups). A session
 * prefers its own zone and goes to another only when no local replica may take its class, or
 * when the local pool is under pressure: its best admission key is at least `spill` times the
 * remote one's (and at least ZONE_SPILL_MIN_LOAD). A preference, not a partition: a zone outage never becomes a read outage.
 */
import { PlbError } from '../core/errors.js';
import { admissionKey } from './slow-start.js';
import type {
  AddedReplica,
  Admission,
  ReplicaSnapshot,
  ReplicaSpec,
  RoleChange,
  Router,
  RouterOptions,
  StrategyName,
} from './types.js';
import type { ServiceClass } from '../core/service-class.js';

/** Spill to another zone when the local best key is at least this many times the remote best. */
export const DEFAULT_ZONE_SPILL = 2;
/**
 * Below this local key (sessions per unit of weight, the new one counted) nothing spills: a lightly
 * loaded zone keeps its sessions however idle the others are (as borrowing's minLoad, plb-rules.ts).
 */
const ZONE_SPILL_MIN_LOAD = 4;

/** The key a new session of cls would see on the best replica of a pool (Infinity: none may take it). */
export function poolPressure(pool: readonly ReplicaSnapshot[], cls: ServiceClass): number {
  let best = Number.POSITIVE_INFINITY;
  for (const r of pool) {
    if (!r.healthy) continue;
    if (r.role !== 'mixed' && r.role !== cls && r.borrowedBy !== cls) continue;
    const k = admissionKey(r.sessions.premium + r.sessions.freemium, r.weight, 1);
    if (k < best) best = k;
  }
  return best;
}

/**
 * Which zone a new session goes to: its own unless it has no room for cls or the best other zone
 * is `spill` times less loaded; with no own zone (or an unknown one) the least loaded zone.
 * Pressures are admission keys (poolPressure); undefined when no zone may take the session.
 */
export function chooseZone(
  pressures: ReadonlyMap<string, number>,
  own: string | undefined,
  spill: number,
): string | undefined {
  let remote: string | undefined;
  let remoteKey = Number.POSITIVE_INFINITY;
  for (const [zone, key] of pressures) {
    if (zone === own) continue;
    if (key < remoteKey) {
      remote = zone;
      remoteKey = key;
    }
  }
  const ownKey = own === undefined ? undefined : pressures.get(own);
  if (ownKey === undefined) return remote;
  if (ownKey === Number.POSITIVE_INFINITY) return remote;
  return remote !== undefined && ownKey >= ZONE_SPILL_MIN_LOAD && ownKey >= spill * remoteKey ? remote : own;
}

/** The zone for a uniform draw u in [0, 1): zones in the order given, each its share of [0, 1). */
export function clientZone(shares: Readonly<Record<string, number>>, u: number): string {
  const zones = Object.keys(shares);
  let acc = 0;
  for (const z of zones) {
    acc += shares[z] as number;
    if (u < acc) return z;
  }
  return zones[zones.length - 1] as string;
}

/** A router per zone behind one Router; admit takes the session's zone. */
export class ZonedRouter implements Router {
  readonly strategy: StrategyName;
  private readonly inner = new Map<string, Router>();
  private readonly zoneOfReplica = new Map<string, string>();
  private readonly order: string[];
  private readonly spill: number;
  private readonly homeZone: string | undefined;
  /** What a zone's router is made with (its replicas aside): for a zone a replica added at run time opens. */
  private readonly zoneOptions: Omit<RouterOptions, 'replicas' | 'zones' | 'homeZone'>;
  private readonly make: (o: RouterOptions) => Router;

  constructor(
    options: RouterOptions,
    zones: Readonly<Record<string, string>>,
    make: (o: RouterOptions) => Router,
  ) {
    this.strategy = options.strategy;
    this.spill = options.zoneSpill ?? DEFAULT_ZONE_SPILL;
    this.homeZone = options.homeZone;
    const { zones: _z, homeZone: _h, replicas: _r, ...rest } = options;
    this.zoneOptions = rest;
    this.make = make;
    if (!(this.spill >= 1) || !Number.isFinite(this.spill))
      throw new PlbError('BAD_INPUT', `zoneSpill must be a finite number >= 1, got ${String(this.spill)}`);
    const byZone = new Map<string, Array<string | ReplicaSpec>>();
    this.order = [];
    for (const r of options.replicas) {
      const id = typeof r === 'string' ? r : r.id;
      const zone = zones[id];
      if (typeof zone !== 'string' || zone === '')
        throw new PlbError('BAD_INPUT', `zones: replica ${id} has no zone (give every replica one, or none)`);
      this.order.push(id);
      this.zoneOfReplica.set(id, zone);
      const list = byZone.get(zone) ?? [];
      list.push(r);
      byZone.set(zone, list);
    }
    for (const [zone, replicas] of byZone) this.inner.set(zone, make({ ...rest, replicas }));
  }

  /**
   * Router.addReplica: into its zone's router, or a new zone's (made with the replica, then
   * marked down without a word: it was never up). The zone is required, as at the start.
   */
  addReplica(spec: AddedReplica, nowMs: number): void {
    const { zone, ...replica } = spec;
    if (zone === undefined || zone === '')
      throw new PlbError(
        'BAD_INPUT',
        `zones: replica ${spec.id} has no zone (give every replica one, or none)`,
      );
    if (this.zoneOfReplica.has(spec.id))
      throw new PlbError('BAD_INPUT', `replica ${spec.id} is known already`);
    const inner = this.inner.get(zone);
    if (inner) inner.addReplica(replica, nowMs);
    else {
      const tell = this.zoneOptions.onRoleChange;
      let quiet = true;
      const made = this.make({
        ...this.zoneOptions,
        replicas: [replica],
        ...(tell ? { onRoleChange: (c: RoleChange) => void (quiet || tell(c)) } : {}),
      });
      made.markDown(spec.id, nowMs);
      if (!tell) made.drainChanges();
      quiet = false;
      this.inner.set(zone, made);
    }
    this.zoneOfReplica.set(spec.id, zone);
    this.order.push(spec.id);
  }

  /** The zone of a replica (undefined for an unknown id). */
  zoneOf(replica: string): string | undefined {
    return this.zoneOfReplica.get(replica);
  }

  admit(cls: ServiceClass, nowMs: number, zone = this.homeZone): Admission {
    const pressures = new Map<string, number>();
    for (const [z, r] of this.inner) pressures.set(z, poolPressure(r.snapshot(), cls));
    const own = zone !== undefined && this.inner.has(zone) ? zone : undefined;
    // No room anywhere: the own (or first) zone's router says so in its own words.
    const chosen =
      chooseZone(pressures, own, this.spill) ?? own ?? (this.inner.keys().next().value as string);
    return (this.inner.get(chosen) as Router).admit(cls, nowMs);
  }

  release(replica: string, cls: ServiceClass, nowMs: number): boolean {
    const r = this.owner(replica, false);
    return r ? r.release(replica, cls, nowMs) : false;
  }
  markDown(replica: string, nowMs: number): void {
    (this.owner(replica, true) as Router).markDown(replica, nowMs);
  }
  markUp(replica: string, nowMs: number): void {
    (this.owner(replica, true) as Router).markUp(replica, nowMs);
  }
  setWeight(replica: string, weight: number): void {
    (this.owner(replica, true) as Router).setWeight(replica, weight);
  }

  snapshot(): ReplicaSnapshot[] {
    const all = new Map<string, ReplicaSnapshot>();
    for (const r of this.inner.values()) for (const s of r.snapshot()) all.set(s.id, s);
    return this.order.map((id) => all.get(id) as ReplicaSnapshot);
  }

  drainChanges(): RoleChange[] {
    const out: RoleChange[] = [];
    for (const r of this.inner.values()) out.push(...r.drainChanges());
    // Stable: changes at one time keep their zone order.
    return out.sort((a, b) => a.nowMs - b.nowMs);
  }

  private owner(replica: string, required: boolean): Router | undefined {
    const zone = this.zoneOfReplica.get(replica);
    if (zone === undefined) {
      if (required) throw new PlbError('BAD_INPUT', `unknown replica '${replica}'`);
      return undefined;
    }
    return this.inner.get(zone);
  }
}
