/**
 * The numbers of plb's tables, and the one home of its percentiles. Two methods, each where it fits:
 *
 * - Nearest rank, for the latencies, lifetimes and delays of one run: the smallest observed value
 *   with at least p% of the values at or below it (rank ceil(p/100 n)). A p95 is then a latency
 *   that happened, and it is what HdrHistogram's getValueAtPercentile reports for the recorder's
 *   histograms (same rank; the value its bucket's highest equivalent, 3 significant digits).
 * - Linear interpolation (Hyndman & Fan type 7, the default of R, NumPy and Excel's
 *   PERCENTILE.INC), for the median and quartiles of one metric across a few repeated runs: with
 *   3 or 5 repeats a nearest rank would just pick one run's value and make the IQR jump between
 *   repeats; interpolation moves smoothly with every run.
 */
import type { Histogram } from 'hdr-histogram-js';
import type { Stat } from '../run-format/report.js';
import type { Percentiles } from './types.js';
import { valueAtPercentile, valuesAtPercentiles } from './hdr/counts.js';

/** Arithmetic mean; null for no values. */
export function mean(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** Population standard deviation (divides by n: the replicas up are the whole population). */
export function populationStddev(values: readonly number[]): number | null {
  const m = mean(values);
  if (m === null) return null;
  let sq = 0;
  for (const v of values) sq += (v - m) * (v - m);
  return Math.sqrt(sq / values.length);
}

/** Coefficient of variation = population stddev / mean; null when empty or the mean is 0. */
export function coefficientOfVariation(values: readonly number[]): number | null {
  const m = mean(values);
  const sd = populationStddev(values);
  if (m === null || sd === null || m === 0) return null;
  return sd / m;
}

/** goodput / ref goodput; null when either is missing or ref is 0. */
export function goodputRetention(goodput: number | null, refGoodput: number | null): number | null {
  if (goodput === null || refGoodput === null || refGoodput === 0) return null;
  return goodput / refGoodput;
}

/** p95 / ref p95 - 1; null when either is missing or ref is 0. */
export function p95Inflation(p95: number | null, refP95: number | null): number | null {
  if (p95 === null || refP95 === null || refP95 === 0) return null;
  return p95 / refP95 - 1;
}

/** Completed queries per second over a span; 0 for an empty span. */
export function perSecond(count: number, spanMs: number): number {
  return spanMs > 0 ? (count * 1000) / spanMs : 0;
}

/** Nearest-rank percentile (p in 0..100) of values sorted ascending; null for no values. */
export function nearestRank(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] ?? null;
}

/** Nearest-rank percentile (p in 0..100) of a histogram, in its own unit; null when it is empty. */
export function histogramPercentile(h: Histogram, p: number): number | null {
  return h.totalCount === 0 ? null : valueAtPercentile(h, p);
}

/** Percentile in ms of a histogram recorded in microseconds; null when it is empty. */
export function percentileMs(h: Histogram, p: number): number | null {
  const us = histogramPercentile(h, p);
  return us === null ? null : us / 1000;
}

/** p50/p95/p99 in ms of a histogram recorded in microseconds; nulls when it is empty. */
export function percentilesMs(h: Histogram): Percentiles {
  const [p50, p95, p99] = percentilesOfMs(h, [50, 95, 99]);
  return { p50: p50 ?? null, p95: p95 ?? null, p99: p99 ?? null };
}

/** Several percentiles in ms in one walk of the histogram; nulls when it is empty. */
export function percentilesOfMs(h: Histogram, ps: readonly number[]): (number | null)[] {
  if (h.totalCount === 0) return ps.map(() => null);
  return valuesAtPercentiles(h, ps).map((us) => us / 1000);
}

/** The method of `quantile`, as the report states it. */
export const QUANTILE_METHOD = 'linear interpolation (Hyndman-Fan type 7)';

/**
 * Type 7 quantile (p in 0..1) of values in any order: h = (n-1)p,
 * Q(p) = x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h]) over the sorted values.
 */
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

/** Median and quartiles (type 7) of one metric over a group's runs; non-finite values are left out. */
export function stat(values: readonly (number | null | undefined)[]): Stat {
  const xs = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  return { median: quantile(xs, 0.5), q1: quantile(xs, 0.25), q3: quantile(xs, 0.75), n: xs.length };
}

/** Rounds to `digits` decimals, keeping null (summary and CSV values stay readable). */
export function round(v: number | null, digits: number): number | null {
  if (v === null || !Number.isFinite(v)) return null;
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}
