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
  let total = 0;
  for (let i = 0; i < counts.length; i++) {
    total += counts[i] as number;
    if (total >= target) {
      const v = js.h.valueFromIndex(i);
      return percentile === 0.0 ? js.h.lowestEquivalentValue(v) : js.h.highestEquivalentValue(v);
    }
  }
  return 0;
}

/**
 * `ps.map((p) => h.getValueAtPercentile(p))` for ascending percentiles, in one walk of the counts
 * (a timeline row asks for p50 and p95 of each class every second).
 */
export function valuesAtPercentiles(h: Histogram, ps: readonly number[]): number[] {
  const js = withCounts(h);
  const ascending = ps.every((p, i) => i === 0 || p >= (ps[i - 1] as number));
  if (js === null || !ascending) return ps.map((p) => valueAtPercentile(h, p));
  const { counts } = js;
  const out: number[] = [];
  let total = 0;
  let i = 0;
  for (const percentile of ps) {
    const requested = Math.min(percentile, 100);
    const fp = (requested / 100.0) * h.totalCount;
    const target = Math.max(Math.ceil(fp - ulp(fp)), 1);
    let found = false;
    // The count up to index i - 1 is below this target; walk on from there.
    if (i > 0 && total >= target) {
      const v = js.h.valueFromIndex(i - 1);
      out.push(percentile === 0.0 ? js.h.lowestEquivalentValue(v) : js.h.highestEquivalentValue(v));
      continue;
    }
    for (; i < counts.length; ) {
      total += counts[i++] as number;
      if (total >= target) {
        const v = js.h.valueFromIndex(i - 1);
        out.push(percentile === 0.0 ? js.h.lowestEquivalentValue(v) : js.h.highestEquivalentValue(v));
        found = true;
        break;
      }
    }
    if (!found) out.push(0);
  }
  return out;
}

/** The fields and methods `add` uses (some private in the library's types). */
interface Layout {
  totalCount: number;
  maxValue: number;
  minNonZeroValue: number;
  countsArrayLength: number;
  countsArrayIndex(v: number): number;
  bucketCount: number;
  subBucketCount: number;
  unitMagnitude: number;
  startTimeStampMsec: number;
  endTimeStampMsec: number;
  setTotalCount(n: number): void;
  updatedMaxValue(v: number): void;
  updateMinNonZeroValue(v: number): void;
}

/**
 * `into.add(from)`, field for field, for two plain-JS histograms of one layout: the library walks
 * every index of `from` through a method call; this walks its counts up to its highest value.
 * Anything else (other layouts, a count past 2^53) goes to the library.
 */
export function addInto(into: Histogram, from: Histogram): void {
  const a = withCounts(into);
  const b = withCounts(from);
  const x = a?.h as unknown as Layout | undefined;
  const y = b?.h as unknown as Layout | undefined;
  if (!a || !b || !x || !y || a.counts.length !== b.counts.length || !sameLayout(x, y)) {
    into.add(from);
    return;
  }
  const to = a.counts as unknown as { [i: number]: number };
  const src = b.counts;
  const last = Math.min(y.countsArrayIndex(y.maxValue), src.length - 1);
  let added = 0;
  for (let i = 0; i <= last; i++) {
    const n = src[i] as number;
    if (n > 0) {
      const sum = (to[i] as number) + n;
      if (sum > Number.MAX_SAFE_INTEGER) {
        // Undo and let the library say what it says about it.
        for (let j = 0; j < i; j++) to[j] = (to[j] as number) - (src[j] as number);
        into.add(from);
        return;
      }
      to[i] = sum;
      added += n;
    }
  }
  x.setTotalCount(x.totalCount + added);
  x.updatedMaxValue(Math.max(x.maxValue, y.maxValue));
  x.updateMinNonZeroValue(Math.min(x.minNonZeroValue, y.minNonZeroValue));
  x.startTimeStampMsec = Math.min(x.startTimeStampMsec, y.startTimeStampMsec);
  x.endTimeStampMsec = Math.max(x.endTimeStampMsec, y.endTimeStampMsec);
}

function sameLayout(x: Layout, y: Layout): boolean {
  return (
    x.bucketCount === y.bucketCount &&
    x.subBucketCount === y.subBucketCount &&
    x.unitMagnitude === y.unitMagnitude &&
    x.countsArrayLength === y.countsArrayLength
  );
}
