// The data layout behind the block bootstrap (intervals.ts), built once per cell so that a
// resample costs a few hundred additions instead of a merge of histograms:
// - a Grid: every second of the cell as sparse rows over one shared, ascending list of bucket
//   values (the union of the seconds' buckets);
// - a BlockTable per run and block width: every block (each circular start) as per-chunk totals
//   (CHUNK grid values a chunk), slid from the seconds' chunk totals. A resample adds the chosen
//   blocks' chunk totals, finds the chunk holding each percentile's rank, and merges only that
//   chunk of those blocks, each block's chunk merged once on first use: a percentile visits a
//   few chunks of all, so merging every chunk of every block up front would waste most of it.
//   Counts are integers in doubles, so every sum is exact and the percentile is the one a full
//   merge gives.
import type { Histogram } from 'hdr-histogram-js';
import { EMPTY_COUNTS, sparseOfHistogram, type SparseCounts } from '../hdr/sparse-counts.js';

export const CHUNK = 64;

export interface Grid {
  values: Float64Array;
  /** Second s's entries are [start[s], start[s + 1]) of idx (grid positions, ascending) and cnt. */
  start: Int32Array;
  idx: Int32Array;
  cnt: Float64Array;
  totals: Float64Array;
  /** ceil(values / CHUNK), at least 1. */
  chunks: number;
  /** Second s's entries of chunk c start at chunkAt[s * (chunks + 1) + c] (and end at c + 1's). */
  chunkAt: Int32Array;
  /** Second s's total in chunk c at chunkSum[s * chunks + c]. */
  chunkSum: Float64Array;
}

const fromHistogram = new WeakMap<Histogram, SparseCounts>();

/** Sparse counts of a second's histogram (a decoded one is used as it is). */
export function countsOf(h: Histogram | SparseCounts | null): SparseCounts {
  if (h === null) return EMPTY_COUNTS;
  if ('counts' in h && h.counts instanceof Float64Array) return h;
  const hist = h as Histogram;
  let c = fromHistogram.get(hist);
  if (c === undefined) {
    c = sparseOfHistogram(hist);
    fromHistogram.set(hist, c);
  }
  return c;
}

/** First position of `v` in ascending `a` (it is there: a holds every second's values). */
function positionOf(a: Float64Array, v: number): number {
  let lo = 0;
  let hi = a.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Every value of the seconds once, ascending. Bucket values are whole numbers (microseconds,
 * milliseconds): sorted as 32-bit integers, about twice as fast as doubles, the same order.
 */
function distinctAscending(secs: readonly SparseCounts[], nnz: number): Float64Array {
  const whole = new Uint32Array(nnz);
  let k = 0;
  for (const s of secs)
    for (let j = 0; j < s.values.length; j++) {
      const v = s.values[j]!;
      if (!(v >= 0 && v < 2 ** 32 && Number.isInteger(v))) return distinctDoubles(secs, nnz);
      whole[k++] = v;
    }
  whole.sort();
  let g = 0;
  for (let i = 0; i < whole.length; i++) if (i === 0 || whole[i] !== whole[i - 1]) whole[g++] = whole[i]!;
  return Float64Array.from(whole.subarray(0, g));
}

function distinctDoubles(secs: readonly SparseCounts[], nnz: number): Float64Array {
  const all = new Float64Array(nnz);
  let k = 0;
  for (const s of secs) {
    all.set(s.values, k);
    k += s.values.length;
  }
  all.sort();
  let g = 0;
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) all[g++] = all[i]!;
  return all.slice(0, g);
}

export function gridOf(secs: readonly SparseCounts[]): Grid {
  let nnz = 0;
  for (const s of secs) nnz += s.values.length;
  const values = distinctAscending(secs, nnz);
  const start = new Int32Array(secs.length + 1);
  const idx = new Int32Array(nnz);
  const cnt = new Float64Array(nnz);
  const totals = new Float64Array(secs.length);
  let k = 0;
  secs.forEach((s, i) => {
    start[i] = k;
    for (let j = 0; j < s.values.length; j++) {
      idx[k] = positionOf(values, s.values[j]!);
      cnt[k++] = s.counts[j]!;
    }
    totals[i] = s.total;
  });
  start[secs.length] = k;
  const g = values.length;
  const chunks = Math.max(1, Math.ceil(g / CHUNK));
  const chunkAt = new Int32Array(secs.length * (chunks + 1));
  const chunkSum = new Float64Array(secs.length * chunks);
  for (let i = 0; i < secs.length; i++) {
    let e = start[i]!;
    const end = start[i + 1]!;
    for (let c = 0; c < chunks; c++) {
      chunkAt[i * (chunks + 1) + c] = e;
      const limit = (c + 1) * CHUNK;
      let sum = 0;
      for (; e < end && idx[e]! < limit; e++) sum += cnt[e]!;
      chunkSum[i * chunks + c] = sum;
    }
    chunkAt[i * (chunks + 1) + chunks] = end;
  }
  return { values, start, idx, cnt, totals, chunks, chunkAt, chunkSum };
}

/** Adds seconds [from, to) of the grid into dense `acc`; returns their total. */
export function addSeconds(g: Grid, from: number, to: number, acc: Float64Array, sign = 1): number {
  let total = 0;
  for (let s = from; s < to; s++) {
    for (let k = g.start[s]!; k < g.start[s + 1]!; k++) acc[g.idx[k]!]! += sign * g.cnt[k]!;
    total += g.totals[s]!;
  }
  return sign * total;
}

/** Nearest-rank percentiles (HdrHistogram's rank) of dense counts over the grid; NaN when empty. */
export function percentilesOf(
  values: Float64Array,
  counts: Float64Array,
  total: number,
  ps: readonly number[],
): number[] {
  const out = ps.map(() => NaN);
  if (total <= 0) return out;
  const ranks = ps.map((p) => rankOf(p, total));
  let cum = 0;
  let k = 0;
  for (let i = 0; i < counts.length && k < ps.length; i++) {
    cum += counts[i]!;
    while (k < ps.length && cum >= ranks[k]!) {
      out[k] = values[i]!;
      k++;
    }
  }
  return out;
}

const rankOf = (p: number, total: number): number => Math.max(1, Math.ceil((p / 100) * total - 1e-9));

/** Every circular block of `width` seconds of one run (seconds [offset, offset + len)). */
export interface BlockTable {
  chunks: number;
  /** Row r's chunk c total at coarse[r * chunks + c]. */
  coarse: Float64Array;
  totals: Float64Array;
  grid: Grid;
  offset: number;
  len: number;
  width: number;
  /** Row r's chunk c: entries [at[2i], at[2i + 1]) of fine, i = r * chunks + c; -1 until merged. */
  at: Int32Array;
  fine: Entries;
}

/** Sparse entries (chunk position, count), grown as block chunks are merged. */
class Entries {
  pos = new Int32Array(256);
  cnt = new Float64Array(256);
  length = 0;
  push(i: number, c: number): void {
    if (this.length === this.pos.length) {
      const pos = new Int32Array(this.pos.length * 2);
      pos.set(this.pos);
      this.pos = pos;
      const cnt = new Float64Array(this.cnt.length * 2);
      cnt.set(this.cnt);
      this.cnt = cnt;
    }
    this.pos[this.length] = i;
    this.cnt[this.length++] = c;
  }
}

export function blockTable(g: Grid, offset: number, len: number, width: number): BlockTable {
  const { chunks, chunkSum } = g;
  const coarse = new Float64Array(len * chunks);
  const totals = new Float64Array(len);
  const acc = new Float64Array(chunks);
  let total = 0;
  const add = (s: number, sign: number): void => {
    for (let c = 0; c < chunks; c++) acc[c]! += sign * chunkSum[s * chunks + c]!;
    total += sign * g.totals[s]!;
  };
  // A sliding window: the block at start s + 1 is the one at s less second s plus second s + w.
  for (let j = 0; j < width; j++) add(offset + (j % len), 1);
  for (let s = 0; s < len; s++) {
    if (s > 0) {
      add(offset + s - 1, -1);
      add(offset + ((s - 1 + width) % len), 1);
    }
    totals[s] = total;
    coarse.set(acc, s * chunks);
  }
  const at = new Int32Array(2 * len * chunks).fill(-1);
  return { chunks, coarse, totals, grid: g, offset, len, width, at, fine: new Entries() };
}

const dense = new Float64Array(CHUNK);

/** Merges row `row`'s chunk `c` into the table's entries (once, on a resample's first need). */
function mergeChunk(t: BlockTable, row: number, c: number): void {
  dense.fill(0);
  const { idx, cnt, chunkAt } = t.grid;
  const first = c * CHUNK;
  for (let j = 0; j < t.width; j++) {
    const a = (t.offset + ((row + j) % t.len)) * (t.chunks + 1) + c;
    const end = chunkAt[a + 1]!;
    for (let e = chunkAt[a]!; e < end; e++) dense[idx[e]! - first]! += cnt[e]!;
  }
  const i = 2 * (row * t.chunks + c);
  t.at[i] = t.fine.length;
  for (let j = 0; j < CHUNK; j++) if (dense[j]! > 0) t.fine.push(j, dense[j]!);
  t.at[i + 1] = t.fine.length;
}

/**
 * A resample's merged percentiles into `out` (NaN when empty); returns the resample's total.
 * The chosen rows are (tables[i], rows[i]) for i < n; `ps` ascending; `coarse` and `fine` are
 * scratch (chunks and CHUNK long). Same result as merging the rows and scanning the grid.
 */
export function resamplePercentiles(
  values: Float64Array,
  tables: readonly BlockTable[],
  rows: Int32Array,
  n: number,
  ps: readonly number[],
  out: Float64Array,
  coarse: Float64Array,
  fine: Float64Array,
): number {
  out.fill(NaN);
  const chunks = tables[0]?.chunks ?? 0;
  coarse.fill(0, 0, chunks);
  let total = 0;
  for (let i = 0; i < n; i++) {
    const t = tables[i]!;
    const row = rows[i]!;
    const base = row * chunks;
    const tc = t.coarse;
    for (let c = 0; c < chunks; c++) coarse[c]! += tc[base + c]!;
    total += t.totals[row]!;
  }
  if (total <= 0) return total;
  let cum = 0;
  let c = 0;
  let merged = -1;
  for (let k = 0; k < ps.length; k++) {
    const rank = rankOf(ps[k]!, total);
    while (c < chunks && cum + coarse[c]! < rank) cum += coarse[c++]!;
    if (c >= chunks) break;
    if (merged !== c) {
      fine.fill(0);
      for (let i = 0; i < n; i++) {
        const t = tables[i]!;
        const a = 2 * (rows[i]! * chunks + c);
        if (t.at[a] === -1) mergeChunk(t, rows[i]!, c);
        const { pos, cnt } = t.fine;
        for (let e = t.at[a]!, end = t.at[a + 1]!; e < end; e++) fine[pos[e]!]! += cnt[e]!;
      }
      merged = c;
    }
    let run = cum;
    for (let j = 0; j < CHUNK; j++) {
      run += fine[j]!;
      if (run >= rank) {
        out[k] = values[c * CHUNK + j]!;
        break;
      }
    }
  }
  return total;
}
