// The gate with intervals: a cell fails only when the whole 95 % interval of its change against
// the baseline lies beyond the tolerance on the worse side (and counts as better only when it
// lies beyond it on the better side). The interval of a ratio of two independent estimates is
// taken on the log scale, from each side's own interval: se = (ln hi - ln lo) / (2 · 1.96).
import type { IntervalMetric } from '../../metrics/intervals/intervals.js';
import type { ServiceClass } from '../../core/service-class.js';
import type { GroupEvidence, Estimate } from '../../run-format/evidence.js';

const Z = 1.959964;

/** Which interval a gated class metric has (none for counts, retention, inflation). */
export const GATED_INTERVAL: Partial<Record<string, IntervalMetric>> = {
  p50: 'p50',
  p95: 'p95',
  p99: 'p99',
  goodput: 'goodput',
  lifetimeP50Ms: 'lifetime',
};

export function estimateOf(
  e: GroupEvidence | undefined,
  phase: string,
  cls: string,
  metric: IntervalMetric,
): Estimate | null {
  const cell = e?.phases.find((p) => p.name === phase)?.classes[cls as ServiceClass];
  return cell?.metrics[metric] ?? null;
}

/**
 * 95 % interval of (current - base) / base from the two estimates; a base without an interval
 * counts as exact. Null when the current side has no interval or a value is not positive.
 */
export function ratioInterval(cur: Estimate, base: Estimate): { lo: number; hi: number } | null {
  const { value: c, lo: cl, hi: ch } = cur;
  const b = base.value;
  if (c === null || cl === null || ch === null || b === null || c <= 0 || b <= 0 || cl <= 0) return null;
  const seC = (Math.log(ch) - Math.log(cl)) / (2 * Z);
  const seB =
    base.lo !== null && base.hi !== null && base.lo > 0
      ? (Math.log(base.hi) - Math.log(base.lo)) / (2 * Z)
      : 0;
  const se = Math.sqrt(seC * seC + seB * seB);
  const center = Math.log(c / b);
  return { lo: Math.exp(center - Z * se) - 1, hi: Math.exp(center + Z * se) - 1 };
}

/** The gate's verdict of an interval of a relative change against a tolerance. */
export function intervalVerdict(
  iv: { lo: number; hi: number },
  better: 'higher' | 'lower',
  tolerance: number,
): 'worse' | 'better' | 'pass' {
  const eps = 1e-9;
  // Worse-side distance of the interval's best end, and better-side distance of its worst end.
  const [bestWorse, worstBetter] = better === 'lower' ? [iv.lo, -iv.hi] : [-iv.hi, iv.lo];
  if (bestWorse > tolerance + eps) return 'worse';
  if (worstBetter > tolerance + eps) return 'better';
  return 'pass';
}
