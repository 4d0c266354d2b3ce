// 95 % intervals for what a phase reports, from its per-second histograms: a circular block
// bootstrap over seconds (Politis & Romano 1992). Seconds are not independent (a session spans
// several, and a replica's load persists while its sessions live), so seconds are resampled in
// blocks at least a session long; see docs/statistics.md for the block length and its coverage.
// Pure: no I/O, no clock; the generator is seeded from the cell's key, so the same data always
// gives the same interval.
import type { Histogram } from 'hdr-histogram-js';

/** The metrics of a phase x class that get an interval. Lifetime is the sessions' p50, ms. */
export const INTERVAL_METRICS = ['p50', 'p95', 'p99', 'goodput', 'lifetime'] as const;
export type IntervalMetric = (typeof INTERVAL_METRICS)[number];

/**
 * Lower is better for latencies; higher for goodput and for session lifetime (as --tolerance
 * reads it: a session cut short by a failed replica ends early).
 */
export const HIGHER_IS_BETTER: Record<IntervalMetric, boolean> = {
  p50: false,
  p95: false,
  p99: false,
  goodput: true,
  lifetime: true,
};

/** One second of one class: query latencies (us) and the lifetimes (ms) of sessions closed in it. */
export interface SecondSample {
  latency: Histogram | null;
  lifetime: Histogram | null;
}

export interface BootstrapOptions {
  /** Resamples (default 1000). */
  resamples?: number;
  /** Block length in seconds; default: blockLength() of the data. */
  block?: number;
  /** Seed of the generator (default: a hash of `key`). */
  seed?: number;
  /** Names the cell; seeds the generator so that the same data gives the same interval. */
  key: string;
}

/** A cell's bootstrap: per metric, the resampled values (NaN where a resample had no data). */
export interface CellBootstrap {
  seconds: number;
  block: number;
  /** Whole blocks in the data (summed over the runs): the degrees of freedom the interval has. */
  blocks: number;
  replicates: Record<IntervalMetric, Float64Array>;
}

export interface Interval {
  lo: number;
  hi: number;
}

/** At least this many blocks per run, or no interval: fewer cannot show the phase's variability. */
export const MIN_BLOCKS = 3;
export const DEFAULT_RESAMPLES = 1000;

/** mulberry32: a small, fast 32-bit generator, enough for resampling indices. */
export function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a of a string: the seed of a cell's generator. */
export function hashSeed(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

interface Iterable {
  highestEquivalentValue(v: number): number;
  recordedValuesIterator: {
    reset(): void;
    hasNext(): boolean;
    next(): { valueIteratedTo: number; countAtValueIteratedTo: number };
  };
}

/** (bucket value, count) pairs of a histogram; values are the buckets' highest equivalents. */
// Walking a histogram's counts is the costly part (tens of thousands of slots): once per histogram.
const bucketCache = new WeakMap<Histogram, Array<[number, number]>>();

function buckets(h: Histogram | null): Array<[number, number]> {
  if (h === null || h.totalCount === 0) return [];
  const hit = bucketCache.get(h);
  if (hit) return hit;
  const out: Array<[number, number]> = [];
  bucketCache.set(h, out);
  const hh = h as unknown as Iterable;
  const it = hh.recordedValuesIterator;
  it.reset();
  while (it.hasNext()) {
    const v = it.next();
    if (v.countAtValueIteratedTo > 0)
      out.push([hh.highestEquivalentValue(v.valueIteratedTo), v.countAtValueIteratedTo]);
  }
  return out;
}

/** Seconds as sparse rows over one shared, sorted list of bucket values (a cheap merge). */
interface Sparse {
  values: Float64Array;
  rows: Array<{ idx: Int32Array; cnt: Float64Array; total: number }>;
}

function sparse(hists: ReadonlyArray<Histogram | null>): Sparse {
  const per = hists.map(buckets);
  const all = [...new Set(per.flatMap((b) => b.map(([v]) => v)))].sort((a, b) => a - b);
  const pos = new Map(all.map((v, i) => [v, i]));
  return {
    values: Float64Array.from(all),
    rows: per.map((b) => ({
      idx: Int32Array.from(b.map(([v]) => pos.get(v) ?? 0)),
      cnt: Float64Array.from(b.map(([, c]) => c)),
      total: b.reduce((s, [, c]) => s + c, 0),
    })),
  };
}

type Row = Sparse['rows'][number];

/** The merged rows of `width` seconds from every start (circular) of one run's `len` seconds. */
function blockRows(s: Sparse, base: number, len: number, width: number): Row[] {
  const acc = new Float64Array(s.values.length);
  const out: Row[] = [];
  for (let start = 0; start < len; start++) {
    acc.fill(0);
    let total = 0;
    for (let j = 0; j < width; j++) {
      const row = s.rows[base + ((start + j) % len)];
      if (row === undefined) continue;
      for (let k = 0; k < row.idx.length; k++) acc[row.idx[k] ?? 0]! += row.cnt[k] ?? 0;
      total += row.total;
    }
    const idx: number[] = [];
    const cnt: number[] = [];
    for (let i = 0; i < acc.length; i++)
      if ((acc[i] ?? 0) > 0) {
        idx.push(i);
        cnt.push(acc[i] ?? 0);
      }
    out.push({ idx: Int32Array.from(idx), cnt: Float64Array.from(cnt), total });
  }
  return out;
}

/** Nearest-rank percentiles (HdrHistogram's rank) of merged counts; NaN when empty. */
function percentilesOf(
  values: Float64Array,
  counts: Float64Array,
  total: number,
  ps: readonly number[],
): number[] {
  const out = ps.map(() => NaN);
  if (total <= 0) return out;
  const ranks = ps.map((p) => Math.max(1, Math.ceil((p / 100) * total - 1e-9)));
  let cum = 0;
  let k = 0;
  for (let i = 0; i < counts.length && k < ps.length; i++) {
    cum += counts[i] ?? 0;
    while (k < ps.length && cum >= (ranks[k] ?? 0)) {
      out[k] = values[i] ?? NaN;
      k++;
    }
  }
  return out;
}

/**
 * The block length (seconds) for a phase of `seconds` seconds whose sessions live up to
 * `sessionS` (their p95): at least a session, so a session's queries stay in one block, and at
 * least n^(1/3) (the rate that keeps the bootstrap's bias and variance balanced for a mean).
 */
export function blockLength(seconds: number, sessionS: number | null): number {
  const session = sessionS !== null && Number.isFinite(sessionS) ? Math.ceil(sessionS) : 1;
  return Math.max(2, session, Math.ceil(Math.cbrt(seconds)));
}

/** Why a cell gets no interval, or null when it can have one. */
export function tooFewSeconds(seconds: number, block: number): string | null {
  if (seconds === 0) return 'no per-second data';
  if (seconds < MIN_BLOCKS * block)
    return `too few seconds for an interval (${seconds} s, need ${MIN_BLOCKS} blocks of ${block} s)`;
  return null;
}

/** The p95 of the session lifetimes of a phase, in seconds (for the block length); null if none. */
export function sessionP95S(runs: ReadonlyArray<readonly SecondSample[]>): number | null {
  const s = sparse(runs.flatMap((r) => r.map((x) => x.lifetime)));
  const counts = new Float64Array(s.values.length);
  let total = 0;
  for (const row of s.rows) {
    for (let j = 0; j < row.idx.length; j++) counts[row.idx[j] ?? 0]! += row.cnt[j] ?? 0;
    total += row.total;
  }
  const [p95] = percentilesOf(s.values, counts, total, [95]);
  return p95 === undefined || Number.isNaN(p95) ? null : p95 / 1000;
}

/**
 * Circular block bootstrap of one cell over one or more runs (stratified: each resample draws
 * blocks within every run and merges them, so a pooled value keeps each run's weight). Latency
 * percentiles in ms, goodput in queries/s, lifetime p50 in ms. Throws when a run has too few
 * seconds: callers check tooFewSeconds() first and print its note instead.
 */
export function bootstrapCell(
  runs: ReadonlyArray<readonly SecondSample[]>,
  opts: BootstrapOptions,
): CellBootstrap {
  const n = runs.reduce((s, r) => s + r.length, 0);
  const block = opts.block ?? blockLength(Math.min(...runs.map((r) => r.length)), sessionP95S(runs));
  for (const r of runs) {
    const why = tooFewSeconds(r.length, block);
    if (why !== null) throw new Error(`bootstrapCell ${opts.key}: ${why}`);
  }
  const B = opts.resamples ?? DEFAULT_RESAMPLES;
  const rand = generator(opts.seed ?? hashSeed(opts.key));
  const lat = sparse(runs.flatMap((r) => r.map((x) => x.latency)));
  const life = sparse(runs.flatMap((r) => r.map((x) => x.lifetime)));
  const latCounts = new Float64Array(lat.values.length);
  const lifeCounts = new Float64Array(life.values.length);
  const reps = Object.fromEntries(INTERVAL_METRICS.map((m) => [m, new Float64Array(B)])) as Record<
    IntervalMetric,
    Float64Array
  >;
  const offsets: number[] = [];
  let off = 0;
  for (const r of runs) {
    offsets.push(off);
    off += r.length;
  }
  // Each possible block (every start, circularly; and the shorter last block) merged once, so
  // a resample adds n / block rows instead of n.
  const full = runs.map((r, ri) => [
    blockRows(lat, offsets[ri] ?? 0, r.length, block),
    blockRows(life, offsets[ri] ?? 0, r.length, block),
  ]);
  const tail = runs.map((r, ri) => {
    const w = r.length % block;
    return w === 0
      ? null
      : [blockRows(lat, offsets[ri] ?? 0, r.length, w), blockRows(life, offsets[ri] ?? 0, r.length, w)];
  });
  for (let b = 0; b < B; b++) {
    latCounts.fill(0);
    lifeCounts.fill(0);
    let latTotal = 0;
    let lifeTotal = 0;
    runs.forEach((r, ri) => {
      const len = r.length;
      for (let taken = 0; taken < len; taken += block) {
        const start = Math.floor(rand() * len);
        const rows = len - taken >= block ? full[ri] : tail[ri];
        const lr = rows?.[0]?.[start];
        const fr = rows?.[1]?.[start];
        if (lr !== undefined) {
          for (let k = 0; k < lr.idx.length; k++) latCounts[lr.idx[k] ?? 0]! += lr.cnt[k] ?? 0;
          latTotal += lr.total;
        }
        if (fr !== undefined) {
          for (let k = 0; k < fr.idx.length; k++) lifeCounts[fr.idx[k] ?? 0]! += fr.cnt[k] ?? 0;
          lifeTotal += fr.total;
        }
      }
    });
    const [p50, p95, p99] = percentilesOf(lat.values, latCounts, latTotal, [50, 95, 99]);
    reps.p50[b] = (p50 ?? NaN) / 1000;
    reps.p95[b] = (p95 ?? NaN) / 1000;
    reps.p99[b] = (p99 ?? NaN) / 1000;
    reps.goodput[b] = latTotal / n;
    reps.lifetime[b] = percentilesOf(life.values, lifeCounts, lifeTotal, [50])[0] ?? NaN;
  }
  const blocks = runs.reduce((s, r) => s + Math.floor(r.length / block), 0);
  return { seconds: n, block, blocks, replicates: reps };
}

/** The point values of a cell from all its seconds (the same estimators as the resamples). */
export function pointValues(runs: ReadonlyArray<readonly SecondSample[]>): Record<IntervalMetric, number> {
  const lat = sparse(runs.flatMap((r) => r.map((x) => x.latency)));
  const life = sparse(runs.flatMap((r) => r.map((x) => x.lifetime)));
  const merge = (s: Sparse): [Float64Array, number] => {
    const c = new Float64Array(s.values.length);
    let t = 0;
    for (const row of s.rows) {
      for (let k = 0; k < row.idx.length; k++) c[row.idx[k] ?? 0]! += row.cnt[k] ?? 0;
      t += row.total;
    }
    return [c, t];
  };
  const [lc, lt] = merge(lat);
  const [fc, ft] = merge(life);
  const [p50, p95, p99] = percentilesOf(lat.values, lc, lt, [50, 95, 99]);
  const n = runs.reduce((s, r) => s + r.length, 0);
  return {
    p50: (p50 ?? NaN) / 1000,
    p95: (p95 ?? NaN) / 1000,
    p99: (p99 ?? NaN) / 1000,
    goodput: n > 0 ? lt / n : NaN,
    lifetime: percentilesOf(life.values, fc, ft, [50])[0] ?? NaN,
  };
}

/** Share of resamples that must be defined for an interval (else the cell is mostly empty). */
const MIN_DEFINED = 0.9;

/** t quantiles (0.975) for 1..14 degrees of freedom; beyond, a close approximation. */
const T975 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145,
];
export const t975 = (df: number): number => T975[df - 1] ?? 1.96 + 2.4 / df;

/**
 * The widening of a percentile interval made of `blocks` blocks: t(blocks - 1) / z. The bootstrap
 * sees the spread of only that many nearly independent pieces, and like batch means its estimate
 * of the spread has about blocks - 1 degrees of freedom; 1 for no block count.
 */
export function smallSampleFactor(blocks: number | undefined): number {
  if (blocks === undefined || !Number.isFinite(blocks) || blocks < 2) return 1;
  return t975(blocks - 1) / 1.959964;
}

/**
 * The central 95 % percentile interval of resampled values, widened around their median by
 * smallSampleFactor(blocks); null when too many resamples are undefined.
 */
export function percentileInterval(reps: Float64Array, level = 0.95, blocks?: number): Interval | null {
  const ok = Array.from(reps).filter((v) => Number.isFinite(v));
  if (ok.length === 0 || ok.length < MIN_DEFINED * reps.length) return null;
  ok.sort((a, b) => a - b);
  const q = (p: number): number => {
    const h = (ok.length - 1) * p;
    const lo = Math.floor(h);
    const a = ok[lo] ?? NaN;
    const b = ok[Math.min(lo + 1, ok.length - 1)] ?? NaN;
    return a + (h - lo) * (b - a);
  };
  const tail = (1 - level) / 2;
  const f = smallSampleFactor(blocks);
  const mid = q(0.5);
  return { lo: mid + (q(tail) - mid) * f, hi: mid + (q(1 - tail) - mid) * f };
}

/** Resampled relative changes (v - r) / r, pairing independent resamples by index. */
export function relativeChange(value: Float64Array, reference: Float64Array): Float64Array {
  const out = new Float64Array(Math.min(value.length, reference.length));
  for (let i = 0; i < out.length; i++) {
    const r = reference[i] ?? NaN;
    out[i] = r === 0 ? NaN : ((value[i] ?? NaN) - r) / r;
  }
  return out;
}
