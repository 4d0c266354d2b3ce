// How fast the simulator is: wall time and peak memory (max RSS) of `plb bench run --driver sim`
// for the scenarios. Targets (issue 10): the demo cascade at T=32 <= 2 s; RQ2
// (T=1000, the 360 s cascade) <= 10 s; K=1000 replicas, T=100,000 sessions, 360 s <= 120 s and
// <= 4 GB; (issue 23) `plb paper run rq3 --driver sim --repeat 1`, three runs and their reports,
// <= 2 s. Each scenario runs one strategy (plb) in a fresh process, so start-up is included; RQ3's
// series runs over the cores (its workers' CPU is in the wall time, their RSS is not).
//
// Run: npm run build && node --import tsx benchmarks/sim-speed.ts [--only demo|rq2|k1000|rq3] [--strategy plb]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Table from 'cli-table3';

const argv = process.argv.slice(2);
const opt = (n: string): string | undefined => {
  const i = argv.indexOf(`--${n}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const strategy = opt('strategy') ?? 'plb';

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
].filter((s) => opt('only') === undefined || s.key === opt('only'));

const table = new Table({
  head: ['scenario', 'wall s', 'max RSS MiB', 'target'],
  style: { head: [], border: [] },
});
for (const s of scenarios) {
  const out = mkdtempSync(join(tmpdir(), 'plb-sim-speed-'));
  const rssFile = join(out, 'rss');
  const args = ['--import', './benchmarks/rss-hook.mjs', 'bin/run.js', ...(s.command ?? bench)];
  args.push('--out', out, ...s.args);
  const t0 = process.hrtime.bigint();
  const r = spawnSync('node', args, {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, PLB_RSS_FILE: rssFile },
    maxBuffer: 64 * 1024 * 1024,
  });
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) {
    process.stderr.write(r.stderr.toString().slice(-2000));
    throw new Error(`${s.key}: plb exited ${r.status}`);
  }
  let rssMiB = NaN;
  try {
    rssMiB = Number(readFileSync(rssFile, 'utf8')) / 1024;
  } catch {
    // no RSS report: shown as NaN
  }
  table.push([s.what, wallS.toFixed(2), rssMiB.toFixed(0), s.target]);
  rmSync(out, { recursive: true, force: true });
}
process.stdout.write(`${table.toString()}\n`);
