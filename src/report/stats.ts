/**
 * Quantiles of repeated runs. Method: linear interpolation between order statistics, Hyndman &
 * Fan type 7 (the default of R, NumPy and Excel's PERCENTILE.INC): h = (n-1)p,
 * Q(p) = x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h]) over the sorted values.
 */
export const QUANTILE_METHOD = 'linear interpolation (Hyndman-Fan type 7)';

export function quantile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  if (!(p >= 0 && p <= 1)) throw new RangeError(`quantile p must be in [0,1], got ${p}`);
  const xs = [...values].sort((a, b) => a - b);
  const h = (xs.length - 1) * p;
  const lo = Math.floor(h);
  const a = xs[lo] as number;
  const b = xs[Math.min(lo + 1, xs.length - 1)] as number;
  return a + (h - lo) * (b - a);
}

/** Median and interquartile range of the non-null values of one metric across repeats. */
export interface Stat {
  median: number | null;
  q1: number | null;
  q3: number | null;
  /** Number of non-null values the stat is made of. */
  n: number;
}

export function stat(values: readonly (number | null | undefined)[]): Stat {
  const xs = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  return { median: quantile(xs, 0.5), q1: quantile(xs, 0.25), q3: quantile(xs, 0.75), n: xs.length };
}

/** Mean and coefficient of variation (population standard deviation / mean). */
export function meanCv(values: readonly number[]): { mean: number | null; cv: number | null } {
  if (values.length === 0) return { mean: null, cv: null };
  const mean = values.reduce((s, v) => s + v, 0) / values.length;
  if (mean === 0) return { mean, cv: null };
  const variance = values.reduce((s, v) => s + (v - mean) ** 2, 0) / values.length;
  return { mean, cv: Math.sqrt(variance) / mean };
}
