// 95 % intervals for what a phase reports, from its per-second histograms: a circular block
// bootstrap over seconds (Politis & Romano 1992). Seconds are not independent (a session spans
// several, and a replica's load persists while its sessions live), so seconds are resampled in
// blocks at least a session long; see docs/statistics.md for the block length and its coverage.
// Pure: no I/O, no clock; the generator is seeded from the cell's key, so the same data always
// gives the same interval.
import type { Histogram } from 'hdr-histogram-js';
import {
  addSeconds,
  blockTable,
  CHUNK,
  countsOf,
  gridOf,
  percentilesOf,
  resamplePercentiles,
  type BlockTable,
  type Grid,
} from './interval-grid.js';
import type { SparseCounts } from '../hdr/sparse-counts.js';

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

/**
 * One second of one class: query latencies (us) and the lifetimes (ms) of sessions closed in it,
 * as histograms or as the sparse counts a run's files decode to.
 */
export interface SecondSample {
  latency: Histogram | SparseCounts | null;
  lifetime: Histogram | SparseCounts | null;
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
const MIN_BLOCKS = 3;
const DEFAULT_RESAMPLES = 1000;

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

/**
 * A cell's seconds prepared once (intervals.ts's input for every estimate): the shared grids of
 * latency and lifetime buckets and, built on first use, the block tables of each run.
 */
export interface PreparedCell {
  lat: Grid;
  life: Grid;
  /** The runs (or the one run of a view), as ranges of the grids' seconds. */
  runs: ReadonlyArray<{ offset: number; len: number }>;
  tables: Map<string, [BlockTable, BlockTable]>;
}

export function prepareCell(runs: ReadonlyArray<readonly SecondSample[]>): PreparedCell {
  const secs = runs.flat();
  let offset = 0;
  return {
    lat: gridOf(secs.map((x) => countsOf(x.latency))),
    life: gridOf(secs.map((x) => countsOf(x.lifetime))),
    runs: runs.map((r) => {
      const out = { offset, len: r.length };
      offset += r.length;
      return out;
    }),
    tables: new Map(),
  };
}

/** Run `i` of a prepared cell alone (sharing its grids and block tables). */
export function runOf(cell: PreparedCell, i: number): PreparedCell {
  const r = cell.runs[i];
  return { ...cell, runs: r ? [r] : [] };
}

type Cell = ReadonlyArray<readonly SecondSample[]> | PreparedCell;
const prepared = (c: Cell): PreparedCell => ('lat' in c ? c : prepareCell(c));

/** Dense counts and total of the cell's seconds over a grid. */
function merged(g: Grid, cell: PreparedCell): [Float64Array, number] {
  const acc = new Float64Array(g.values.length);
  let total = 0;
  for (const r of cell.runs) total += addSeconds(g, r.offset, r.offset + r.len, acc);
  return [acc, total];
}

/** The p95 of the session lifetimes of a phase, in seconds (for the block length); null if none. */
export function sessionP95S(cell: Cell): number | null {
  const c = prepared(cell);
  const [counts, total] = merged(c.life, c);
  const [p95] = percentilesOf(c.life.values, counts, total, [95]);
  return p95 === undefined || Number.isNaN(p95) ? null : p95 / 1000;
}

function tablesOf(c: PreparedCell, offset: number, len: number, width: number): [BlockTable, BlockTable] {
  const key = `${offset}/${len}/${width}`;
  let t = c.tables.get(key);
  if (t === undefined) {
    t = [blockTable(c.lat, offset, len, width), blockTable(c.life, offset, len, width)];
    c.tables.set(key, t);
  }
  return t;
}

const LAT_PS = [50, 95, 99];
const LIFE_PS = [50];

/**
 * Circular block bootstrap of one cell over one or more runs (stratified: each resample draws
 * blocks within every run and merges them, so a pooled value keeps each run's weight). Latency
 * percentiles in ms, goodput in queries/s, lifetime p50 in ms. Throws when a run has too few
 * seconds: callers check tooFewSeconds() first and print its note instead.
 */
export function bootstrapCell(cell: Cell, opts: BootstrapOptions): CellBootstrap {
  const c = prepared(cell);
  const n = c.runs.reduce((s, r) => s + r.len, 0);
  const block = opts.block ?? blockLength(Math.min(...c.runs.map((r) => r.len)), sessionP95S(c));
  for (const r of c.runs) {
    const why = tooFewSeconds(r.len, block);
    if (why !== null) throw new Error(`bootstrapCell ${opts.key}: ${why}`);
  }
  const B = opts.resamples ?? DEFAULT_RESAMPLES;
  const rand = generator(opts.seed ?? hashSeed(opts.key));
  const reps = Object.fromEntries(INTERVAL_METRICS.map((m) => [m, new Float64Array(B)])) as Record<
    IntervalMetric,
    Float64Array
  >;
  // Each possible block (every start, circularly; and the shorter last block) merged once.
  const full = c.runs.map((r) => tablesOf(c, r.offset, r.len, block));
  const tail = c.runs.map((r) => (r.len % block === 0 ? null : tablesOf(c, r.offset, r.len, r.len % block)));
  const draws = c.runs.reduce((s, r) => s + Math.ceil(r.len / block), 0);
  const latT: BlockTable[] = new Array<BlockTable>(draws);
  const lifeT: BlockTable[] = new Array<BlockTable>(draws);
  const rows = new Int32Array(draws);
  const scratch = (g: Grid): [Float64Array, Float64Array] => [
    new Float64Array(Math.max(1, Math.ceil(g.values.length / CHUNK))),
    new Float64Array(CHUNK),
  ];
  const [latCoarse, latFine] = scratch(c.lat);
  const [lifeCoarse, lifeFine] = scratch(c.life);
  const latQ = new Float64Array(LAT_PS.length);
  const lifeQ = new Float64Array(LIFE_PS.length);
  for (let b = 0; b < B; b++) {
    let m = 0;
    c.runs.forEach((r, ri) => {
      for (let taken = 0; taken < r.len; taken += block) {
        const start = Math.floor(rand() * r.len);
        const t = r.len - taken >= block ? full[ri]! : tail[ri]!;
        latT[m] = t[0];
        lifeT[m] = t[1];
        rows[m++] = start;
      }
    });
    const latTotal = resamplePercentiles(c.lat.values, latT, rows, m, LAT_PS, latQ, latCoarse, latFine);
    resamplePercentiles(c.life.values, lifeT, rows, m, LIFE_PS, lifeQ, lifeCoarse, lifeFine);
    reps.p50[b] = latQ[0]! / 1000;
    reps.p95[b] = latQ[1]! / 1000;
    reps.p99[b] = latQ[2]! / 1000;
    reps.goodput[b] = latTotal / n;
    reps.lifetime[b] = lifeQ[0]!;
  }
  const blocks = c.runs.reduce((s, r) => s + Math.floor(r.len / block), 0);
  return { seconds: n, block, blocks, replicates: reps };
}

/** The point values of a cell from all its seconds (the same estimators as the resamples). */
export function pointValues(cell: Cell): Record<IntervalMetric, number> {
  const c = prepared(cell);
  const [lc, lt] = merged(c.lat, c);
  const [fc, ft] = merged(c.life, c);
  const [p50, p95, p99] = percentilesOf(c.lat.values, lc, lt, [50, 95, 99]);
  const n = c.runs.reduce((s, r) => s + r.len, 0);
  return {
    p50: (p50 ?? NaN) / 1000,
    p95: (p95 ?? NaN) / 1000,
    p99: (p99 ?? NaN) / 1000,
    goodput: n > 0 ? lt / n : NaN,
    lifetime: percentilesOf(c.life.values, fc, ft, [50])[0] ?? NaN,
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
function smallSampleFactor(blocks: number | undefined): number {
  if (blocks === undefined || !Number.isFinite(blocks) || blocks < 2) return 1;
  return t975(blocks - 1) / 1.959964;
}

/**
 * The central 95 % percentile interval of resampled values, widened around their median by
 * smallSampleFactor(blocks) but never below `floor`, the least value the quantity can take (0 for
 * a latency or a rate, -1 for a relative change of one); null when too many resamples are undefined.
 */
export function percentileInterval(
  reps: Float64Array,
  level = 0.95,
  blocks?: number,
  floor = -Infinity,
): Interval | null {
  // A typed array sorts numerically in native code (the finite values' order is the same).
  const ok = reps.filter((v) => Number.isFinite(v)).sort();
  if (ok.length === 0 || ok.length < MIN_DEFINED * reps.length) return null;
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
  return { lo: Math.max(floor, mid + (q(tail) - mid) * f), hi: mid + (q(1 - tail) - mid) * f };
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
