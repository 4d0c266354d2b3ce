import { quantile } from '../metrics/math.js';

// The report states the method (render.ts, html.ts); quantiles live in metrics/math.ts.
export { QUANTILE_METHOD } from '../metrics/math.js';

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
