import { PlbError } from '../core/errors.js';
import type { Partition, PlbReadings, RoleVector } from './types.js';

/** The paper's reference split for five replicas: premium 2, mixed 1, freemium 2. */
export const DEFAULT_REFERENCE: Readonly<RoleVector> = Object.freeze({ premium: 2, mixed: 1, freemium: 2 });
/** The paper's static baseline for five replicas: 3RR+2RR. */
export const DEFAULT_PARTITION: Readonly<Partition> = Object.freeze({ premium: 3, freemium: 2 });

export function roleVectorTotal(v: RoleVector): number {
  return v.premium + v.mixed + v.freemium;
}

/** round(a * b / c) for non-negative integers, half up, without floating-point drift. */
function roundRatio(a: number, b: number, c: number): number {
  return Math.floor((2 * a * b + c) / (2 * c));
}

/**
 * The target premium/mixed/freemium vector for `survivors` healthy replicas (DESIGN.md):
 * 0 -> (0,0,0), 1 -> (0,1,0), 2 -> (1,0,1), 3 -> (2,0,1); from 4 on, nearest-integer proportional
 * scaling of the reference, floors premium>=1 and freemium>=1, and mixed the residual. The `floors`
 * reading says whether mixed has a floor too: 'mixed' takes from freemium first (then premium) while
 * they stay above 1 until mixed>=1 (2:1:2 at K+=4 -> 2:1:1); 'classes' only keeps premium+freemium
 * within the budget the same way, so mixed may be 0 (2:1:2 at K+=4 -> 2:0:2).
 */
export function targetRoleVector(
  survivors: number,
  reference: RoleVector,
  floors: PlbReadings['floors'] = 'mixed',
): RoleVector {
  assertCount(survivors, 'survivors');
  assertReference(reference);
  if (survivors === 0) return { premium: 0, mixed: 0, freemium: 0 };
  if (survivors === 1) return { premium: 0, mixed: 1, freemium: 0 };
  if (survivors === 2) return { premium: 1, mixed: 0, freemium: 1 };
  if (survivors === 3) return { premium: 2, mixed: 0, freemium: 1 };
  const total = roleVectorTotal(reference);
  let premium = Math.max(1, roundRatio(survivors, reference.premium, total));
  let freemium = Math.max(1, roundRatio(survivors, reference.freemium, total));
  // Mixed (with its floor, at least one): freemium gives first, premium only at freemium's floor.
  const mixedFloor = floors === 'mixed' ? 1 : 0;
  while (survivors - premium - freemium < mixedFloor) {
    if (freemium > 1) freemium -= 1;
    else premium -= 1; // survivors >= 4 guarantees premium > 1 here
  }
  return { premium, mixed: survivors - premium - freemium, freemium };
}

/**
 * The full-capacity allocation for `replicas` replicas. 'literal' (the default): a reference that
 * sums to K is the allocation as given, even when it breaks a floor (3:0:2 stays 3:0:2), since the
 * paper's reference "is not modified by individual faults". Otherwise, and always with 'floored', the
 * reference is scaled to K with the rule used after a fault, so 2:1:2 becomes 4:2:4 at K=10 and
 * 3:0:2 becomes 3:1:1 at K=5.
 */
export function fullReference(
  replicas: number,
  reference: RoleVector = DEFAULT_REFERENCE,
  reading: PlbReadings['reference'] = 'literal',
  floors: PlbReadings['floors'] = 'mixed',
): RoleVector {
  assertCount(replicas, 'replicas');
  assertReference(reference);
  if (reading === 'literal' && roleVectorTotal(reference) === replicas) return { ...reference };
  return targetRoleVector(replicas, reference, floors);
}

/**
 * The target for `survivors` of `replicas` against the full allocation `full`: the full allocation
 * itself at K+=K with the literal reading, targetRoleVector(K+, full) otherwise.
 */
export function referenceTarget(
  survivors: number,
  replicas: number,
  full: RoleVector,
  reading: PlbReadings['reference'] = 'literal',
  floors: PlbReadings['floors'] = 'mixed',
): RoleVector {
  if (reading === 'literal' && survivors === replicas) return { ...full };
  return targetRoleVector(survivors, full, floors);
}

/**
 * The static partition for `replicas` replicas: used as given when it sums to K, otherwise scaled
 * (nearest integer) with at least one replica per class when K >= 2. K=1 is all premium.
 */
export function partitionFor(replicas: number, partition: Partition = DEFAULT_PARTITION): Partition {
  assertCount(replicas, 'replicas');
  const total = partition.premium + partition.freemium;
  if (!(total > 0) || partition.premium < 0 || partition.freemium < 0) {
    throw new PlbError('BAD_INPUT', '--partition: parts must be non-negative with a positive sum');
  }
  if (total === replicas) return { premium: partition.premium, freemium: partition.freemium };
  let premium = roundRatio(replicas, partition.premium, total);
  if (replicas >= 2 && partition.premium > 0 && partition.freemium > 0) {
    premium = Math.min(replicas - 1, Math.max(1, premium));
  }
  return { premium, freemium: replicas - premium };
}

export function formatRoleVector(v: RoleVector): string {
  return `${v.premium}:${v.mixed}:${v.freemium}`;
}

function assertCount(n: number, field: string): void {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new PlbError('BAD_INPUT', `${field} must be a non-negative integer, got ${String(n)}`);
  }
}

function assertReference(ref: RoleVector): void {
  const parts = [ref.premium, ref.mixed, ref.freemium];
  if (parts.some((p) => !Number.isSafeInteger(p) || p < 0) || roleVectorTotal(ref) < 1) {
    throw new PlbError(
      'BAD_INPUT',
      `reference must be three non-negative integers with a positive sum, got ${formatRoleVector(ref)}`,
    );
  }
}

export interface TargetRow extends RoleVector {
  survivors: number;
}

/** The target vector for every K+ from K down to 0, against the reference scaled to K. */
export function targetRoleTable(
  replicas: number,
  reference: RoleVector = DEFAULT_REFERENCE,
  reading: PlbReadings['reference'] = 'literal',
  floors: PlbReadings['floors'] = 'mixed',
): TargetRow[] {
  const full = fullReference(replicas, reference, reading, floors);
  const rows: TargetRow[] = [];
  for (let k = replicas; k >= 0; k--)
    rows.push({ survivors: k, ...referenceTarget(k, replicas, full, reading, floors) });
  return rows;
}
