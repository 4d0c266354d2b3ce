// Reading an HdrHistogram's counts straight from its typed array: the library walks them through
// a method call per index (getCountAtIndex), which the per-second percentiles and encodings pay
// 10^4 times a histogram. Same arithmetic as the library, so the same values.
// Types only: metrics' math stays free of the library at run time.
import type { Histogram, JsHistogram } from 'hdr-histogram-js';

type Counts = ArrayLike<number>;

/** A plain-JS histogram (Int32Histogram & co) with its counts array; null for any other kind. */
export function withCounts(h: Histogram): { h: JsHistogram; counts: Counts } | null {
  const js = h as Partial<JsHistogram> & { _counts?: unknown };
  const c = js._counts;
  if (!ArrayBuffer.isView(c) || typeof js.valueFromIndex !== 'function') return null;
  return (c as unknown as Counts).length === js.countsArrayLength
    ? { h: js as JsHistogram, counts: c as unknown as Counts }
    : null;
}

/** The library's ulp (its own, not Math's): 2^(floor(log2 x) - 52). */
const ulp = (x: number): number => Math.pow(2, Math.floor(Math.log2(x)) - 52);

/**
 * Where the counts after index 0 may start: the least non-zero value's index (at least 1).
 * Every count between is 0; index 0 is apart, as a recorded 0 goes there without moving
 * minNonZeroValue. Walks skip the stretch (most of a latency histogram's walk).
 */
export function firstCountIndex(h: JsHistogram): number {
  const min = h.minNonZeroValue;
  return min > 0 && min <= h.maxValue ? Math.max(1, h.countsArrayIndex(min)) : 1;
}

/** `h.getValueAtPercentile(p)`, value for value. */
export function valueAtPercentile(h: Histogram, percentile: number): number {
  return valuesAtPercentiles(h, [percentile])[0]!;
}

/** `ps.map((p) => h.getValueAtPercentile(p))`, value for value, in one walk of the counts. */
export function valuesAtPercentiles(h: Histogram, ps: readonly number[]): number[] {
  const js = withCounts(h);
  if (js === null) return ps.map((p) => h.getValueAtPercentile(p));
  const { counts } = js;
  const targets = ps.map((percentile) => {
    const fp = (Math.min(percentile, 100) / 100.0) * h.totalCount;
    return Math.max(Math.ceil(fp - ulp(fp)), 1);
  });
  // Each percentile is found at the first index whose running total reaches its target: the
  // targets in ascending order, met one after another along the walk.
  const order = ps.map((_, k) => k).sort((a, b) => targets[a]! - targets[b]!);
  const out = ps.map(() => 0);
  const from = firstCountIndex(js.h);
  let next = 0;
  let total = 0;
  for (let i = 0; i < counts.length && next < order.length; i = i === 0 ? from : i + 1) {
    total += counts[i] as number;
    while (next < order.length && total >= targets[order[next]!]!) {
      const k = order[next++]!;
      const v = js.h.valueFromIndex(i);
      out[k] = ps[k] === 0.0 ? js.h.lowestEquivalentValue(v) : js.h.highestEquivalentValue(v);
    }
  }
  return out;
}

const plain = (h: Histogram): JsHistogram | null => {
  const js = h as Partial<JsHistogram>;
  return typeof js.incrementCountAtIndex === 'function' && typeof js.subBucketHalfCountMagnitude === 'number'
    ? (js as JsHistogram)
    : null;
};

/**
 * `h.countsArrayIndex(v)` for a whole v in [0, 2^31) and a histogram of unit 1 (lowest
 * discernible value 1), from clz32 and shifts; -1 for anything else. The library finds the
 * bucket with Math.log2 and powers of two, most of the cost of a record.
 */
export function countsIndexOf(h: JsHistogram, v: number): number {
  if (h.unitMagnitude !== 0 || !(v >= 0 && v < 2 ** 31) || !Number.isInteger(v)) return -1;
  const half = h.subBucketHalfCountMagnitude;
  const bucket = Math.max(31 - Math.clz32(v) - half, 0);
  return ((bucket + 1) << half) + (v >>> bucket) - (1 << half);
}

/**
 * `h.recordValue(v)`, the same counts, min, max and total, with the index from countsIndexOf
 * (a run records each query five times); anything it does not take goes to the library.
 */
export function recordValue(h: Histogram, v: number): void {
  const js = plain(h);
  const index = js === null ? -1 : countsIndexOf(js, v);
  if (js === null || index < 0 || index >= js.countsArrayLength) return h.recordValue(v);
  js.incrementCountAtIndex(index);
  js.updateMinAndMax(v);
  js.incrementTotalCount();
}

/**
 * `into.add(from)` for two plain-JS histograms of one layout of unit 1: the same counts, total,
 * min and max, walking only from's index 0 and its stretch from the least to the greatest value
 * (the library walks all of its counts). Anything else goes to the library.
 */
export function addHistogram(into: Histogram, from: Histogram): void {
  const a = withCounts(into);
  const b = withCounts(from);
  const same =
    a !== null &&
    b !== null &&
    a.h.unitMagnitude === 0 &&
    b.h.unitMagnitude === 0 &&
    a.h.bucketCount === b.h.bucketCount &&
    a.h.subBucketCount === b.h.subBucketCount &&
    typeof a.h.addToCountAtIndex === 'function';
  if (!same) return into.add(from);
  if (from.totalCount === 0 && from.maxValue === 0) return into.add(from);
  const limit = b.h.countsArrayIndex(from.maxValue) + 1;
  let observed = 0;
  for (let i = 0; i < limit; i = i === 0 ? firstCountIndex(b.h) : i + 1) {
    const n = b.counts[i] as number;
    if (n > 0) {
      a.h.addToCountAtIndex(i, n);
      observed += n;
    }
  }
  a.h.setTotalCount(into.totalCount + observed);
  // The library's updatedMaxValue(max(...)) and updateMinNonZeroValue(min(...)), at unit 1.
  a.h.updateMinAndMax(from.maxValue);
  if (from.minNonZeroValue <= from.maxValue) a.h.updateMinAndMax(from.minNonZeroValue);
}
