// What an interval of a change says: better, worse, or no difference detected (and how large a
// change this data could have detected). One sign everywhere: Δ = (value - reference) / reference.
import { HIGHER_IS_BETTER, type IntervalMetric } from '../../metrics/intervals/intervals.js';
import type { Change, Verdict } from '../../run-format/evidence.js';

/** z of a two-sided 95 % interval, and of 80 % power: the smallest detectable change is (z + zβ)·se. */
const Z95 = 1.959964;
const Z80 = 0.841621;

/** Verdict of an interval of Δ for a metric (lower latency is better, more goodput is better). */
export function verdictOf(metric: IntervalMetric, lo: number, hi: number): Verdict {
  if (lo <= 0 && hi >= 0) return 'no difference detected';
  const up = lo > 0;
  return up === HIGHER_IS_BETTER[metric] ? 'better' : 'worse';
}

/** The smallest detectable |Δ| from an interval's width (se = width / (2 · 1.96)). */
export function detectableChange(lo: number, hi: number): number {
  return ((hi - lo) / (2 * Z95)) * (Z95 + Z80);
}

// Change.detectable: the smallest |Δ| this data detects with 80 % power at 5 % (two-sided),
// (1.96 + 0.84) times the standard error implied by the interval's width.

export function changeOf(
  metric: IntervalMetric,
  delta: number | null,
  iv: { lo: number; hi: number } | null,
  note?: string,
): Change {
  const d = delta !== null && Number.isFinite(delta) ? delta : null;
  if (iv === null)
    return {
      delta: d,
      lo: null,
      hi: null,
      verdict: 'no interval',
      detectable: null,
      note: note ?? 'no interval',
    };
  return {
    delta: d,
    lo: iv.lo,
    hi: iv.hi,
    verdict: verdictOf(metric, iv.lo, iv.hi),
    detectable: detectableChange(iv.lo, iv.hi),
  };
}

/** Are two verdicts opposite (one better, one worse)? The demo must never give such a pair. */
export const opposite = (a: Verdict, b: Verdict): boolean =>
  (a === 'better' && b === 'worse') || (a === 'worse' && b === 'better');

/** `-32% [-45%, -18%]`: a change with its interval. */
export function changeText(c: Pick<Change, 'delta' | 'lo' | 'hi'>, digits = 0): string {
  const p = (v: number): string => `${v > 0 ? '+' : ''}${(v * 100).toFixed(digits)}%`;
  if (c.delta === null) return '-';
  return c.lo === null || c.hi === null ? p(c.delta) : `${p(c.delta)} [${p(c.lo)}, ${p(c.hi)}]`;
}

/** The verdict in a few characters for a narrow table, with the detectable change when none. */
export function verdictText(c: Change): string {
  if (c.verdict === 'no difference detected')
    return c.detectable === null ? 'no diff.' : `no diff. (±${(c.detectable * 100).toFixed(0)}%)`;
  return c.verdict;
}
