// A second specification of the PLB rules, written from their documentation (the paper's repair
// step, DESIGN.md's "PLB: what the paper leaves open", the readings in readings.ts, BorrowThresholds
// and BorrowDwell's contract), not from the router's code: it calls none of the router's functions,
// so a rule misread in both places has to be misread twice, differently, to go unnoticed.
// (a) the target role vector a repair goes to (the reference and floors readings);
// (b) what a down or rejoin does to the roles: canonicalization, then repair with its donor order;
// (c) one admission: reclaim, pressure, returns, borrowing (thresholds, lend, the dwell), the choice.
import type { ServiceClass } from '../../src/core/service-class.js';
import type { BorrowThresholds, PlbReadings, Role, RoleVector } from '../../src/router/types.js';

/** One replica as the rules see it; its position in the list is its index. */
export interface SpecReplica {
  healthy: boolean;
  role: Role;
  borrowedBy?: ServiceClass | undefined;
  weight: number;
  upSinceMs?: number | undefined;
  sessions: { premium: number; freemium: number };
}

export interface SpecStep {
  index: number;
  from: Role;
  to: Role;
  reason: 'canonicalize' | 'repair';
}

const ORDER: readonly Role[] = ['premium', 'mixed', 'freemium'];

const other = (cls: ServiceClass): ServiceClass => (cls === 'premium' ? 'freemium' : 'premium');

const sum = (v: RoleVector): number => v.premium + v.mixed + v.freemium;

/**
 * The target for `n` healthy replicas scaled from the split `from` (DESIGN.md): 0 -> 0:0:0,
 * 1 -> 0:1:0, 2 -> 1:0:1, 3 -> 2:0:1; from 4 on premium and freemium are their nearest-integer share
 * (halves up), at least 1 each, and mixed the rest. floors=mixed: mixed is at least 1 too;
 * floors=classes: mixed may be 0. When the rest is too small, freemium gives first while above 1,
 * then premium.
 */
function scaled(n: number, from: RoleVector, floors: PlbReadings['floors']): RoleVector {
  const fixed: RoleVector[] = [
    { premium: 0, mixed: 0, freemium: 0 },
    { premium: 0, mixed: 1, freemium: 0 },
    { premium: 1, mixed: 0, freemium: 1 },
    { premium: 2, mixed: 0, freemium: 1 },
  ];
  if (n < fixed.length) return { ...fixed[n]! };
  const share = (part: number) => Math.max(1, Math.round((n * part) / sum(from)));
  const out = { premium: share(from.premium), mixed: 0, freemium: share(from.freemium) };
  const least = floors === 'mixed' ? 1 : 0;
  while (n - out.premium - out.freemium < least) {
    if (out.freemium > 1) out.freemium -= 1;
    else out.premium -= 1;
  }
  out.mixed = n - out.premium - out.freemium;
  return out;
}

/** The split with all `replicas` healthy: reference=literal takes a reference summing to K as given. */
export function specFull(
  replicas: number,
  reference: RoleVector,
  readings: Pick<PlbReadings, 'reference' | 'floors'>,
): RoleVector {
  if (readings.reference === 'literal' && sum(reference) === replicas) return { ...reference };
  return scaled(replicas, reference, readings.floors);
}

/**
 * The roles a repair goes to with `survivors` of `replicas` healthy: the full split at K+ = K under
 * reference=literal, otherwise the full split scaled to K+; repair=shared: every survivor mixed while
 * one replica is down; repair=none: null (no repair).
 */
export function specTarget(
  survivors: number,
  replicas: number,
  reference: RoleVector,
  readings: Pick<PlbReadings, 'reference' | 'floors' | 'repair'>,
): RoleVector | null {
  if (readings.repair === 'none') return null;
  if (readings.repair === 'shared' && survivors < replicas)
    return { premium: 0, mixed: survivors, freemium: 0 };
  const full = specFull(replicas, reference, readings);
  if (readings.reference === 'literal' && survivors === replicas) return full;
  return scaled(survivors, full, readings.floors);
}

/**
 * The role a healthy replica takes before repair. 'all' (the paper): both classes -> mixed, only
 * premium -> premium, only freemium -> freemium, no session -> the role it has. 'borrowed' (plb):
 * only a borrowed replica moves: no borrower session -> its own role; borrower sessions and the
 * other class's -> mixed; borrower sessions only -> the borrower's role.
 */
function canonical(r: SpecReplica, mode: PlbReadings['canonicalize']): Role {
  const p = r.sessions.premium > 0;
  const f = r.sessions.freemium > 0;
  if (mode === 'all') return p && f ? 'mixed' : p ? 'premium' : f ? 'freemium' : r.role;
  if (r.borrowedBy === undefined) return r.role;
  const borrowerHas = r.borrowedBy === 'premium' ? p : f;
  const otherHas = r.borrowedBy === 'premium' ? f : p;
  if (!borrowerHas) return r.role;
  return otherHas ? 'mixed' : r.borrowedBy;
}

/** a is less loaded than b (sessions per unit of weight), compared without dividing. */
function lighter(a: SpecReplica, b: SpecReplica): number {
  const sa = a.sessions.premium + a.sessions.freemium;
  const sb = b.sessions.premium + b.sessions.freemium;
  return sa * b.weight - sb * a.weight;
}

/**
 * Repair toward `target` (the healthy replicas' roles sum to it): the first role below target, in
 * the order premium, mixed, freemium, takes a donor. A donor is a healthy replica of another role
 * whose role stays at or above its target after giving (so a floor, which a target never goes
 * under, is never broken), Mixed ones first; under donors=mixed-first a Mixed replica also donates
 * to premium or freemium when Mixed is only at target (Mixed is refilled after). Among donors of the
 * same rank the least loaded, then the lowest index. `replicas` is changed in place.
 */
function repair(replicas: SpecReplica[], target: RoleVector, donors: PlbReadings['donors']): SpecStep[] {
  const steps: SpecStep[] = [];
  const count = (role: Role) => replicas.filter((r) => r.healthy && r.role === role).length;
  for (;;) {
    const short = ORDER.find((role) => count(role) < target[role]);
    if (short === undefined) return steps;
    const candidates = replicas
      .map((r, index) => ({ r, index }))
      .filter(({ r }) => {
        if (!r.healthy || r.role === short) return false;
        if (count(r.role) > target[r.role]) return true;
        return donors === 'mixed-first' && short !== 'mixed' && r.role === 'mixed';
      })
      .sort(
        (a, b) =>
          Number(a.r.role !== 'mixed') - Number(b.r.role !== 'mixed') ||
          lighter(a.r, b.r) ||
          a.index - b.index,
      );
    const pick = candidates[0];
    if (pick === undefined) throw new Error(`spec: no donor for ${short}`);
    if (steps.length > 2 * replicas.length) throw new Error('spec: repair does not end');
    steps.push({ index: pick.index, from: pick.r.role, to: short, reason: 'repair' });
    pick.r.role = short;
  }
}

/**
 * What replica `index` going down (up = false) or rejoining (up = true) does to the roles: the
 * replica leaves the pool (or rejoins as Mixed, its old role without repair), every borrowed state
 * ends, then canonicalization and repair run toward `target` (null: repair=none, nothing runs and
 * borrowing goes on). The steps in order: canonicalization, by index (one for every borrowed healthy
 * replica, even when its role stays), then repair. `replicas` is not changed.
 */
export function specEventSteps(
  replicas: readonly SpecReplica[],
  index: number,
  up: boolean,
  target: RoleVector | null,
  readings: Pick<PlbReadings, 'canonicalize' | 'donors'>,
): SpecStep[] {
  const work = replicas.map((r) => ({ ...r, sessions: { ...r.sessions } }));
  const moved = work[index]!;
  moved.healthy = up;
  moved.borrowedBy = undefined;
  if (target === null) return [];
  if (up) moved.role = 'mixed';
  const steps: SpecStep[] = [];
  work.forEach((r, i) => {
    if (!r.healthy) return;
    const role = canonical(r, readings.canonicalize);
    if (role !== r.role || r.borrowedBy !== undefined)
      steps.push({ index: i, from: r.role, to: role, reason: 'canonicalize' });
    r.role = role;
    r.borrowedBy = undefined;
  });
  return [...steps, ...repair(work, target, readings.donors)];
}

/**
 * hold=dwell (BorrowDwell's contract): a condition, seen only at the class's admissions, lets the
 * router act once it has been seen true at every admission for `dwellMs`; one admission that sees it
 * false starts it over, and so does acting.
 */
export class SpecDwell {
  private readonly firstSeen = new Map<string, number>();

  constructor(private readonly dwellMs: number) {}

  ready(what: 'borrow' | 'return', cls: ServiceClass, holds: boolean, nowMs: number): boolean {
    const name = `${what}/${cls}`;
    if (!holds) {
      this.firstSeen.delete(name);
      return false;
    }
    const since = this.firstSeen.get(name) ?? nowMs;
    if (nowMs - since < this.dwellMs) {
      this.firstSeen.set(name, since);
      return false;
    }
    this.firstSeen.delete(name);
    return true;
  }
}

/**
 * The slow-start ramp: 1 for a replica there from the start or with slow start off, otherwise linear
 * from its rejoin to 1 after slowStartMs, never under 0.01 (the smallest ramp).
 */
function ramp(r: SpecReplica, nowMs: number, slowStartMs: number): number {
  if (r.upSinceMs === undefined || slowStartMs <= 0) return 1;
  const elapsed = nowMs - r.upSinceMs;
  return elapsed >= slowStartMs ? 1 : Math.max(0.01, elapsed / slowStartMs);
}

/** The admission key: (sessions + 1) / (weight x ramp); the new session is counted. */
function key(r: SpecReplica, nowMs: number, slowStartMs: number): number {
  return (r.sessions.premium + r.sessions.freemium + 1) / (r.weight * ramp(r, nowMs, slowStartMs));
}

export interface SpecAdmission {
  /** the replica the session goes to, -1 when none may take it */
  replica: number;
  /** reclaim=premium: the premium replicas taken back from freemium, ascending */
  reclaimed: number[];
  /** the replicas the class gave back, ascending */
  returned: number[];
  /** the replica the class borrowed, -1 when none */
  borrowed: number;
}

/**
 * One admission of `cls` with the thresholds `borrowing` (BorrowThresholds per class):
 * - pressure of a class: the key of its least-keyed own healthy replica (role cls or mixed, lent or
 *   not); none: infinite (nothing but a borrowed replica could take the session);
 * - reclaim=premium, at any admission: while premium's pressure >= premium's minLoad, every premium
 *   replica freemium borrowed is taken back first, and freemium may borrow nothing;
 * - return each replica the class borrowed whose key >= returnRatio x pressure, or all of them when
 *   pressure < minLoad / 2 (a class with borrowing off holds none);
 * - borrow the least-keyed healthy replica of the other class's role that nobody borrows (a replica
 *   just given back counts) when borrowing is on, pressure >= minLoad and pressure >= pressureRatio x
 *   its key; lend=normal: only while every replica is healthy. A class with no own replica may
 *   borrow whatever lend and reclaim say;
 * - with `dwell` (hold=dwell) a return or a borrow needs its condition ("some borrowed replica would
 *   go back", "the class may borrow and a lender qualifies") to have held for the dwell; the borrow
 *   needs none when the class has no own replica; reclaiming needs none;
 * - the session goes to the least-keyed replica the class may use (its role, mixed, or borrowed by
 *   it), the lowest index on equal keys.
 */
export function specAdmit(
  replicas: readonly SpecReplica[],
  cls: ServiceClass,
  nowMs: number,
  slowStartMs: number,
  borrowing: Record<ServiceClass, BorrowThresholds>,
  rules: Pick<PlbReadings, 'lend' | 'reclaim'>,
  dwell?: SpecDwell,
): SpecAdmission {
  const t = borrowing[cls];
  const state = replicas.map((r) => ({ ...r }));
  const k = (i: number) => key(state[i]!, nowMs, slowStartMs);
  const best = (ok: (r: SpecReplica) => boolean): number => {
    let out = -1;
    state.forEach((r, i) => {
      if (r.healthy && ok(r) && (out < 0 || k(i) < k(out))) out = i;
    });
    return out;
  };
  const pressureOf = (c: ServiceClass): number => {
    const i = best((r) => r.role === c || r.role === 'mixed');
    return i < 0 ? Infinity : k(i);
  };
  const lentBy = (c: ServiceClass) =>
    state.map((_, i) => i).filter((i) => state[i]!.healthy && state[i]!.borrowedBy === c);
  const reclaiming = rules.reclaim === 'premium' && pressureOf('premium') >= borrowing.premium.minLoad;
  const reclaimed = reclaiming ? lentBy('freemium').filter((i) => state[i]!.role === 'premium') : [];
  for (const i of reclaimed) state[i]!.borrowedBy = undefined;
  const own = best((r) => r.role === cls || r.role === 'mixed');
  const pressure = pressureOf(cls);
  const goesBack = (i: number) => !t.enabled || pressure < t.minLoad / 2 || k(i) >= t.returnRatio * pressure;
  const back = lentBy(cls).filter(goesBack);
  const returned = dwell === undefined || dwell.ready('return', cls, back.length > 0, nowMs) ? back : [];
  for (const i of returned) state[i]!.borrowedBy = undefined;
  const allHealthy = state.every((r) => r.healthy);
  const mayBorrow =
    own < 0 || ((rules.lend === 'always' || allHealthy) && !(reclaiming && cls === 'freemium'));
  const lender = mayBorrow ? best((r) => r.role === other(cls) && r.borrowedBy === undefined) : -1;
  const qualifies =
    lender >= 0 && t.enabled && pressure >= t.minLoad && pressure >= t.pressureRatio * k(lender);
  const act = dwell === undefined || own < 0 ? qualifies : dwell.ready('borrow', cls, qualifies, nowMs);
  const borrowed = act && lender >= 0 ? lender : -1;
  if (borrowed >= 0) state[borrowed]!.borrowedBy = cls;
  const replica = best((r) => r.role === cls || r.role === 'mixed' || r.borrowedBy === cls);
  return { replica, reclaimed, returned, borrowed };
}
