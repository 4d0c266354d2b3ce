// A histogram as its non-empty buckets only: (bucket value, count) pairs in value order, the
// bucket value being HdrHistogram's highest equivalent value. The intervals resample a phase's
// seconds a thousand times; a full histogram object per second (tens of thousands of slots,
// decoded, allocated and walked with an iterator) made that the cost of `plb report`. This reads
// the V2 compressed encoding that hdr-histogram-js writes straight into those pairs.
import { inflateSync } from 'node:zlib';
import * as hdr from 'hdr-histogram-js';
import type { Histogram, JsHistogram } from 'hdr-histogram-js';
import { countsIndexOf } from './counts.js';

export interface SparseCounts {
  /** Bucket values (highest equivalent), ascending. */
  values: Float64Array;
  counts: Float64Array;
  total: number;
}

export const EMPTY_COUNTS: SparseCounts = {
  values: new Float64Array(0),
  counts: new Float64Array(0),
  total: 0,
};

/** The parts of a JsHistogram read here (public at run time, not in the typings). */
interface Layout {
  countsArrayLength: number;
  getCountAtIndex(i: number): number;
  valueFromIndex(i: number): number;
  highestEquivalentValue(v: number): number;
}

// Bucket index -> value depends only on the lowest value and the significant digits: one
// reference histogram per layout computes it (the library's own arithmetic), cached per index.
const layouts = new Map<string, { h: Layout; values: Float64Array }>();

function layoutOf(lowest: number, digits: number): { h: Layout; values: Float64Array } {
  const key = `${lowest}/${digits}`;
  let l = layouts.get(key);
  if (l === undefined) {
    const h = hdr.build({
      lowestDiscernibleValue: lowest,
      highestTrackableValue: Math.max(2 * lowest, 2),
      numberOfSignificantValueDigits: digits as 1 | 2 | 3 | 4 | 5,
      useWebAssembly: false,
    }) as unknown as Layout;
    l = { h, values: new Float64Array(0) };
    layouts.set(key, l);
  }
  return l;
}

function valueAt(l: { h: Layout; values: Float64Array }, index: number): number {
  if (index >= l.values.length) {
    const grown = new Float64Array(Math.max(index + 1, 2 * l.values.length, 4096)).fill(NaN);
    grown.set(l.values);
    l.values = grown;
  }
  let v = l.values[index]!;
  if (Number.isNaN(v)) {
    v = l.h.highestEquivalentValue(l.h.valueFromIndex(index));
    l.values[index] = v;
  }
  return v;
}

const V2_ENCODING = 0x1c849303;
const V2_COMPRESSED = 0x1c849304;

/** A compressed base64 histogram as sparse counts; throws on anything that is not one. */
export function decodeSparse(b64: string): SparseCounts {
  const raw = Buffer.from(b64.trim(), 'base64');
  if (raw.length < 8 || (raw.readInt32BE(0) & ~0xf0) !== V2_COMPRESSED)
    throw new Error('not a V2 compressed histogram');
  const data = inflateSync(raw.subarray(8, 8 + raw.readInt32BE(4)));
  if (data.length < 40 || (data.readInt32BE(0) & ~0xf0) !== V2_ENCODING)
    throw new Error('not a V2 histogram');
  const payload = data.readInt32BE(4);
  const digits = data.readInt32BE(12);
  const lowest = Number(data.readBigInt64BE(16));
  const layout = layoutOf(lowest, digits);
  const values: number[] = [];
  const counts: number[] = [];
  let total = 0;
  let index = 0;
  let pos = 40;
  const end = Math.min(data.length, 40 + payload);
  while (pos < end) {
    // ZigZag LEB128, at most 9 bytes (as the library reads it): a count, or minus a run of zeros.
    let v = 0;
    let mult = 1;
    for (let i = 0; i < 9 && pos < end; i++) {
      const b = data[pos++]!;
      v += (b & 0x7f) * mult;
      if ((b & 0x80) === 0) break;
      mult *= 128;
    }
    const n = v % 2 === 0 ? v / 2 : -(v + 1) / 2;
    if (n < 0) index -= n;
    else {
      if (n > 0) {
        values.push(valueAt(layout, index));
        counts.push(n);
        total += n;
      }
      index++;
    }
  }
  return { values: Float64Array.from(values), counts: Float64Array.from(counts), total };
}

/** The sparse counts of a histogram object (tests and benchmarks build those). */
export function sparseOfHistogram(h: Histogram): SparseCounts {
  if (h.totalCount === 0) return EMPTY_COUNTS;
  const l = h as unknown as Layout;
  const values: number[] = [];
  const counts: number[] = [];
  let total = 0;
  for (let i = 0; i < l.countsArrayLength; i++) {
    const c = l.getCountAtIndex(i);
    if (c > 0) {
      values.push(l.highestEquivalentValue(l.valueFromIndex(i)));
      counts.push(c);
      total += c;
    }
  }
  return { values: Float64Array.from(values), counts: Float64Array.from(counts), total };
}

/**
 * The sparse counts of raw values as a histogram of `lowest` and `digits` would hold them (each
 * value in its bucket's highest equivalent value): a second of queries without a histogram.
 */
export function sparseOfValues(values: readonly number[], lowest = 1, digits = 3): SparseCounts {
  if (values.length === 0) return EMPTY_COUNTS;
  const layout = layoutOf(lowest, digits);
  // By bucket index when every value has one from integer arithmetic (whole microseconds do):
  // the index orders and groups values as their highest equivalent value does.
  const index = new Int32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const k = countsIndexOf(layout.h as unknown as JsHistogram, values[i]!);
    if (k < 0) return sparseOfKeys(Float64Array.from(values, (v) => layout.h.highestEquivalentValue(v)));
    index[i] = k;
  }
  index.sort();
  return runsOf(index, (k) => valueAt(layout, k));
}

/** Sparse counts of bucket values (highest equivalent), in any order. */
function sparseOfKeys(keys: Float64Array): SparseCounts {
  keys.sort();
  return runsOf(keys, (k) => k);
}

/** Sorted keys as runs: each run's value (`valueOf` its key) and length. */
function runsOf(sorted: Int32Array | Float64Array, valueOf: (key: number) => number): SparseCounts {
  const outV: number[] = [];
  const outC: number[] = [];
  for (let i = 0; i < sorted.length; i++) {
    if (i > 0 && sorted[i] === sorted[i - 1]) outC[outC.length - 1]!++;
    else {
      outV.push(valueOf(sorted[i]!));
      outC.push(1);
    }
  }
  return { values: Float64Array.from(outV), counts: Float64Array.from(outC), total: sorted.length };
}
