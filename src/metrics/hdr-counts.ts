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

/** `h.getValueAtPercentile(p)`, value for value. */
export function valueAtPercentile(h: Histogram, percentile: number): number {
  const js = withCounts(h);
  if (js === null) return h.getValueAtPercentile(percentile);
  const { counts } = js;
  const requested = Math.min(percentile, 100);
  const fp = (requested / 100.0) * h.totalCount;
  const target = Math.max(Math.ceil(fp - ulp(fp)), 1);
  // Between index 0 (where a recorded 0 goes, without moving minNonZeroValue) and the least
  // non-zero value's index every count is 0: the walk skips them (most of a latency's walk).
  const min = js.h.minNonZeroValue;
  const from = min > 0 && min <= h.maxValue ? Math.max(1, js.h.countsArrayIndex(min)) : 1;
  let total = 0;
  for (let i = 0; i < counts.length; i = i === 0 ? from : i + 1) {
    total += counts[i] as number;
    if (total >= target) {
      const v = js.h.valueFromIndex(i);
      return percentile === 0.0 ? js.h.lowestEquivalentValue(v) : js.h.highestEquivalentValue(v);
    }
  }
  return 0;
}

const plain = (h: Histogram): JsHistogram | null => {
  const js = h as Partial<JsHistogram>;
  return typeof js.incrementCountAtIndex === 'function' && typeof js.subBucketHalfCountMagnitude === 'number'
    ? (js as JsHistogram)
    : null;
};

/**
 * `h.recordValue(v)`, the same counts, min, max and total. The library finds the bucket with
 * Math.log2 and powers of two (most of a record's cost, and a run records each query five
 * times); for a whole value below 2^31 the same index comes from clz32 and shifts.
 */
export function recordValue(h: Histogram, v: number): void {
  const js = plain(h);
  if (js === null || !(v >= 0 && v < 2 ** 31) || !Number.isInteger(v)) return h.recordValue(v);
  const half = js.subBucketHalfCountMagnitude;
  const unit = js.unitMagnitude;
  const bucket = Math.max(31 - Math.clz32(v) - half - unit, 0);
  const index = ((bucket + 1) << half) + (v >>> (bucket + unit)) - (1 << half);
  if (index >= js.countsArrayLength) return h.recordValue(v);
  js.incrementCountAtIndex(index);
  js.updateMinAndMax(v);
  js.incrementTotalCount();
}
