// Which readings should be plb's default: `plb` against `paper`, on the experiments that decide it
// (DESIGN: the paper's literal reading is the default unless a pooled verdict shows another is
// better). Per cell and seed both presets run with the same seed (the same arrivals, interleaved so
// drift does not favour one); the change plb/paper - 1 is taken per seed and pooled over seeds
// with the report's own t interval (overRuns: at least 3 seeds). The rule, from the issue:
// plb stays the default only if it is better with a verdict for premium's p95 in the fault phases
// of RQ2 and RQ3 and no worse with a verdict for freemium's goodput or in `ref`.
//
//   npx tsx benchmarks/readings-decision.ts [--driver sim|docker] [--seeds 5] [--out dir]
//     [--cells rq2,rq3-25:75,rq3-50:50,rq3-75:25] [--name cluster] [--quick] [--think-time 5000ms]
// With --driver docker a cluster named --name must be up (plb cluster up --driver docker
// --max-connections 1100); every run reuses it. Figures go to stdout; run directories stay in --out.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { overRuns } from '../src/report/evidence/evidence.js';
import { verdictOf } from '../src/report/evidence/verdicts.js';
import type { Estimate } from '../src/run-format/evidence.js';
import { option } from './lib/args.js';
import { formatInterval, pairwise } from './lib/paired.js';

interface Cell {
  name: string;
  plan: string;
  mix: string;
  clients: number;
}

const CELLS: Record<string, Cell> = {
  rq2: { name: 'rq2', plan: 'rq2', mix: '25:75', clients: 1000 },
  'rq3-25:75': { name: 'rq3-25:75', plan: 'rq3', mix: '25:75', clients: 600 },
  'rq3-50:50': { name: 'rq3-50:50', plan: 'rq3', mix: '50:50', clients: 600 },
  'rq3-75:25': { name: 'rq3-75:25', plan: 'rq3', mix: '75:25', clients: 600 },
};
/** The two readings compared, candidate first (--pair 'plb/paper,floors=mixed' for an ablation). */
const PRESETS = (option('pair') ?? 'plb/paper').split('/') as [string, string];
if (PRESETS.length !== 2) throw new Error(`--pair: expected A/B (got ${option('pair')})`);
type Preset = string;
const [CAND, BASE] = PRESETS;

interface ClassCell {
  p95: number;
  goodput: number;
}
type PhaseFigures = Map<string, Record<'premium' | 'freemium', ClassCell>>;

const driver = option('driver') ?? 'sim';
const seeds = Number(option('seeds') ?? (driver === 'sim' ? 5 : 3));
const out = option('out') ?? `runs/readings-decision-${driver}`;
const quick = process.argv.includes('--quick');
const cells = (option('cells') ?? Object.keys(CELLS).join(',')).split(',').map((c) => {
  const cell = CELLS[c];
  if (!cell) throw new Error(`--cells: unknown cell ${c} (cells: ${Object.keys(CELLS).join(', ')})`);
  return cell;
});

function runDir(cell: Cell, preset: Preset, seed: number): string {
  return join(out, cell.name.replace(':', '-'), preset.replace(/[^a-z0-9-]+/gi, '_'), `seed-${seed}`);
}

/**
 * Think time per cell: auto on the simulator (computed, the same every run); on a real cluster the
 * first run's measurement is reused by every other run of the cell, so both presets see one load
 * (a fresh calibration varies by about 15 % from one try to the next).
 */
const thinkTime = new Map<string, string>();

function thinkTimeOf(cell: Cell): string {
  const fixed = option('think-time') ?? thinkTime.get(cell.name);
  if (fixed !== undefined || driver === 'sim') return fixed ?? 'auto';
  for (const p of PRESETS) {
    for (let seed = 1; seed <= seeds; seed++) {
      const dir = runDir(cell, p, seed);
      const sub = existsSync(dir)
        ? readdirSync(dir).find((d) => existsSync(join(dir, d, 'config.json')))
        : undefined;
      if (!sub) continue;
      const c = JSON.parse(readFileSync(join(dir, sub, 'config.json'), 'utf8')) as {
        workload?: { classes: { premium: { thinkTimeMs: number } } };
      };
      // The think time the cell's runs used (measured by the first, given to the others): a run
      // done again after the first was removed keeps the load of the rest.
      const ms = c.workload?.classes.premium.thinkTimeMs;
      if (ms !== undefined) {
        thinkTime.set(cell.name, `${ms}ms`);
        return `${ms}ms`;
      }
    }
  }
  return 'auto';
}

function run(cell: Cell, preset: Preset, seed: number): void {
  const dir = runDir(cell, preset, seed);
  if (existsSync(dir) && readdirSync(dir).some((d) => existsSync(join(dir, d, 'summary.json')))) return;
  const plan = quick ? `plans/paper/quick/${cell.plan}.yaml` : `plans/paper/${cell.plan}.yaml`;
  const args = [
    'bin/run.js',
    'bench',
    'run',
    '--plan',
    plan,
    '--strategy',
    'plb',
    '--mix',
    cell.mix,
    '--clients',
    String(cell.clients),
    '--think-time',
    thinkTimeOf(cell),
    '--readings',
    preset,
    '--seed',
    String(seed),
    '--driver',
    driver,
    '--out',
    dir,
    '--progress',
    '0',
    ...(driver === 'sim' ? [] : ['--name', option('name') ?? 'plb']),
  ];
  const t0 = Date.now();
  const r = spawnSync('node', args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`plb ${args.slice(1).join(' ')} exited ${r.status}:\n${r.stderr}`);
  console.error(`${cell.name} ${preset} seed ${seed}: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}

function figures(cell: Cell, preset: Preset, seed: number): PhaseFigures {
  const dir = runDir(cell, preset, seed);
  const sub = readdirSync(dir).find((d) => existsSync(join(dir, d, 'summary.json')));
  if (!sub) throw new Error(`${dir}: no summary.json`);
  const s = JSON.parse(readFileSync(join(dir, sub, 'summary.json'), 'utf8')) as {
    phases: { name: string; classes: Record<'premium' | 'freemium', ClassCell> }[];
  };
  return new Map(s.phases.map((p) => [p.name, p.classes]));
}

interface Row {
  cell: string;
  phase: string;
  cls: 'premium' | 'freemium';
  metric: 'p95' | 'goodput';
  change: Estimate;
  verdict: string;
  plb: number;
  paper: number;
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

function compare(cell: Cell): Row[] {
  const by = (p: Preset) => Array.from({ length: seeds }, (_, i) => figures(cell, p, i + 1));
  const plb = by(CAND);
  const paper = by(BASE);
  const rows: Row[] = [];
  for (const phase of plb[0]!.keys()) {
    for (const cls of ['premium', 'freemium'] as const) {
      for (const metric of ['p95', 'goodput'] as const) {
        const a = plb.map((f) => f.get(phase)?.[cls][metric] ?? NaN);
        const b = paper.map((f) => f.get(phase)?.[cls][metric] ?? NaN);
        const change = overRuns(pairwise(a, b, (x, y) => x / y - 1));
        const verdict =
          change.lo === null || change.hi === null ? 'no interval' : verdictOf(metric, change.lo, change.hi);
        rows.push({ cell: cell.name, phase, cls, metric, change, verdict, plb: mean(a), paper: mean(b) });
      }
    }
  }
  return rows;
}

const pct = (e: Estimate): string =>
  formatInterval(
    {
      value: e.value === null ? null : e.value * 100,
      lo: e.lo === null ? null : e.lo * 100,
      hi: e.hi === null ? null : e.hi * 100,
    },
    0,
  )
    .replace(/(-?\d+)/g, '$1%')
    .replace(/%%/g, '%');

function main(): void {
  const t0 = Date.now();
  for (const cell of cells) {
    for (let seed = 1; seed <= seeds; seed++) {
      // Alternate which preset runs first, so a drift of the machine favours neither.
      const order = seed % 2 === 1 ? PRESETS : [...PRESETS].reverse();
      for (const p of order) run(cell, p, seed);
    }
  }
  const rows = cells.flatMap(compare);
  console.log(
    `readings decision (${driver}${quick ? ', quick plans' : ''}, ${seeds} seeds per cell, paired by seed; ` +
      `change = ${CAND} / ${BASE} - 1, mean over seeds [95 % t interval]); wall ${((Date.now() - t0) / 1000).toFixed(0)} s`,
  );
  console.log(
    `cell       phase      class     metric   ${CAND.slice(0, 8).padEnd(8)} ${BASE.slice(0, 8).padEnd(8)} change [95 %]            verdict for ${CAND}`,
  );
  for (const r of rows) {
    console.log(
      [
        r.cell.padEnd(10),
        r.phase.padEnd(10),
        r.cls.padEnd(9),
        r.metric.padEnd(8),
        r.plb.toFixed(1).padStart(8),
        r.paper.toFixed(1).padStart(8),
        pct(r.change).padEnd(24),
        r.verdict,
      ].join(' '),
    );
  }
  // The rule.
  const fault = (r: Row) => r.phase.startsWith('down-');
  const premiumBetter = rows.filter((r) => fault(r) && r.cls === 'premium' && r.metric === 'p95');
  const noWorse = rows.filter((r) => (r.cls === 'freemium' && r.metric === 'goodput') || r.phase === 'ref');
  const allBetter = premiumBetter.every((r) => r.verdict === 'better');
  const worse = noWorse.filter((r) => r.verdict === 'worse');
  console.log(
    `premium p95 in the fault phases: ${CAND} better in ${premiumBetter.filter((r) => r.verdict === 'better').length} ` +
      `of ${premiumBetter.length} cells, worse in ${premiumBetter.filter((r) => r.verdict === 'worse').length}`,
  );
  console.log(
    `freemium goodput and ref: ${CAND} worse in ${worse.length} of ${noWorse.length} cells` +
      (worse.length > 0
        ? ` (${worse.map((r) => `${r.cell} ${r.phase} ${r.cls} ${r.metric}`).join('; ')})`
        : ''),
  );
  console.log(
    `default by the rule: ${allBetter && worse.length === 0 ? `${CAND} (better with a verdict, no worse)` : BASE}`,
  );
}

main();
