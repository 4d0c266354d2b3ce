// plb: the priority-aware balancer of the paper (roles, repair to target, class-aware least-loaded
// admission, borrowing under pressure, slow start); the rules themselves are in plb-rules.ts.
import { BorrowDwell } from './borrow-dwell.js';
import { GroupedLeastLoaded, NO_GROUP } from './least-loaded.js';
import { rebalanceSteps, repairTarget, resolveBorrowing, shouldBorrow, shouldReturn } from './plb-rules.js';
import { resolveReadings } from './readings.js';
import { DEFAULT_REFERENCE, fullReference } from './role-vector.js';
import { admissionKey, slowStartRamp } from './slow-start.js';
import { BaseRouter, type ReplicaState } from './base-router.js';
import type { Admission, BorrowThresholds, PlbReadings, Role, RoleVector, RouterOptions } from './types.js';
import type { ServiceClass } from '../core/service-class.js';

// Module-local handles on the rules used per admission (cheaper than a cross-module binding per call).
const keyFn = admissionKey;
const rampFn = slowStartRamp;
const returnFn = shouldReturn;
const borrowFn = shouldBorrow;

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
 * least-loaded admission, borrowing. Most readings change only what events do to the roles; lend
 * and reclaim say when borrowing may happen and whether premium takes a lent replica back.
 */
export class PlbRouter extends BaseRouter {
  private readonly pool: GroupedLeastLoaded;
  /** The reference scaled to K; a replica added at run time scales it anew. */
  private full: RoleVector;
  private readonly reference: RoleVector;
  private readonly readings: PlbReadings;
  private readonly premiumT: BorrowThresholds;
  private readonly freemiumT: BorrowThresholds;
  /** hold=dwell: when the borrow and return conditions started holding. */
  private readonly dwell: BorrowDwell | undefined;

  constructor(
    options: RouterOptions,
    private readonly slowStartMs: number,
  ) {
    super('plb', options);
    this.readings = resolveReadings(options.readings);
    this.reference = options.reference ?? DEFAULT_REFERENCE;
    this.full = fullReference(
      this.replicas.length,
      this.reference,
      this.readings.reference,
      this.readings.floors,
    );
    const borrowing = resolveBorrowing(options.borrowing);
    this.premiumT = borrowing.premium;
    this.freemiumT = borrowing.freemium;
    this.dwell = this.readings.hold === 'dwell' ? new BorrowDwell() : undefined;
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
    // reclaim=premium: premium under pressure takes back what freemium borrowed, and lends no more.
    const reclaiming = this.readings.reclaim === 'premium' && this.premiumPressed(premium, pressure, nowMs);
    if (reclaiming && this.reclaim(nowMs)) changed = true;
    // Return borrowed replicas, most loaded first: shouldReturn only grows with the key, so the
    // warm ones stop at the first that stays; the few still in slow start are checked one by one.
    const borrowedGroup = premium ? G_FB : G_PB;
    const dwell = this.dwell;
    if (
      dwell === undefined ||
      dwell.pass('return', cls, this.returnable(borrowedGroup, pressure, t, nowMs), nowMs)
    ) {
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
    }
    // A class with no own replica may always borrow: lend and reclaim never refuse it outright.
    const mayLend =
      own < 0 ||
      ((this.readings.lend === 'always' || this.healthyCount === this.replicas.length) &&
        !(reclaiming && !premium));
    // Below minLoad shouldBorrow is false whatever the lender's key: skip looking for one.
    const lender =
      mayLend && t.enabled && pressure >= t.minLoad ? pool.best(1 << (premium ? G_F : G_P), nowMs) : -1;
    const want = lender >= 0 && borrowFn(pressure, this.keyNow(lender, nowMs), t);
    // With no own replica to wait on (infinite pressure), the session can only go to a borrowed one.
    if (dwell === undefined || own < 0 ? want : dwell.pass('borrow', cls, want, nowMs)) {
      const r = this.replicas[lender] as ReplicaState;
      this.setState(r, r.role, cls, nowMs);
      this.record(r, r.role, r.role, 'borrow', nowMs);
      changed = true;
    }
    if (changed) return pool.best(premium ? ELIGIBLE_PREMIUM : ELIGIBLE_FREEMIUM, nowMs);
    // Nothing moved: eligible = own replicas + those the class borrowed, so one more heap top will do.
    const b = pool.best(1 << borrowedGroup, nowMs);
    if (b < 0) return own;
    if (own < 0) return b;
    const kb = this.keyNow(b, nowMs);
    return kb < pressure || (kb === pressure && b < own) ? b : own;
  }

  /** Whether any replica the class borrowed (in `group`) would go back now. */
  private returnable(group: number, pressure: number, t: BorrowThresholds, nowMs: number): boolean {
    const worst = this.pool.worstWarm(group);
    if (worst >= 0 && returnFn(pressure, this.pool.warmKeyOf(worst), t)) return true;
    if (!this.pool.hasRamping()) return false;
    for (const i of this.pool.rampingMembers(group))
      if (returnFn(pressure, this.keyNow(i, nowMs), t)) return true;
    return false;
  }

  private giveBack(i: number, nowMs: number, reason: 'return' | 'reclaim' = 'return'): void {
    const r = this.replicas[i] as ReplicaState;
    this.setState(r, r.role, undefined, nowMs);
    this.record(r, r.role, r.role, reason, nowMs);
  }

  /** Whether premium's best own replica is at or above its borrowing minLoad (reclaim=premium). */
  private premiumPressed(premium: boolean, pressure: number, nowMs: number): boolean {
    if (!premium) {
      const own = this.pool.best(OWN_PREMIUM, nowMs);
      pressure = own < 0 ? Number.POSITIVE_INFINITY : this.keyNow(own, nowMs);
    }
    return pressure >= this.premiumT.minLoad;
  }

  /** Ends every borrow of a premium replica by freemium; whether there was one. */
  private reclaim(nowMs: number): boolean {
    const pool = this.pool;
    let any = false;
    for (let i = pool.worstWarm(G_PB); i >= 0; i = pool.worstWarm(G_PB)) {
      this.giveBack(i, nowMs, 'reclaim');
      any = true;
    }
    if (pool.hasRamping()) {
      for (const i of pool.rampingMembers(G_PB)) {
        this.giveBack(i, nowMs, 'reclaim');
        any = true;
      }
    }
    return any;
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

  /**
   * A new replica is a rejoin that has not happened yet: outside the survivor set (no group, no
   * event, roles untouched) until markUp brings it in as shared capacity and repair runs toward the
   * target of the larger K. The full allocation is the reference scaled to the new K, as it would
   * be had the proxy started with it.
   */
  protected onAdd(r: ReplicaState): void {
    this.pool.grow(this.replicas.length);
    r.role = 'mixed';
    this.full = fullReference(
      this.replicas.length,
      this.reference,
      this.readings.reference,
      this.readings.floors,
    );
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
