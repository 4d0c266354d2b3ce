// The PLB decisions of DESIGN.md as small pure functions. The router applies them with indexed heaps;
// decidePlbAdmission is the plain specification the property tests hold the fast path to.
import type { BorrowDwell } from './borrow-dwell.js';
import { PlbError } from '../core/errors.js';
import type { BorrowingOptions, BorrowThresholds, PlbReadings, Role, RoleVector } from './types.js';
import type { ServiceClass } from '../core/service-class.js';
import { referenceTarget } from './role-vector.js';
import { admissionKey, replicaLoad, slowStartRamp } from './slow-start.js';

export const ROLES: readonly Role[] = ['premium', 'mixed', 'freemium'];

/** What the rules need to know about one replica. `index` is its position in the replica list. */
export interface PlbReplicaView {
  index: number;
  healthy: boolean;
  role: Role;
  borrowedBy?: ServiceClass | undefined;
  weight: number;
  upSinceMs?: number | undefined;
  sessions: { premium: number; freemium: number };
}

export function otherClass(cls: ServiceClass): ServiceClass {
  return cls === 'premium' ? 'freemium' : 'premium';
}

function totalSessions(v: { sessions: { premium: number; freemium: number } }): number {
  return v.sessions.premium + v.sessions.freemium;
}

/**
 * Canonicalization before repair, under the `canonicalize` reading.
 * 'borrowed': only borrowed replicas are in a transient state: one with no borrower sessions returns
 * to its role; one carrying both classes becomes mixed; one carrying only the borrower's class joins
 * that class. A non-borrowed replica keeps its role even when it still carries pinned sessions of a
 * class it no longer admits (repair moved it; only new sessions follow). It can undo a repair only
 * through borrowing in between: a replica repair made freemium, then borrowed by premium and carrying
 * both classes at the next event, becomes mixed, and repair then moves some replica again. With no
 * borrowing between two events it changes nothing, so repeated repairs stay put.
 * 'all': every healthy replica by the classes it carries: both -> mixed, only premium -> premium,
 * only freemium -> freemium, none -> its role. It can undo a repair by itself: pinned sessions
 * outlive the repair that moved their replica, so a replica repaired from mixed to premium that still
 * carries freemium sessions is put back to mixed at the next event, and repair moves a replica to
 * premium again (often another one). Roles can so flip back and forth at every event until the
 * sessions opened before a repair have drained.
 */
export function canonicalRole(
  v: Pick<PlbReplicaView, 'role' | 'borrowedBy' | 'sessions'>,
  mode: PlbReadings['canonicalize'] = 'borrowed',
): Role {
  if (mode === 'all') {
    const { premium, freemium } = v.sessions;
    if (premium > 0) return freemium > 0 ? 'mixed' : 'premium';
    return freemium > 0 ? 'freemium' : v.role;
  }
  const borrower = v.borrowedBy;
  if (borrower === undefined || v.sessions[borrower] === 0) return v.role;
  return v.sessions[otherClass(borrower)] > 0 ? 'mixed' : borrower;
}

/** Whether a class may be admitted to a replica: its own role, mixed, or a replica it borrowed. */
export function plbEligible(cls: ServiceClass, role: Role, borrowedBy: ServiceClass | undefined): boolean {
  return role === cls || role === 'mixed' || borrowedBy === cls;
}

export function countRoles(views: readonly PlbReplicaView[]): RoleVector {
  const counts: RoleVector = { premium: 0, mixed: 0, freemium: 0 };
  for (const v of views) if (v.healthy) counts[v.role] += 1;
  return counts;
}

/**
 * The donor for a role below target, under the `donors` reading.
 * 'above-target': a healthy replica of another role that is above its own target (so no role, and in
 * particular no floor, drops below target); mixed donors first.
 * 'mixed-first': for a premium or freemium deficit, any mixed replica first, even with mixed at its
 * target (mixed is then short and refilled by a role above target); otherwise as 'above-target'.
 * Among those eligible the least loaded (sessions / weight), then the lowest index.
 */
export function chooseRepairDonor(
  views: readonly PlbReplicaView[],
  deficit: Role,
  counts: RoleVector,
  target: RoleVector,
  donors: PlbReadings['donors'] = 'above-target',
): PlbReplicaView | undefined {
  const mixedAlways = donors === 'mixed-first' && deficit !== 'mixed';
  let best: PlbReplicaView | undefined;
  let bestRank = Number.POSITIVE_INFINITY;
  let bestLoad = Number.POSITIVE_INFINITY;
  for (const v of views) {
    if (!v.healthy || v.role === deficit) continue;
    const rank = v.role === 'mixed' ? 0 : 1;
    if (counts[v.role] <= target[v.role] && !(mixedAlways && rank === 0)) continue;
    const load = replicaLoad(totalSessions(v), v.weight);
    if (rank < bestRank || (rank === bestRank && load < bestLoad)) {
      best = v;
      bestRank = rank;
      bestLoad = load;
    }
  }
  return best;
}

export interface RoleMove {
  index: number;
  from: Role;
  to: Role;
}

/**
 * Repair-to-target: while a role is below target (premium first, then mixed, then freemium), move
 * the chosen donor into it. Returns the moves in order; `views` is not modified.
 * It ends: with Φ = 2 x (premium and freemium short) + mixed short, every move lowers Φ by at least
 * one (a mixed donor at target: -2 +1; any donor above target: -1 or -2), so there are at most
 * 2 x the replicas short: as many as are short with 'above-target', up to twice that with 'mixed-first'.
 */
export function repairToTarget(
  views: readonly PlbReplicaView[],
  target: RoleVector,
  donors: PlbReadings['donors'] = 'above-target',
): RoleMove[] {
  const work = views.map((v) => ({ ...v }));
  const counts = countRoles(work);
  const healthy = counts.premium + counts.mixed + counts.freemium;
  if (healthy !== target.premium + target.mixed + target.freemium) {
    throw new PlbError(
      'INTERNAL',
      `repair target sums to a different count than the ${healthy} healthy replicas`,
    );
  }
  const moves: RoleMove[] = [];
  for (;;) {
    const deficit = ROLES.find((r) => counts[r] < target[r]);
    if (deficit === undefined) return moves;
    const donor = chooseRepairDonor(work, deficit, counts, target, donors);
    if (donor === undefined) throw new PlbError('INTERNAL', `no repair donor for role ${deficit}`);
    if (moves.length >= 2 * healthy) throw new PlbError('INTERNAL', 'repair did not reach its target');
    moves.push({ index: donor.index, from: donor.role, to: deficit });
    counts[donor.role] -= 1;
    counts[deficit] += 1;
    donor.role = deficit;
  }
}

/**
 * The roles to repair toward with `survivors` of `replicas` healthy, under the `repair` and
 * `reference` readings; null with repair 'none' (the surviving roles are kept). `full` is
 * fullReference(replicas, reference, readings.reference, readings.floors).
 */
export function repairTarget(
  survivors: number,
  replicas: number,
  full: RoleVector,
  readings: Pick<PlbReadings, 'repair' | 'reference' | 'floors'>,
): RoleVector | null {
  if (readings.repair === 'none') return null;
  if (readings.repair === 'shared' && survivors < replicas) {
    return { premium: 0, mixed: survivors, freemium: 0 };
  }
  return referenceTarget(survivors, replicas, full, readings.reference, readings.floors);
}

export interface RebalanceStep extends RoleMove {
  reason: 'canonicalize' | 'repair';
}

/**
 * What a down or rejoin event does to the roles (Algorithm 1): canonicalize, then repair toward
 * `target` (repairTarget; null: nothing). A canonicalize step also ends the replica's borrowed state,
 * so there is one for every borrowed healthy replica even when its role stays. `views` is not modified.
 */
export function rebalanceSteps(
  views: readonly PlbReplicaView[],
  target: RoleVector | null,
  readings: Pick<PlbReadings, 'canonicalize' | 'donors'>,
): RebalanceStep[] {
  if (target === null) return [];
  const steps: RebalanceStep[] = [];
  const work = views.map((v) => {
    if (!v.healthy) return v;
    const role = canonicalRole(v, readings.canonicalize);
    if (role === v.role && v.borrowedBy === undefined) return v;
    steps.push({ index: v.index, from: v.role, to: role, reason: 'canonicalize' });
    return { ...v, role, borrowedBy: undefined };
  });
  for (const move of repairToTarget(work, target, readings.donors)) steps.push({ ...move, reason: 'repair' });
  return steps;
}

/**
 * Borrowing defaults. Premium, the protected class, borrows a freemium replica once its best own
 * replica is 1.5x as loaded, and keeps it until the borrowed replica is as loaded as its own ones.
 * Freemium borrows a premium replica only when it is 2x as loaded, and gives it back once the
 * borrowed replica reaches 0.625 of its own load, so premium sessions there stay below freemium's.
 * (Measured on the demo cascade, 25:75: with 4x freemium's ref p95 was 3.3x rr's; with 2x it was
 * at rr's level while premium kept a p95 below rr's in every phase.)
 */
export const DEFAULT_BORROWING: Readonly<Record<ServiceClass, Readonly<BorrowThresholds>>> = Object.freeze({
  premium: Object.freeze({ enabled: true, pressureRatio: 1.5, returnRatio: 1, minLoad: 4 }),
  freemium: Object.freeze({ enabled: true, pressureRatio: 2, returnRatio: 0.625, minLoad: 4 }),
});

export function resolveBorrowing(
  opt: BorrowingOptions | false | undefined,
): Record<ServiceClass, BorrowThresholds> {
  const off = (cls: ServiceClass): BorrowThresholds => ({ ...DEFAULT_BORROWING[cls], enabled: false });
  if (opt === false) return { premium: off('premium'), freemium: off('freemium') };
  const out = {
    premium: { ...DEFAULT_BORROWING.premium, ...opt?.premium },
    freemium: { ...DEFAULT_BORROWING.freemium, ...opt?.freemium },
  };
  for (const cls of ['premium', 'freemium'] as const) {
    const t = out[cls];
    const field = `borrowing.${cls}`;
    if (!(t.pressureRatio > 1) || !Number.isFinite(t.pressureRatio)) {
      throw new PlbError(
        'BAD_INPUT',
        `${field}.pressureRatio must be a finite number > 1, got ${t.pressureRatio}`,
      );
    }
    // returnRatio * pressureRatio > 1 keeps a band between borrowing and returning (no flapping in one step).
    if (!(t.returnRatio > 0) || !(t.returnRatio * t.pressureRatio > 1)) {
      throw new PlbError('BAD_INPUT', `${field}.returnRatio must be > 1/pressureRatio, got ${t.returnRatio}`);
    }
    if (!(t.minLoad >= 0) || !Number.isFinite(t.minLoad)) {
      throw new PlbError('BAD_INPUT', `${field}.minLoad must be a finite number >= 0, got ${t.minLoad}`);
    }
  }
  return out;
}

/** Borrow a lender replica when the class's best own admission key is high and well above the lender's. */
export function shouldBorrow(pressure: number, lenderKey: number, t: BorrowThresholds): boolean {
  return t.enabled && pressure >= t.minLoad && pressure >= t.pressureRatio * lenderKey;
}

/** Return a borrowed replica when it no longer relieves the borrower, or the pressure has gone. */
export function shouldReturn(pressure: number, borrowedKey: number, t: BorrowThresholds): boolean {
  return !t.enabled || pressure < t.minLoad / 2 || borrowedKey >= t.returnRatio * pressure;
}

export interface PlbAdmissionDecision {
  /** index of the replica the session goes to, -1 when none may take the class */
  replica: number;
  /** reclaim=premium: premium replicas taken back from freemium before choosing, in index order */
  reclaimed: number[];
  /** replicas returned by the class before choosing, in index order */
  returned: number[];
  /** replica borrowed by the class before choosing, or -1 */
  borrowed: number;
}

/**
 * The whole admission decision for one session of `cls`, by plain scans (the specification):
 * 1. pressure = least admission key over the class's own replicas (role = cls or mixed);
 * 2. reclaim=premium: when premium's pressure is at or above its minLoad, every premium replica
 *    freemium borrowed is taken back, and freemium borrows nothing in this admission;
 * 3. replicas the class borrowed go back when shouldReturn;
 * 4. the least-loaded not-borrowed replica of the other class's role is borrowed when shouldBorrow
 *    (lend=normal: only while every replica is healthy; a class with no own replica always may);
 * 5. the session goes to the eligible replica with the least admission key (ties: lowest index).
 */
export function decidePlbAdmission(
  views: readonly PlbReplicaView[],
  cls: ServiceClass,
  nowMs: number,
  slowStartMs: number,
  borrowing: Record<ServiceClass, BorrowThresholds>,
  /** hold=dwell: the class's borrow and return conditions must have held this long (updated here). */
  dwell?: BorrowDwell,
  rules: Pick<PlbReadings, 'lend' | 'reclaim'> = { lend: 'always', reclaim: 'none' },
): PlbAdmissionDecision {
  const key = (v: PlbReplicaView): number =>
    admissionKey(totalSessions(v), v.weight, slowStartRamp(nowMs, v.upSinceMs, slowStartMs));
  const least = (pred: (v: PlbReplicaView) => boolean): PlbReplicaView | undefined => {
    let best: PlbReplicaView | undefined;
    let bestKey = Number.POSITIVE_INFINITY;
    for (const v of views) {
      if (!v.healthy || !pred(v)) continue;
      const k = key(v);
      if (k < bestKey) {
        best = v;
        bestKey = k;
      }
    }
    return best;
  };
  const t = borrowing[cls];
  const own = least((v) => v.role === cls || v.role === 'mixed');
  const pressure = own === undefined ? Number.POSITIVE_INFINITY : key(own);
  const borrowedBy = new Map<number, ServiceClass | undefined>();
  const premiumOwn = cls === 'premium' ? own : least((v) => v.role === 'premium' || v.role === 'mixed');
  const reclaiming =
    rules.reclaim === 'premium' &&
    (premiumOwn === undefined ? Number.POSITIVE_INFINITY : key(premiumOwn)) >= borrowing.premium.minLoad;
  const reclaimed = reclaiming
    ? views
        .filter((v) => v.healthy && v.role === 'premium' && v.borrowedBy === 'freemium')
        .map((v) => v.index)
    : [];
  for (const i of reclaimed) borrowedBy.set(i, undefined);
  const returned: number[] = [];
  const returnable = views.filter(
    (v) => v.healthy && v.borrowedBy === cls && !borrowedBy.has(v.index) && shouldReturn(pressure, key(v), t),
  );
  if (dwell === undefined || dwell.pass('return', cls, returnable.length > 0, nowMs)) {
    for (const v of returnable) {
      returned.push(v.index);
      borrowedBy.set(v.index, undefined);
    }
  }
  const lenderRole = otherClass(cls);
  const stateOf = (v: PlbReplicaView): ServiceClass | undefined =>
    borrowedBy.has(v.index) ? borrowedBy.get(v.index) : v.borrowedBy;
  // A class with no own replica may always borrow: lend and reclaim never refuse it outright.
  const mayLend =
    own === undefined ||
    ((rules.lend === 'always' || views.every((v) => v.healthy)) && !(reclaiming && cls === 'freemium'));
  const lender = least((v) => mayLend && v.role === lenderRole && stateOf(v) === undefined);
  let borrowed = -1;
  const want = lender !== undefined && shouldBorrow(pressure, key(lender), t);
  // With no own replica (infinite pressure) nothing else could take the session: no dwell. With no
  // lender the condition is false: the dwell starts over, as at any admission that sees it false.
  const act = dwell === undefined || own === undefined ? want : dwell.pass('borrow', cls, want, nowMs);
  if (act && lender !== undefined) {
    borrowed = lender.index;
    borrowedBy.set(lender.index, cls);
  }
  const chosen = least((v) => plbEligible(cls, v.role, stateOf(v)));
  return { replica: chosen === undefined ? -1 : chosen.index, reclaimed, returned, borrowed };
}
