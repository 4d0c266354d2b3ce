// How fast the simulator is: wall time and peak memory (max RSS) of `plb bench run --driver sim`
// for the issue's scenarios. Targets (issue 10): the demo cascade at T=32 <= 2 s; RQ2
// (T=1000, the 360 s cascade) <= 10 s; K=1000 replicas, T=100,000 sessions, 360 s <= 120 s and
// <= 4 GB; (issue 23) `plb paper run rq3 --driver sim --repeat 1`, three runs and their reports,
// <= 2 s. Each run is a fresh process, so start-up is included. Printed per scenario, median
// [min..max] over --repeat runs (default 1): wall s, CPU s (user + system, all of the process's
// threads), peak RSS, and the simulator's own count of timer events per CPU second of simulation.
//
// Run: npm run build && node --import tsx benchmarks/sim-speed.ts [--only demo|rq2|k1000|rq3] [--strategy plb] [--repeat N]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Table from 'cli-table3';
import { quantile } from '../src/metrics/math.js';
import { option } from './lib/args.js';

const strategy = option('strategy') ?? 'plb';

const bench = ['bench', 'run', '--driver', 'sim', '--strategy', strategy, '--seed', '7'];
const scenarios = [
  { key: 'demo', what: 'demo cascade, K=5, T=32', target: '<= 2 s', args: ['--clients', '32'] },
  {
    key: 'rq2',
    what: 'RQ2 cascade 360 s, K=5, T=1000',
    target: '<= 10 s',
    args: ['--plan', 'plans/cascade.yaml', '--clients', '1000', '--think-time', 'auto'],
  },
  {
    key: 'k1000',
    what: '360 s, K=1000, T=100,000',
    target: '<= 120 s, <= 4 GB',
    args: ['--plan', 'plans/sim/k1000.yaml', '--clients', '100000', '--think-time', 'auto'],
  },
  {
    key: 'rq3',
    what: 'plb paper run rq3 --repeat 1 (3 runs, reports)',
    target: '<= 2 s',
    command: ['paper', 'run', 'rq3', '--driver', 'sim', '--repeat', '1', '--seed', '71407172'],
    args: [],
  },
].filter((s) => option('only') === undefined || s.key === option('only'));

const repeat = Number(option('repeat') ?? '1');
if (!Number.isInteger(repeat) || repeat < 1)
  throw new Error(`--repeat: expected a whole number >= 1, got ${option('repeat')}`);

interface Measured {
  wallS: number;
  cpuS: number;
  rssMiB: number;
  /** Timer events per CPU second of simulation, as the bench prints it (summed over a series). */
  eventsPerCpuS: number;
}

/** One run of a scenario in a fresh process. */
function measure(s: (typeof scenarios)[number]): Measured {
  const out = mkdtempSync(join(tmpdir(), 'plb-sim-speed-'));
  const usageFile = join(out, 'usage.json');
  const args = ['--import', './benchmarks/rss-hook.mjs', 'bin/run.js', ...(s.command ?? bench)];
  args.push('--out', out, ...s.args);
  const t0 = process.hrtime.bigint();
  const r = spawnSync('node', args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, PLB_RSS_FILE: usageFile },
    maxBuffer: 64 * 1024 * 1024,
  });
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  try {
    const stderr = r.stderr.toString();
    if (r.status !== 0) {
      process.stderr.write(stderr.slice(-2000));
      throw new Error(`${s.key}: plb exited ${r.status}`);
    }
    const u = JSON.parse(readFileSync(usageFile, 'utf8')) as {
      maxRssKiB: number;
      userUs: number;
      systemUs: number;
    };
    // "simulated: N timer events at M instants in X s wall, Y s CPU (...)", once per series.
    let events = 0;
    let simCpuS = 0;
    for (const m of stderr.matchAll(
      /simulated: (\d+) timer events at \d+ instants in [\d.]+ s wall, ([\d.]+) s CPU/g,
    )) {
      events += Number(m[1]);
      simCpuS += Number(m[2]);
    }
    return {
      wallS,
      cpuS: (u.userUs + u.systemUs) / 1e6,
      rssMiB: u.maxRssKiB / 1024,
      eventsPerCpuS: simCpuS > 0 ? events / simCpuS : Number.NaN,
    };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/** Median [min..max] of one figure over the repeats. */
function spread(xs: number[], digits: number): string {
  const f = (x: number): string => x.toFixed(digits);
  const mid = f(quantile(xs, 0.5) as number);
  return xs.length === 1 ? mid : `${mid} [${f(Math.min(...xs))}..${f(Math.max(...xs))}]`;
}

const table = new Table({
  head: ['scenario', 'wall s', 'CPU s', 'max RSS MiB', 'events / CPU s', 'target'],
  style: { head: [], border: [] },
});
for (const s of scenarios) {
  const runs = Array.from({ length: repeat }, () => measure(s));
  table.push([
    s.what,
    spread(
      runs.map((r) => r.wallS),
      2,
    ),
    spread(
      runs.map((r) => r.cpuS),
      2,
    ),
    spread(
      runs.map((r) => r.rssMiB),
      0,
    ),
    spread(
      runs.map((r) => r.eventsPerCpuS),
      0,
    ),
    s.target,
  ]);
}
process.stdout.write(
  `${table.toString()}${repeat > 1 ? `\nmedian [min..max] of ${repeat} runs each\n` : '\n'}`,
);
