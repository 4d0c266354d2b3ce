// Many routers on the simulator: does priority-aware routing still protect premium with N
// independent routers, and does the replica view bring N routers back to one router's protection?
// RQ2 (25:75, T=1000) and RQ3 (25:75, T=600) with N routers under plb, plb-admit (each view) and rr
// (no view: once per N), seeds 1..S, think time auto. Per N and view: premium's and freemium's p95
// change against rr at the same N and seed in the fault phases (down-1, down-2: the mean of the two
// phases' changes per seed), pooled over seeds with the report's t interval (overRuns); the routers'
// role disagreement and borrow flips (summary.routers); for N > 1 the change minus N = 1's, paired
// by seed, with a verdict. At N = 1 the views are one run (local), the reference for the others.
// On the simulator, figures are the model's: a claim from the simulator alone.
//
//   npx tsx benchmarks/many-routers.ts [--seeds 3] [--ns 1,4,16,64] [--cells rq2,rq3]
//     [--out runs/many-routers] [--chart runs/many-routers/protection.svg] [--keep]
//     [--driver docker --name <cluster> --workers 2 --arms rr:-,plb:local]
// On a real driver (an existing cluster --name), runs go seed by seed (every N and arm of a seed
// before the next seed, so drift in the host hits every arm alike), N > 1 runs with --workers W,
// and --arms narrows what runs (strategy:view; rr takes no view).
// Each run's figures are kept in --out/figures (a run done is not done again); without --keep the
// run directories are removed once read.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { overRuns } from '../src/report/evidence/evidence.js';
import type { Estimate } from '../src/run-format/evidence.js';
import { option } from './lib/args.js';
import { formatInterval, pairwise, side } from './lib/paired.js';
import { protectionChart, type ChartPanel } from './lib/protection-chart.js';

interface Cell {
  name: string;
  plan: string;
  clients: number;
}
const CELLS: Record<string, Cell> = {
  rq2: { name: 'rq2', plan: 'plans/paper/rq2.yaml', clients: 1000 },
  rq3: { name: 'rq3', plan: 'plans/paper/rq3.yaml', clients: 600 },
};
const FAULT_PHASES = ['down-1', 'down-2'];
const VIEWS = ['local', 'global', 'replica'] as const;
const PRIORITY = ['plb', 'plb-admit'] as const;

const seeds = Number(option('seeds') ?? 3);
const ns = (option('ns') ?? '1,4,16,64').split(',').map(Number);
const out = option('out') ?? 'runs/many-routers';
const chartPath = option('chart') ?? join(out, 'protection.svg');
const keep = process.argv.includes('--keep');
const driver = option('driver') ?? 'sim';
const cluster = option('name');
const workers = option('workers');
const armsOption = option('arms')
  ?.split(',')
  .map((a) => {
    const [strategy, view] = a.split(':');
    if (!strategy || !view) throw new Error(`--arms: ${a} is not strategy:view (e.g. plb:local, rr:-)`);
    return { strategy, view };
  });
if (driver !== 'sim' && !cluster) throw new Error('--name: a real driver runs on an existing cluster');
const cells = (option('cells') ?? 'rq2,rq3').split(',').map((c) => {
  const cell = CELLS[c];
  if (!cell) throw new Error(`--cells: unknown cell ${c} (cells: ${Object.keys(CELLS).join(', ')})`);
  return cell;
});

/** What a run gives: fault-phase p95 per class, and with N > 1 disagreement and flips. */
interface Figures {
  p95: Record<'premium' | 'freemium', Record<string, number>>;
  disagreeMean: number | null;
  disagreeMax: number | null;
  flipsPerRouter: number | null;
  wallS: number;
  /** The child's CPU (user + system, every thread; benchmarks/rss-hook.mjs). */
  cpuS: number;
}

interface Arm {
  strategy: string;
  view: string;
}

const key = (cell: Cell, arm: Arm, n: number, seed: number): string =>
  `${cell.name}-${arm.strategy}-${arm.view}-n${n}-seed${seed}`;

function run(cell: Cell, arm: Arm, n: number, seed: number): Figures {
  const k = key(cell, arm, n, seed);
  const cached = join(out, 'figures', `${k}.json`);
  if (existsSync(cached)) return JSON.parse(readFileSync(cached, 'utf8')) as Figures;
  const dir = join(out, 'runs', k);
  rmSync(dir, { recursive: true, force: true });
  const usage = join(out, 'figures', `${k}.usage.json`);
  mkdirSync(dirname(usage), { recursive: true });
  const args = [
    ...[
      '--import',
      './benchmarks/rss-hook.mjs',
      'bin/run.js',
      'bench',
      'run',
      '--driver',
      driver,
      '--plan',
      cell.plan,
      '--strategy',
      arm.strategy,
    ],
    ...['--mix', '25:75', '--clients', String(cell.clients), '--think-time', 'auto'],
    ...['--seed', String(seed), '--routers', String(n), '--out', dir, '--progress', '0'],
    ...(n > 1 && arm.view !== '-' ? ['--router-view', arm.view] : []),
    ...(cluster ? ['--name', cluster] : []),
    ...(n > 1 && workers ? ['--workers', workers] : []),
  ];
  const t0 = process.hrtime.bigint();
  const r = spawnSync('node', args, {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, PLB_RSS_FILE: usage },
  });
  if (r.status !== 0) throw new Error(`plb ${args.slice(3).join(' ')} exited ${r.status}:\n${r.stderr}`);
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  const sub = readdirSync(dir).find((d) => existsSync(join(dir, d, 'summary.json')));
  if (!sub) throw new Error(`${dir}: no summary.json`);
  const s = JSON.parse(readFileSync(join(dir, sub, 'summary.json'), 'utf8')) as Summary;
  const u = JSON.parse(readFileSync(usage, 'utf8')) as { userUs: number; systemUs: number };
  const f = figuresOf(s, wallS, (u.userUs + u.systemUs) / 1e6);
  rmSync(usage);
  mkdirSync(dirname(cached), { recursive: true });
  writeFileSync(cached, `${JSON.stringify(f)}\n`);
  if (!keep) rmSync(dir, { recursive: true, force: true });
  console.error(`${k}: ${wallS.toFixed(0)} s`);
  return f;
}

interface Summary {
  workers?: unknown[];
  phases: { name: string; classes: Record<'premium' | 'freemium', { p95: number }> }[];
  routers?: {
    count: number;
    perRouter: { borrowFlips: number }[];
    disagreement: { phase: string; meanReplicas: number; maxReplicas: number }[];
  };
}

function figuresOf(s: Summary, wallS: number, cpuS: number): Figures {
  const p95: Figures['p95'] = { premium: {}, freemium: {} };
  for (const p of s.phases)
    if (FAULT_PHASES.includes(p.name))
      for (const cls of ['premium', 'freemium'] as const) p95[cls][p.name] = p.classes[cls].p95;
  // Under --workers the routers' state lives in the workers: disagreement is not sampled there.
  const d = s.workers ? [] : (s.routers?.disagreement.filter((x) => FAULT_PHASES.includes(x.phase)) ?? []);
  const flips = s.routers?.perRouter.map((p) => p.borrowFlips) ?? [];
  return {
    p95,
    disagreeMean: d.length ? d.reduce((a, x) => a + x.meanReplicas, 0) / d.length : null,
    disagreeMax: d.length ? Math.max(...d.map((x) => x.maxReplicas)) : null,
    flipsPerRouter: flips.length ? flips.reduce((a, b) => a + b, 0) / flips.length : null,
    wallS,
    cpuS,
  };
}

/** Per seed: the mean over the fault phases of p95(arm) / p95(rr) - 1. */
function changes(arm: Figures[], rr: Figures[], cls: 'premium' | 'freemium'): number[] {
  return arm.slice(0, Math.min(arm.length, rr.length)).map((a, i) => {
    const b = (rr[i] as Figures).p95[cls];
    const xs = FAULT_PHASES.map((p) => (a.p95[cls][p] ?? NaN) / (b[p] ?? NaN) - 1);
    return xs.reduce((x, y) => x + y, 0) / xs.length;
  });
}

const pct = (e: Estimate): string =>
  formatInterval(
    {
      value: e.value === null ? null : e.value * 100,
      lo: e.lo === null ? null : e.lo * 100,
      hi: e.hi === null ? null : e.hi * 100,
    },
    0,
  );

const meanOf = (xs: (number | null)[]): number | null => {
  const v = xs.filter((x): x is number => x !== null);
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
};

interface Row {
  cell: string;
  strategy: string;
  view: string;
  n: number;
  premium: number[];
  freemium: number[];
  figures: Figures[];
}

function arms(n: number): Arm[] {
  const views = n === 1 ? ['local'] : VIEWS;
  if (armsOption) return armsOption.filter((a) => a.strategy === 'rr' || n > 1 || a.view === 'local');
  return [
    { strategy: 'rr', view: '-' },
    ...PRIORITY.flatMap((s) => views.map((view) => ({ strategy: s, view }))),
  ];
}

function main(): void {
  const t0 = Date.now();
  const rows: Row[] = [];
  // A real cluster drifts: run seed-major first (the loop below then reads the kept figures).
  if (driver !== 'sim')
    for (let seed = 1; seed <= seeds; seed++)
      for (const cell of cells) for (const n of ns) for (const arm of arms(n)) run(cell, arm, n, seed);
  for (const cell of cells) {
    for (const n of ns) {
      const bySeed = new Map<string, Figures[]>();
      for (let seed = 1; seed <= seeds; seed++)
        for (const arm of arms(n)) {
          const k = `${arm.strategy}/${arm.view}`;
          bySeed.set(k, [...(bySeed.get(k) ?? []), run(cell, arm, n, seed)]);
        }
      const rr = bySeed.get('rr/-') as Figures[];
      for (const arm of arms(n)) {
        if (arm.strategy === 'rr') continue;
        const f = bySeed.get(`${arm.strategy}/${arm.view}`) as Figures[];
        rows.push({
          cell: cell.name,
          strategy: arm.strategy,
          view: arm.view,
          n,
          premium: changes(f, rr, 'premium'),
          freemium: changes(f, rr, 'freemium'),
          figures: f,
        });
      }
    }
  }
  print(rows, ((Date.now() - t0) / 1000).toFixed(0));
  if (driver === 'sim') printCpu(rows);
  chart(rows);
}

function print(rows: Row[], wall: string): void {
  console.log(
    `many routers on ${driver === 'sim' ? "the simulator (the model's figures" : `${driver} (${cluster}${workers ? `, N > 1 in ${workers} workers` : ''}`}; 25:75, think time auto, ${seeds} seeds, wall ${wall} s). ` +
      `p95 change against rr at the same N and seed in down-1 and down-2 (mean of the two), mean over seeds ` +
      `[95 % t interval], in %; disagree = replicas two routers see differently (mean per second, max); ` +
      `flips = borrow/return/reclaim per router; vs N=1 = premium change minus one router's, paired by seed`,
  );
  console.log(
    'cell strategy   view     N   premium vs rr       freemium vs rr      disagree    flips   vs N=1 (premium)',
  );
  for (const r of rows) {
    const one = rows.find((x) => x.cell === r.cell && x.strategy === r.strategy && x.n === 1);
    let vs = '';
    if (one && r.n > 1) {
      const d = overRuns(pairwise(r.premium, one.premium, (a, b) => a - b));
      const s = side(d);
      vs = `${pct(d)} ${s === 'higher' ? 'less protection' : s === 'lower' ? 'more protection' : 'no difference detected'}`;
    }
    const dm = meanOf(r.figures.map((f) => f.disagreeMean));
    const dx = meanOf(r.figures.map((f) => f.disagreeMax));
    const fl = meanOf(r.figures.map((f) => f.flipsPerRouter));
    console.log(
      [
        r.cell.padEnd(4),
        r.strategy.padEnd(10),
        (r.n === 1 ? '(one)' : r.view).padEnd(8),
        String(r.n).padStart(2),
        pct(overRuns(r.premium)).padEnd(19),
        pct(overRuns(r.freemium)).padEnd(19),
        (dm === null ? '-' : `${dm.toFixed(2)} ${dx?.toFixed(0)}`).padEnd(11),
        (fl === null ? '-' : fl.toFixed(1)).padStart(5),
        '  ' + vs,
      ].join(' '),
    );
  }
}

/** The simulator's CPU per run by N (the issue's speed target: N = 64 within 2x N = 1). */
function printCpu(rows: Row[]): void {
  console.log('simulator CPU per run, s (user + system of the child; median over seeds) and vs N = 1');
  for (const r of rows) {
    const one = rows.find((x) => x.cell === r.cell && x.strategy === r.strategy && x.n === 1);
    const med = (f: Figures[]): number => {
      const xs = f.map((x) => x.cpuS).sort((a, b) => a - b);
      return xs[xs.length >> 1] as number;
    };
    const ratio = one ? (med(r.figures) / med(one.figures)).toFixed(2) : '?';
    console.log(
      `${r.cell.padEnd(4)} ${r.strategy.padEnd(10)} ${(r.n === 1 ? '(one)' : r.view).padEnd(8)} ${String(r.n).padStart(2)}  ${med(r.figures).toFixed(2).padStart(6)}  ${ratio}x`,
    );
  }
}

function chart(rows: Row[]): void {
  const panels: ChartPanel[] = cells.map((cell) => ({
    title: `${cell.name.toUpperCase()} (25:75, T=${cell.clients}): premium p95 vs rr in the fault phases`,
    lines: PRIORITY.flatMap((s) =>
      VIEWS.map((view) => ({
        label: `${s} ${view}`,
        points: ns.map((n) => {
          const r = rows.find(
            (x) => x.cell === cell.name && x.strategy === s && x.n === n && (n === 1 || x.view === view),
          );
          const e = overRuns(r?.premium ?? []);
          const p = (v: number | null): number | null => (v === null ? null : v * 100);
          return { n, value: p(e.value), lo: p(e.lo), hi: p(e.hi) };
        }),
      })),
    ),
  }));
  mkdirSync(dirname(chartPath), { recursive: true });
  writeFileSync(
    chartPath,
    protectionChart(
      panels,
      `${driver === 'sim' ? 'simulator' : driver}, ${seeds} seeds, mean [95 % t interval]; N = 1 is one router for every view`,
    ),
  );
  console.log(`chart: ${chartPath}`);
}

main();
