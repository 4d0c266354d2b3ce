import type { Histogram } from 'hdr-histogram-js';
import type { Percentiles } from './types.js';

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

/**
 * Nearest-rank percentile (the smallest value with at least p% of the values at or below it)
 * of values sorted ascending; null for no values.
 */
export function nearestRank(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] ?? null;
}

/** p50/p95/p99 in ms of a histogram recorded in microseconds; nulls when it is empty. */
export function percentilesMs(h: Histogram): Percentiles {
  return { p50: percentileMs(h, 50), p95: percentileMs(h, 95), p99: percentileMs(h, 99) };
}

export function percentileMs(h: Histogram, p: number): number | null {
  return h.totalCount === 0 ? null : h.getValueAtPercentile(p) / 1000;
}

/** Rounds to `digits` decimals, keeping null (summary and CSV values stay readable). */
export function round(v: number | null, digits: number): number | null {
  if (v === null || !Number.isFinite(v)) return null;
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}
