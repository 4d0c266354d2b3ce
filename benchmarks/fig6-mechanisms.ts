// Fig. 6's candidate mechanisms, each an experiment on the simulator (docs/paper.md, "Fig. 6:
// mechanisms tested"): RQ3 (plb, the three mixes, several seeds) under each mechanism, and per
// mechanism x mix premium's p95 change against its own `ref` in down-1 and down-2, pooled over the
// seeds with the report's interval across runs (the t interval of the per-seed values, overRuns).
// Fig. 6 "appears" when premium is below its ref with an interval that excludes 0 in both down
// phases at all three mixes. Prints figures, asserts nothing.
//
// Run (alone on the machine): npm run build && node --import tsx benchmarks/fig6-mechanisms.ts
//   [--seeds 8] [--seed 1] [--clients 600] [--plans full|quick] [--only baseline,placebo] [--keep DIR]
//   [--mixes 50:50] [--driver docker --name <cluster>]
// On a real driver the pooled host, (b), is the cluster's (`plb cluster up --cpu-pool`), not a
// flag: a pooled mechanism runs only on a pooled cluster and an unpooled one only on another.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Table from 'cli-table3';
import { overRuns } from '../src/report/evidence/evidence.js';
import { acceptedRange } from '../src/report/paper/intervals.js';
import { PUBLISHED_CLAIMS } from '../src/report/paper/published.js';
import type { RunSummary } from '../src/run-format/summary.js';
import type { Estimate } from '../src/run-format/evidence.js';
import { defaultStateDir, readClusterRecord } from '../src/cluster/state.js';
import { failureCountedP95, type PhaseP95s } from './lib/fig6-metrics.js';
import { option } from './lib/args.js';

const MIXES = option('mixes')?.split(',') ?? ['25:75', '50:50', '75:25'];
const ALL_MIXES = MIXES.length === 3;
const driver = option('driver') ?? 'sim';
const cluster = option('name');
if (driver !== 'sim' && cluster === undefined)
  throw new Error('--name: a real driver runs on an existing cluster');
const pooledCluster =
  cluster !== undefined && readClusterRecord(defaultStateDir(), cluster)?.spec.cpuPool === true;
const seeds = Number(option('seeds') ?? '8');
const seed = Number(option('seed') ?? '1');
const clients = Number(option('clients') ?? '600');
const plans = option('plans') ?? 'full';
if (!Number.isInteger(seeds) || seeds < 3) throw new Error('--seeds: at least 3 (an interval across runs)');
if (plans !== 'full' && plans !== 'quick') throw new Error('--plans: full or quick');
const planDir = plans === 'quick' ? join('plans', 'paper', 'quick') : join('plans', 'paper');
const keep = option('keep');
const root = keep ?? mkdtempSync(join(tmpdir(), 'plb-fig6-'));
mkdirSync(root, { recursive: true });

/** RQ3 with a partition (the replica hangs: clients wait for their timeouts) for a kill, heal for rejoin. */
function partitionPlan(): string {
  const text = readFileSync(join(planDir, 'rq3.yaml'), 'utf8')
    .replace(/^name: (paper-rq3\S*)/m, 'name: $1-partition')
    .replace(/action: down/g, 'action: partition')
    .replace(/action: rejoin/g, 'action: heal');
  const p = join(root, 'rq3-partition.yaml');
  writeFileSync(p, text);
  return p;
}

interface Mechanism {
  key: string;
  what: string;
  plan: string;
  /** The two phases that stand for down-1 and down-2. */
  phases: [string, string];
  args: string[];
  /** T, when not --clients. */
  clients?: number;
  /** Metric (f): computed from another mechanism's runs, not run itself. */
  from?: string;
  metric?: 'failed' | 'connect';
}

const rq3 = join(planDir, 'rq3.yaml');
const DOWN: [string, string] = ['down-1', 'down-2'];
const MECHANISMS: Mechanism[] = [
  { key: 'baseline', what: `RQ3, T=${clients}, clients retry`, plan: rq3, phases: DOWN, args: [] },
  {
    key: 'a-kill-leave',
    what: '(a) clients leave after a failure; kill',
    plan: rq3,
    phases: DOWN,
    args: ['--on-failure', 'leave'],
  },
  {
    key: 'a-hang-retry',
    what: '(a) control: partition (hang), clients retry',
    plan: 'partition',
    phases: DOWN,
    args: [],
  },
  {
    key: 'a-hang-leave',
    what: '(a) partition (hang), clients leave',
    plan: 'partition',
    phases: DOWN,
    args: ['--on-failure', 'leave'],
  },
  {
    key: 'b-pooled',
    what: "(b) survivors get the down replicas' CPU",
    plan: rq3,
    phases: DOWN,
    args: ['--sim-cpu', 'pooled'],
  },
  {
    key: 'ab-leave-pooled',
    what: '(a) + (b): clients leave (kill) on a pooled host',
    plan: rq3,
    phases: DOWN,
    args: ['--on-failure', 'leave', '--sim-cpu', 'pooled'],
  },
  {
    key: 'c-placebo',
    what: '(c) placebo: no fault (mark-1, mark-2)',
    plan: join(planDir, 'placebo.yaml'),
    phases: ['mark-1', 'mark-2'],
    args: [],
  },
  {
    key: 'd-premium-only',
    what: '(d) premium replicas kept exclusive: premium-only borrowing',
    plan: rq3,
    phases: DOWN,
    args: ['--borrow', '1.5:off'],
  },
  { key: 'e-admit', what: '(e) plb-admit', plan: rq3, phases: DOWN, args: ['--strategy', 'plb-admit'] },
  {
    key: 'f-failed',
    what: '(f) failed queries counted (at the 15 s timeout)',
    plan: rq3,
    phases: DOWN,
    args: [],
    from: 'baseline',
    metric: 'failed',
  },
  {
    key: 'f-connect',
    what: '(f) connect waits counted as waits',
    plan: rq3,
    phases: DOWN,
    args: [],
    from: 'baseline',
    metric: 'connect',
  },
  { key: 't30', what: 'T=30 (the map)', plan: rq3, phases: DOWN, args: [], clients: 30 },
  { key: 't1000', what: 'T=1000', plan: rq3, phases: DOWN, args: [], clients: 1000 },
];

const only = option('only')?.split(',');
const chosen = MECHANISMS.filter(
  (m) => only === undefined || only.includes(m.key) || only.includes(m.from ?? ''),
);

/** CPU seconds of this process's finished children (user + system), from /proc/self/stat. */
function childrenCpuS(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 16 and 17 (cutime, cstime), counted from 1 with pid and comm before ')'.
  return (Number(f[13]) + Number(f[14])) / 100;
}

/** One series: the mechanism's RQ3 over the three mixes and the seeds, into its own folder. */
function runSeries(m: Mechanism): { dir: string; cpuS: number } {
  const dir = join(root, m.key);
  const plan = m.plan === 'partition' ? partitionPlan() : m.plan;
  const cpu0 = childrenCpuS();
  if (!(keep && existsSync(dir))) {
    const pooled = m.args.includes('pooled');
    if (driver !== 'sim' && pooled !== pooledCluster)
      throw new Error(
        `${m.key}: needs a cluster ${pooled ? 'made with' : 'without'} --cpu-pool (${cluster})`,
      );
    const own =
      driver === 'sim' ? m.args : m.args.filter((a, i, xs) => a !== '--sim-cpu' && xs[i - 1] !== '--sim-cpu');
    const args = ['bin/run.js', 'bench', 'run', '--driver', driver, '--plan', plan];
    if (cluster !== undefined) args.push('--name', cluster);
    args.push('--strategy', 'plb', '--mix', MIXES.join(','), '--clients', String(m.clients ?? clients));
    args.push('--think-time', 'auto', '--seed', String(seed), '--repeat', String(seeds));
    args.push('--progress', '0', '--out', dir, ...own);
    const r = spawnSync('node', args, { stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0) {
      process.stderr.write(r.stderr.toString().slice(-3000));
      throw new Error(`${m.key}: plb exited ${r.status}`);
    }
  }
  return { dir, cpuS: childrenCpuS() - cpu0 };
}

interface Run {
  dir: string;
  summary: RunSummary;
}

function runsIn(dir: string): Run[] {
  return readdirSync(dir)
    .map((d) => join(dir, d))
    .filter((d) => existsSync(join(d, 'summary.json')))
    .map((d) => ({
      dir: d,
      summary: JSON.parse(readFileSync(join(d, 'summary.json'), 'utf8')) as RunSummary,
    }));
}

const mixOf = (s: RunSummary): string => {
  const m = s.mix as { premium: number; freemium: number };
  const t = m.premium + m.freemium;
  return `${Math.round((100 * m.premium) / t)}:${Math.round((100 * m.freemium) / t)}`;
};

/** Premium's p95 change against ref in `phase` of one run, under the mechanism's metric. */
function change(run: Run, phase: string, metric: Mechanism['metric']): number {
  if (metric === undefined) {
    const p = run.summary.phases.find((x) => x.name === phase);
    return p?.classes.premium.p95Inflation ?? NaN;
  }
  const v: PhaseP95s = failureCountedP95(run.dir, run.summary, ['ref', phase], metric);
  const ref = v.ref;
  const at = v[phase];
  return ref !== undefined && at !== undefined && ref > 0 ? (at - ref) / ref : NaN;
}

interface Cell {
  mix: string;
  d1: Estimate;
  d2: Estimate;
}

const pct = (v: number | null): string => (v === null ? '-' : `${v > 0 ? '+' : ''}${(100 * v).toFixed(1)}%`);
const est = (e: Estimate): string =>
  e.value === null ? '-' : `${pct(e.value)} [${pct(e.lo)}, ${pct(e.hi)}]`;
const below = (e: Estimate): boolean => e.hi !== null && e.hi < 0;
/** The map's accepted range of Fig. 6's premium claim in down-1 and down-2 (percent). */
const range = (id: string) => acceptedRange(PUBLISHED_CLAIMS.find((c) => c.id === id)!);
const RANGES = [range('fig6-premium-down-1'), range('fig6-premium-down-2')] as const;
const inside = (e: Estimate, r: { lo: number; hi: number }): boolean =>
  e.lo !== null && e.hi !== null && 100 * e.lo >= r.lo && 100 * e.hi <= r.hi;
const above = (e: Estimate): boolean => e.lo !== null && e.lo > 0;

/** Does Fig. 6 appear: premium below ref, the interval excluding 0, in both phases at every mix. */
function verdict(cells: readonly Cell[]): string {
  const all = cells.flatMap((c) => [c.d1, c.d2]);
  const n = (f: (e: Estimate) => boolean): number => all.filter(f).length;
  const within =
    cells.filter((c) => inside(c.d1, RANGES[0])).length + cells.filter((c) => inside(c.d2, RANGES[1])).length;
  const where = ALL_MIXES ? '' : ` (run at ${MIXES.join(', ')} alone)`;
  if (cells.length === MIXES.length && n(below) === all.length)
    return `YES: Fig. 6 appears${where} (${within} of ${all.length} in the paper's range)`;
  return `no (${n(below)} below, ${n(above)} above, ${all.length - n(below) - n(above)} undecided of ${all.length})`;
}

const series = new Map<string, { dir: string; cpuS: number }>();
const table = new Table({
  head: ['mechanism', 'mix', 'down-1 Δp95 [95 % CI]', 'down-2 Δp95 [95 % CI]', 'verdict'],
  style: { head: [], border: [], compact: true },
});
const started = Date.now();
for (const m of chosen) {
  const src = m.from ?? m.key;
  if (!series.has(src)) {
    const base = MECHANISMS.find((x) => x.key === src)!;
    series.set(src, runSeries(base));
    process.stderr.write(`${src}: ${series.get(src)!.cpuS.toFixed(0)} s CPU\n`);
  }
  const runs = runsIn(series.get(src)!.dir);
  const cells: Cell[] = MIXES.map((mix) => {
    const of = runs.filter((r) => mixOf(r.summary) === mix);
    const [p1, p2] = m.phases;
    return {
      mix,
      d1: overRuns(of.map((r) => change(r, p1, m.metric))),
      d2: overRuns(of.map((r) => change(r, p2, m.metric))),
    };
  });
  const v = verdict(cells);
  cells.forEach((c, i) =>
    table.push([i === 0 ? `${m.key}: ${m.what}` : '', c.mix, est(c.d1), est(c.d2), i === 0 ? v : '']),
  );
}
const cpu = [...series.values()].reduce((s, x) => s + x.cpuS, 0);
console.log(
  `Fig. 6 mechanisms on ${driver === 'sim' ? 'the simulator' : `${driver} (${cluster}${pooledCluster ? ', CPU pool' : ''})`}: RQ3 (${plans} plans: ${plans === 'full' ? '60 s phases, 30 s ref' : '15 s phases, 10 s ref'}), plb, T=${clients} unless said, seeds ${seed}..${seed + seeds - 1}, think time auto (70 % CPU in ref)`,
);
console.log(
  'Δp95 = premium (p95 - ref p95) / ref p95, mean over the seeds with its 95 % t interval across runs; the paper: -18.6..-4.7 % (down-1), -23.0..-15.3 % (down-2)',
);
console.log(table.toString());
console.log(
  "(f): failed = each failed query counted at the query timeout; connect = each connect one more wait (a failed one at the connect timeout). In the paper's range: the interval inside the map's accepted range (published +-5 pp).",
);
console.log(
  `${series.size} series, ${cpu.toFixed(0)} s CPU in plb (0: runs reused from --keep), ${((Date.now() - started) / 1000).toFixed(0)} s wall; runs in ${root}`,
);
if (keep === undefined) rmSync(root, { recursive: true, force: true });
