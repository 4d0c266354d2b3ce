// Paired comparisons over repeats: each repeat runs every path back to back, so a path's figure
// minus another's in the same repeat cancels the machine's drift between repeats (which, on two
// shared cores, is larger than most differences between proxies). Mean and 95 % t-interval.
import { t975 } from '../../src/metrics/intervals.js';

export interface MeanInterval {
  mean: number;
  lo: number;
  hi: number;
  n: number;
}

/** The mean of xs with its 95 % t-interval (n < 2: the interval is unbounded). */
export function meanInterval(xs: readonly number[]): MeanInterval {
  const n = xs.length;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { mean, lo: -Infinity, hi: Infinity, n };
  const sd = Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1));
  const half = (t975(n - 1) * sd) / Math.sqrt(n);
  return { mean, lo: mean - half, hi: mean + half, n };
}

/** Element-wise a[i] op b[i] (the same repeat). */
export function pairwise(
  a: readonly number[],
  b: readonly number[],
  op: (x: number, y: number) => number,
): number[] {
  return a.slice(0, Math.min(a.length, b.length)).map((x, i) => op(x, b[i] as number));
}

/** "0.55 [0.41, 0.69]". */
export function formatInterval(m: MeanInterval, digits: number): string {
  const f = (x: number): string => (Number.isFinite(x) ? x.toFixed(digits) : '?');
  return `${f(m.mean)} [${f(m.lo)}, ${f(m.hi)}]`;
}

/** Where a difference's interval lies against 0: below, above, or across (not told apart). */
export function side(m: MeanInterval): 'lower' | 'higher' | 'not distinguishable' {
  if (m.hi < 0) return 'lower';
  if (m.lo > 0) return 'higher';
  return 'not distinguishable';
}
