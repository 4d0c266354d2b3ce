// The simulator against the real cluster: the same plan, seed, clients and strategies on the
// Docker cluster and in `--driver sim`; per phase and class, p95 and goodput side by side with
// their ratio (sim / real), and whether the premium p95 ranking of the strategies agrees in every
// down phase. Targets (issue 10): p95 within ±30 %, goodput within ±10 %.
//
// Run (builds nothing; `npm run build` first):
//   node --import tsx benchmarks/sim-vs-real.ts --plan plans/demo-cascade.yaml --clients 32 \
//     --seed 7 --strategy plb,rr,static [--think-time 250ms] [--real DIR] [--sim DIR] \
//     [--real-driver docker|local] [--sim-only] [-- extra bench flags]
// A plan with network faults (plans/guide/partitioned-replica.yaml, one-way-partition, lossy-link,
// slow-replica, replica-cut-from-primary) adds the network cells (sim-vs-real-net.ts): detection,
// false detections, fault-phase p95 with intervals, the faulted replica's share of new sessions.
// Those need root on the real side: `--real-driver local` (rules on lo). `--sim-only` runs (or, with
// --sim, reads) the simulator's side alone and prints its network cells; `-- --repeat 3` gives
// three seeds a side.
// When it makes the Docker runs itself, it first runs `plb calibrate` on the same cluster and gives
// the simulator that calibration (unless the extra flags name one): the same host measured hours
// apart differed by up to 2.7x in a scan's CPU, so a calibration is only good next to its runs.
// With --real, the simulator is priced like those runs when one measured its costs (think time
// auto): `--calibration <that run>` and the runs' think time (sim-vs-real-priced.ts; `--shipped`
// keeps the shipped prices, `-- --calibration F` gives others). At a thousand sessions:
//   --plan plans/paper/rq2.yaml --clients 1000 -- --mix 25:75 (the calibration cascade) and
//   --plan plans/fidelity/heldout-cascade.yaml --clients 1000 -- --mix 35:65 --target-cpu 0.6
//   (the held-out one), each with --real <docker runs> --strategy plb,rr -- --repeat 3.
// --real/--sim reuse run directories already made (each holding one run per strategy); `--sim` may
// name a second real series of the same seed, which gives the noise floor: how well the real
// cluster agrees with itself at these tolerances. Either may be a comma-separated list (say, one
// series per seed): each side's figures are then pooled over its runs as `plb report` pools them.
//
// Besides the ±30 % / ±10 % counts it prints, per cell, whether the two 95 % intervals overlap, and
// for every pair of strategies in each down phase the premium p95 verdict on both sides (issue 23:
// where the real intervals overlap the simulator's must overlap too). With two real series or more
// it also prints the noise floor: each real series against the pool of the others, and against the
// simulator, in the same counts (runs the report keeps apart, other settings, are refused).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Table from 'cli-table3';
import type { RunSummary } from '../src/run-format/summary.js';
import { changeText, verdictText } from '../src/report/evidence/verdicts.js';
import {
  agreement,
  estimateOf,
  overlaps,
  pairOf,
  readEvidence,
  verdictsAgree,
  type Agreement,
} from './sim-vs-real-verdicts.js';
import { networkCells } from './sim-vs-real-net.js';
import { pricedLike } from './sim-vs-real-priced.js';

const P95_TOLERANCE = 0.3;
const GOODPUT_TOLERANCE = 0.1;

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const own = dash >= 0 ? argv.slice(0, dash) : argv;
const extra = dash >= 0 ? argv.slice(dash + 1) : [];
const arg = (name: string, fallback?: string): string | undefined => {
  const i = own.indexOf(`--${name}`);
  return i >= 0 ? own[i + 1] : fallback;
};
const plan = arg('plan', 'plans/demo-cascade.yaml') as string;
const clients = arg('clients', '32') as string;
const seed = arg('seed', '7') as string;
const strategy = arg('strategy', 'plb,rr,static') as string;
const think = arg('think-time');
const realDriver = arg('real-driver', 'docker') as 'docker' | 'local';
const simOnly = own.includes('--sim-only');

/** `plb calibrate` on the cluster the Docker runs use; the file's path. */
function calibrate(): string {
  const i = extra.indexOf('--name');
  const name = i >= 0 ? extra[i + 1] : undefined;
  const out = join(mkdtempSync(join(tmpdir(), 'plb-cal-')), 'calibration.json');
  const args = [
    'bin/run.js',
    'calibrate',
    '--driver',
    realDriver,
    ...(name ? ['--name', name] : []),
    '--out',
    out,
  ];
  process.stderr.write(`$ node ${args.join(' ')}\n`);
  const r = spawnSync('node', args, { stdio: ['ignore', 'ignore', 'inherit'] });
  if (r.status !== 0) throw new Error(`plb calibrate exited ${r.status}`);
  return out;
}

function bench(driver: 'docker' | 'local' | 'sim', more: string[] = []): { dir: string; wallS: number } {
  const out = mkdtempSync(join(tmpdir(), `plb-${driver}-`));
  const args = [
    'bin/run.js',
    'bench',
    'run',
    '--driver',
    driver,
    '--plan',
    plan,
    '--clients',
    clients,
    '--seed',
    seed,
    '--strategy',
    strategy,
    '--out',
    out,
    ...(think ? ['--think-time', think] : []),
    ...(driver === 'sim' ? extra : extra.filter((_, i) => !isCalibration(i))),
    ...more,
  ];
  process.stderr.write(`$ node ${args.join(' ')}\n`);
  const t0 = Date.now();
  const r = spawnSync('node', args, { stdio: ['ignore', 'ignore', 'inherit'] });
  if (r.status !== 0) throw new Error(`plb bench run --driver ${driver} exited ${r.status}`);
  return { dir: out, wallS: (Date.now() - t0) / 1000 };
}

/** A run's summary and its replicas' quota (cores), by strategy. */
type Run = RunSummary & { cpus: number };

function summaries(dir: string): Map<string, Run> {
  const out = new Map<string, Run>();
  for (const name of readdirSync(dir)) {
    const f = join(dir, name, 'summary.json');
    if (!existsSync(f)) continue;
    const s = JSON.parse(readFileSync(f, 'utf8')) as RunSummary;
    const config = JSON.parse(readFileSync(join(dir, name, 'config.json'), 'utf8')) as {
      cluster: { cpus: number };
    };
    out.set(s.strategy, { ...s, cpus: config.cluster.cpus });
  }
  return out;
}

/** Replica CPU per query served in a phase (ms of one core; connects and health checks included). */
function cpuPerQueryMs(run: Run | undefined, phase: string): number | null {
  const ph = run?.phases.find((p) => p.name === phase);
  if (!run || !ph) return null;
  let cpuMs = 0;
  let queries = 0;
  for (const r of Object.values(ph.replicas)) {
    cpuMs += (r.cpuMean ?? 0) * run.cpus * (ph.endS - ph.startS) * 1000;
    queries += r.queries;
  }
  return queries > 0 ? cpuMs / queries : null;
}

/** `--calibration F` in the extra flags (the simulator's; the Docker runs have none). */
function isCalibration(i: number): boolean {
  return extra[i] === '--calibration' || extra[i - 1] === '--calibration';
}

if (simOnly) {
  const dir = arg('sim') ?? bench('sim').dir;
  const dirs = dir.split(',');
  const strategies = [...summaries(dirs[0] as string).keys()];
  const cells = networkCells([{ name: 'sim', dirs, estimates: readEvidence(dirs, strategies).estimates }]);
  process.stdout.write(`${cells || 'no network fault in the plan\n'}sim runs: ${dir}\n`);
  process.exit(0);
}
const ownCalibration = !arg('real') && !extra.includes('--calibration') ? calibrate() : undefined;
const realDir = arg('real') ?? bench(realDriver).dir;
// Given real runs that measured their costs, the simulator is priced like them (--shipped: not).
const priced =
  arg('real') && !ownCalibration && !extra.includes('--calibration') && !own.includes('--shipped')
    ? pricedLike(realDir.split(','), think === undefined && !extra.includes('--think-time'))
    : null;
const simRun = arg('sim')
  ? { dir: arg('sim') as string, wallS: NaN }
  : bench('sim', ownCalibration ? ['--calibration', ownCalibration] : (priced?.flags ?? []));
const realDirs = realDir.split(',');
const simDirs = simRun.dir.split(',');
const real = summaries(realDirs[0] as string);
const sim = summaries(simDirs[0] as string);
const names = [...real.keys()].filter((n) => sim.has(n));
/** The first strategy's real run: its phases are the rows of the per-phase tables. */
const first = real.get(names[0] ?? '');
const realEv = readEvidence(realDirs, names);
const simEv = readEvidence(simDirs, names);
// The cells' figures are the reports' (a run's own p95 and goodput, or pooled over several runs).
const value = (ev: typeof realEv, n: string, ph: string, cls: string, m: 'p95' | 'goodput'): number | null =>
  estimateOf(ev.estimates, n, ph, cls, m)?.value ?? null;

const ratio = (s: number | null, r: number | null): number | null =>
  s === null || r === null || r === 0 ? null : s / r;
const pct = (x: number | null): string =>
  x === null ? '-' : `${x >= 1 ? '+' : ''}${((x - 1) * 100).toFixed(0)}%`;
const fmt = (x: number | null, d = 1): string => (x === null ? '-' : x.toFixed(d));

const table = new Table({
  head: [
    'strategy',
    'phase',
    'class',
    'p95 real',
    'p95 sim',
    'sim/real',
    'ivs',
    'q/s real',
    'q/s sim',
    'sim/real',
    'ivs',
  ],
  style: { head: [], border: [] },
});
let cells = 0;
let p95Ok = 0;
/** At a thousand sessions the issue's target is looser: the simulator's p95 within 2x of the real. */
let p95Within2x = 0;
let goodputOk = 0;
/**
 * Cells whose real p95 is itself known to ±30 % (its 95 % interval inside [0.7, 1.3] of its
 * estimate), and of those the ones the simulator gets within ±30 %: where the real interval is
 * wider, a ±30 % miss may be the real cluster's own noise, not the model's error.
 */
const pinned = { of: 0, ok: 0 };
const pinnedByReal = (name: string, phase: string, cls: string): boolean => {
  const e = estimateOf(realEv.estimates, name, phase, cls, 'p95');
  if (!e || e.value === null || e.lo === null || e.hi === null || e.value <= 0) return false;
  return e.lo >= e.value * (1 - P95_TOLERANCE) && e.hi <= e.value * (1 + P95_TOLERANCE);
};
const overlap = { p95: { yes: 0, of: 0 }, goodput: { yes: 0, of: 0 } };
const ivs = (name: string, phase: string, cls: string, metric: 'p95' | 'goodput'): string => {
  const o = overlaps(
    estimateOf(realEv.estimates, name, phase, cls, metric),
    estimateOf(simEv.estimates, name, phase, cls, metric),
  );
  if (o === null) return '-';
  overlap[metric].of++;
  if (o) overlap[metric].yes++;
  return o ? 'overlap' : 'apart';
};
for (const [name, r] of real) {
  const s = sim.get(name);
  if (!s) continue;
  for (const ph of r.phases) {
    const sp = s.phases.find((p) => p.name === ph.name);
    if (!sp) continue;
    for (const cls of ['premium', 'freemium'] as const) {
      const a = {
        p95: value(realEv, name, ph.name, cls, 'p95'),
        goodput: value(realEv, name, ph.name, cls, 'goodput'),
      };
      const b = {
        p95: value(simEv, name, ph.name, cls, 'p95'),
        goodput: value(simEv, name, ph.name, cls, 'goodput'),
      };
      const rp = ratio(b.p95, a.p95);
      const rg = ratio(b.goodput, a.goodput);
      cells++;
      const within = rp !== null && Math.abs(rp - 1) <= P95_TOLERANCE;
      if (within) p95Ok++;
      if (rp !== null && rp >= 0.5 && rp <= 2) p95Within2x++;
      if (pinnedByReal(name, ph.name, cls)) {
        pinned.of++;
        if (within) pinned.ok++;
      }
      if (rg !== null && Math.abs(rg - 1) <= GOODPUT_TOLERANCE) goodputOk++;
      table.push([
        name,
        ph.name,
        cls,
        fmt(a.p95),
        fmt(b.p95),
        pct(rp),
        ivs(name, ph.name, cls, 'p95'),
        fmt(a.goodput),
        fmt(b.goodput),
        pct(rg),
        ivs(name, ph.name, cls, 'goodput'),
      ]);
    }
  }
}
process.stdout.write(`${table.toString()}\n`);
process.stdout.write(
  `cells: ${cells}; p95 within ±${P95_TOLERANCE * 100}%: ${p95Ok}; within 2x: ${p95Within2x}; goodput within ±${GOODPUT_TOLERANCE * 100}%: ${goodputOk}\n` +
    `95 % intervals overlap (cells with both): p95 ${overlap.p95.yes}/${overlap.p95.of}; goodput ${overlap.goodput.yes}/${overlap.goodput.of}\n` +
    `cells whose real p95 interval is within ±${P95_TOLERANCE * 100}% of it: ${pinned.of}; of them sim p95 within ±${P95_TOLERANCE * 100}%: ${pinned.ok}\n`,
);

// Where the cost differs: what a query cost the replicas on each side (the first run of each).
const cost = new Table({
  head: ['strategy', ...(first?.phases.map((p) => p.name) ?? [])],
  style: { head: [], border: [] },
});
for (const n of names) {
  cost.push([
    n,
    ...(real.get(n)?.phases ?? []).map((ph) => {
      const a = cpuPerQueryMs(real.get(n), ph.name);
      const b = cpuPerQueryMs(sim.get(n), ph.name);
      return `${fmt(a, 2)} / ${fmt(b, 2)} (${pct(ratio(b, a))})`;
    }),
  ]);
}
process.stdout.write(
  `replica CPU per query served, ms: real / sim (sim/real), the first series of each side\n${cost.toString()}\n`,
);

// Ranking of strategies by premium p95, per down phase (K+ below the plan's K).
for (const ph of first?.phases ?? []) {
  if (!ph.name.startsWith('down')) continue;
  const rank = (ev: typeof realEv): string =>
    [...names]
      .map((n) => ({ n, p: value(ev, n, ph.name, 'premium', 'p95') ?? Infinity }))
      .sort((a, b) => a.p - b.p)
      .map((x) => x.n)
      .join(' < ');
  const a = rank(realEv);
  const b = rank(simEv);
  process.stdout.write(
    `${ph.name} premium p95 ranking: real ${a}; sim ${b}: ${a === b ? 'same' : 'DIFFERENT'}\n`,
  );
}

// The same ranking with its intervals: every pair's verdict on both sides.
const pairs = new Table({
  head: ['phase', 'premium p95', 'real', 'sim', 'agree'],
  style: { head: [], border: [] },
});
let agreed = 0;
let compared = 0;
for (const ph of first?.phases ?? []) {
  if (!ph.name.startsWith('down')) continue;
  for (const [i, a] of names.entries()) {
    for (const b of names.slice(i + 1)) {
      const r = pairOf(realEv.pairs, ph.name, a, b);
      const s = pairOf(simEv.pairs, ph.name, a, b);
      if (!r || !s) continue;
      const ok = verdictsAgree(r, s);
      compared++;
      if (ok) agreed++;
      const text = (c: typeof r): string => `${changeText(c)} ${verdictText(c)}`;
      pairs.push([ph.name, `${a} vs ${b}`, text(r), text(s), ok ? 'yes' : 'NO']);
    }
  }
}
process.stdout.write(
  `${pairs.toString()}\npairwise premium p95 verdicts in down phases agree: ${agreed}/${compared}\n`,
);
// The noise floor, with two real series or more: each series as the reference, the pool of the
// other real series against it and the simulator against it. A target the real cluster does not
// reach against itself cannot be asked of the model at this number of runs.
if (realDirs.length >= 2) {
  const phases = first?.phases.map((p) => p.name) ?? [];
  const floor = new Table({
    head: ['reference', 'against it', 'p95 ±30 %', 'goodput ±10 %', 'down rankings', 'pairwise verdicts'],
    style: { head: [], border: [] },
  });
  const row = (ref: string, what: string, a: Agreement): string[] => [
    ref,
    what,
    `${a.p95Within}/${a.cells}`,
    `${a.goodputWithin}/${a.cells}`,
    `${a.rankings.same}/${a.rankings.of}`,
    `${a.verdicts.same}/${a.verdicts.of}`,
  ];
  const sum = { real: { p95: 0, goodput: 0, cells: 0 }, sim: { p95: 0, goodput: 0, cells: 0 } };
  for (const [i, dir] of realDirs.entries()) {
    const one = readEvidence([dir], names);
    const rest = readEvidence(
      realDirs.filter((_, j) => j !== i),
      names,
    );
    const a = agreement(one, rest, names, phases, P95_TOLERANCE, GOODPUT_TOLERANCE);
    const b = agreement(one, simEv, names, phases, P95_TOLERANCE, GOODPUT_TOLERANCE);
    floor.push(row(dir, 'the other real series', a), row(dir, 'the simulator', b));
    for (const [k, x] of [['real', a] as const, ['sim', b] as const]) {
      sum[k].p95 += x.p95Within;
      sum[k].goodput += x.goodputWithin;
      sum[k].cells += x.cells;
    }
  }
  process.stdout.write(
    `noise floor: each real series against the others and against the simulator\n${floor.toString()}\n` +
      `in all: the real cluster against itself p95 ${sum.real.p95}/${sum.real.cells}, goodput ${sum.real.goodput}/${sum.real.cells}; ` +
      `the simulator p95 ${sum.sim.p95}/${sum.sim.cells}, goodput ${sum.sim.goodput}/${sum.sim.cells}\n`,
  );
}
process.stdout.write(
  networkCells([
    { name: 'real', dirs: realDirs, estimates: realEv.estimates },
    { name: 'sim', dirs: simDirs, estimates: simEv.estimates },
  ]),
);
if (ownCalibration)
  process.stdout.write(`calibration (measured before the Docker runs): ${ownCalibration}\n`);
if (priced)
  process.stdout.write(`simulator priced like the real run ${priced.run}: ${priced.flags.join(' ')}\n`);
process.stdout.write(
  `real runs: ${realDir}\nsim runs: ${simRun.dir}${Number.isNaN(simRun.wallS) ? '' : ` (wall ${simRun.wallS.toFixed(1)} s)`}\n`,
);
