// Are the per-run 95 % intervals calibrated? Runs one configuration on the simulator over 20
// seeds (plb and rr each), pools the 20 runs' seconds per strategy, and counts how often a run's
// interval contains the pooled value: for premium p95 in down-2 and for its change against rr
// (Δ = (plb - rr) / rr). Prints the coverage and the widths. Target: coverage >= 85 %.
//
// Run: npm run build && node --import tsx benchmarks/interval-coverage.ts
//      [--seeds 20] [--plan plans/demo.yaml] [--clients 32] [--phase down-2] [--block N]
//      [--runs DIR: keep the runs there and reuse them] [--bin bin/run.js]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Table from 'cli-table3';
import {
  blockLength,
  bootstrapCell,
  percentileInterval,
  pointValues,
  relativeChange,
  sessionP95S,
  type SecondSample,
} from '../src/metrics/intervals/intervals.js';
import { readRunSeconds } from '../src/metrics/intervals/phase-seconds.js';
import { option } from './lib/args.js';

const argv = process.argv.slice(2);
const seeds = Number(option('seeds') ?? 20);
const plan = option('plan') ?? 'plans/demo.yaml';
const clients = option('clients') ?? '32';
const phase = option('phase') ?? 'down-2';
// --plain: the bare percentile interval, without the small-sample widening (for comparison).
const plain = argv.includes('--plain');
const fixedBlock = option('block') === undefined ? undefined : Number(option('block'));
const keep = option('runs');
// The CLI to run (a copy of the build lets the tree be rebuilt while this runs).
const bin = option('bin') ?? 'bin/run.js';

const out = keep ?? mkdtempSync(join(tmpdir(), 'plb-coverage-'));
const t0 = Date.now();
const runsOf: Record<'plb' | 'rr', SecondSample[][]> = { plb: [], rr: [] };
for (let i = 0; i < seeds; i++) {
  const seed = 1000 + i;
  const dir = join(out, `seed-${seed}`);
  if (keep === undefined || !safeList(dir).length) {
    const args = [bin, 'bench', 'run', '--driver', 'sim', '--strategy', 'plb,rr', '--seed', String(seed)];
    args.push('--plan', plan, '--clients', clients, '--out', dir);
    const r = spawnSync('node', args, { stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 64 << 20 });
    if (r.status !== 0)
      throw new Error(`seed ${seed}: plb exited ${r.status}: ${r.stderr.toString().slice(-800)}`);
  }
  for (const run of safeList(dir)) {
    const summary = JSON.parse(readFileSync(join(dir, run, 'summary.json'), 'utf8')) as {
      strategy: 'plb' | 'rr';
      phases: Array<{ name: string; startS: number; endS: number }>;
    };
    const cells = readRunSeconds(join(dir, run), summary.phases).cells.get(phase);
    if (cells === undefined) throw new Error(`${run}: no phase ${phase}`);
    runsOf[summary.strategy].push(cells.premium);
  }
}
const simS = (Date.now() - t0) / 1000;

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir).filter((d) => d.includes('-'));
  } catch {
    return [];
  }
}

const pooled = { plb: pointValues(runsOf.plb).p95, rr: pointValues(runsOf.rr).p95 };
const pooledDelta = (pooled.plb - pooled.rr) / pooled.rr;
const t1 = Date.now();
let cover = 0;
let coverD = 0;
const widths: number[] = [];
const widthsD: number[] = [];
const blocks: number[] = [];
const verdicts: string[] = [];
for (let i = 0; i < runsOf.plb.length; i++) {
  const a = runsOf.plb[i]!;
  const b = runsOf.rr[i]!;
  const block = fixedBlock ?? blockLength(a.length, sessionP95S([a, b]));
  blocks.push(block);
  const ba = bootstrapCell([a], { key: `plb/${phase}/premium`, block });
  const bb = bootstrapCell([b], { key: `rr/${phase}/premium`, block });
  const iv = percentileInterval(ba.replicates.p95, 0.95, plain ? undefined : ba.blocks);
  const id = percentileInterval(
    relativeChange(ba.replicates.p95, bb.replicates.p95),
    0.95,
    plain ? undefined : Math.min(ba.blocks, bb.blocks),
  );
  if (iv === null || id === null) continue;
  if (iv.lo <= pooled.plb && pooled.plb <= iv.hi) cover++;
  if (id.lo <= pooledDelta && pooledDelta <= id.hi) coverD++;
  widths.push(iv.hi - iv.lo);
  widthsD.push(id.hi - id.lo);
  verdicts.push(id.hi < 0 ? 'better' : id.lo > 0 ? 'worse' : 'none');
}
const bootS = (Date.now() - t1) / 1000;
const n = widths.length;
const med = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length === 0 ? NaN : ((s[(s.length - 1) >> 1] ?? 0) + (s[s.length >> 1] ?? 0)) / 2;
};
const table = new Table({ head: ['what', 'pooled value', 'coverage', 'median width', 'widths min..max'] });
table.push(
  [
    `plb premium p95 ${phase} (ms)`,
    pooled.plb.toFixed(1),
    `${cover}/${n} = ${((100 * cover) / n).toFixed(0)} %`,
    med(widths).toFixed(1),
    `${Math.min(...widths).toFixed(1)}..${Math.max(...widths).toFixed(1)}`,
  ],
  [
    `Δ vs rr`,
    `${(100 * pooledDelta).toFixed(1)} %`,
    `${coverD}/${n} = ${((100 * coverD) / n).toFixed(0)} %`,
    `${(100 * med(widthsD)).toFixed(1)} pp`,
    `${(100 * Math.min(...widthsD)).toFixed(1)}..${(100 * Math.max(...widthsD)).toFixed(1)} pp`,
  ],
);
console.log(
  `${plan}, T=${clients}, ${seeds} seeds (simulator), phase ${phase}, blocks ${[...new Set(blocks)].join('/')} s`,
);
console.log(table.toString());
console.log(`per-seed verdicts of Δ: ${verdicts.join(' ')}`);
console.log(`simulator ${simS.toFixed(1)} s, bootstrap ${bootS.toFixed(2)} s`);
if (keep === undefined) rmSync(out, { recursive: true, force: true });
