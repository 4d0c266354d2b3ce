// plb's harness against pgbench on the same one-statement script: pgbench's select-only lookup
//   \set aid random(1, 100000)
//   SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
// (workloads/pgbench-like.yaml for plb), closed loop without think time, connections kept, straight
// to one replica, at 4, 32 and 256 clients. Prints each tool's throughput and p50 and plb's ratios,
// plb's client CPU, and the rate one core of plb's client can drive (throughput / client CPU): past
// it, plb's own event loop rather than the server sets the figures (src/metrics/summary/harness-rate.ts
// keeps the measured value; every run past it warns).
//
// pgbench: -M extended (plb's pg driver sends unnamed extended-protocol statements too), -j 2,
// latencies from its per-transaction log. plb: `plb bench run` itself (router, health checks,
// recorder, sampler), one replica, no faults, mix 100:0, sessions of ~100000 queries.
// A local cluster of one replica on ports 26150/26151 is brought up and removed at the end.
//
// Run: node --import tsx benchmarks/harness-vs-pgbench.ts [--seconds 10] [--clients 4,32,256] [--repeat 1]
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Table from 'cli-table3';
import { executeBench } from '../src/bench/execute.js';
import { findBinDir } from '../src/cluster/local/binaries.js';
import { createLocalDriver } from '../src/cluster/local/index.js';
import { clusterSpec } from '../src/cluster/select.js';
import { quantile } from '../src/metrics/math.js';
import type { RunSummary } from '../src/run-format/summary.js';
import { benchFlagValues } from '../test/helpers/fixtures.js';
import { initPgbench, parsePgbench, runTool } from './lib/pgbench.js';
import { option } from './lib/args.js';

const opt = (n: string, d: string): string => option(n) ?? d;
const seconds = Number(opt('seconds', '10'));
const levels = opt('clients', '4,32,256').split(',').map(Number);
const repeat = Number(opt('repeat', '1'));
const NAME = 'plbbench-harness';
const BASE_PORT = 26150;
const SQL = 'SELECT abalance FROM pgbench_accounts WHERE aid = :aid;';

interface Figures {
  qps: number;
  p50Ms: number | null;
  /** plb only: the client's CPU (fraction of one core) and event-loop delay p99. */
  clientCpu?: number | null;
  loopP99Ms?: number | null;
}

const work = mkdtempSync(join(tmpdir(), 'plb-harness-bench-'));
// The local driver's postgres OS user must traverse it to reach the state folder.
chmodSync(work, 0o755);
process.env.PLB_STATE_DIR = join(work, 'state');
const script = join(work, 'select.sql');
writeFileSync(script, `\\set aid random(1, 100000)\n${SQL}\n`);
const plan = join(work, 'plan.yaml');
writeFileSync(
  plan,
  `name: harness\nduration: ${seconds + 4}s\nwarmup: 4s\nreference: ${seconds}s\nreplicas: 1\nevents: []\n`,
);
const driver = createLocalDriver(
  clusterSpec({
    name: NAME,
    replicas: 1,
    basePort: BASE_PORT,
    maxConnections: 400,
    stateDir: join(work, 'state'),
  }),
);
const bin = findBinDir();

async function pgbench(
  clients: number,
  env: NodeJS.ProcessEnv,
  common: string[],
  port: number,
  db: string,
): Promise<Figures> {
  const logDir = mkdtempSync(join(work, 'pgb-'));
  const out = await runTool(
    join(bin, 'pgbench'),
    [
      '-n',
      '-M',
      'extended',
      '-f',
      script,
      '-c',
      String(clients),
      '-j',
      '2',
      '-T',
      String(seconds),
      '-l',
      `--log-prefix=${join(logDir, 'tx')}`,
      ...common,
      '-p',
      String(port),
      db,
    ],
    { ...env },
  );
  const lat: number[] = [];
  for (const f of readdirSync(logDir))
    for (const line of readFileSync(join(logDir, f), 'utf8').split('\n')) {
      const us = Number(line.split(' ')[2]);
      if (Number.isFinite(us) && line !== '') lat.push(us / 1000);
    }
  rmSync(logDir, { recursive: true, force: true });
  return { qps: parsePgbench(out).tps, p50Ms: quantile(lat, 0.5) };
}

async function plb(clients: number, seed: number): Promise<Figures> {
  const out = join(work, `runs-${clients}-${seed}`);
  const lines: string[] = [];
  const code = await executeBench(
    benchFlagValues(out, NAME, BASE_PORT, {
      plan,
      driver: 'local',
      workload: 'workloads/pgbench-like.yaml',
      clients,
      mixes: '100:0',
      seed,
      'think-time': '0ms',
      'queries-per-session': '100000',
      'keep-cluster': true,
      json: true,
    }),
    { log: (l) => lines.push(l), warn: (l) => lines.push(l) },
  );
  if (code !== 0) throw new Error(`plb bench failed:\n${lines.slice(-20).join('\n')}`);
  const dir = join(out, readdirSync(out)[0] as string);
  const s = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as RunSummary;
  const p = s.phases[s.phases.length - 1];
  if (!p) throw new Error('no phase');
  return {
    qps: p.classes.premium.goodput,
    p50Ms: p.classes.premium.p50,
    clientCpu: p.harness?.cpuMean ?? null,
    loopP99Ms: p.harness?.loopP99Ms ?? null,
  };
}

try {
  await driver.down();
  await driver.up((l) => process.stderr.write(`${l}\n`));
  const { creds, replica, env, common } = await initPgbench(bin, driver);
  // Warm-up (discarded): the replica's cache.
  await runTool(
    join(bin, 'pgbench'),
    ['-n', '-S', '-c', '4', '-T', '3', ...common, '-p', String(replica.port), creds.database],
    env,
  );
  const rows: { clients: number; pg: Figures[]; plb: Figures[] }[] = [];
  for (const clients of levels) {
    const row = { clients, pg: [] as Figures[], plb: [] as Figures[] };
    for (let r = 0; r < repeat; r++) {
      // Alternate the order, so neither tool always runs on a warmer (or more tired) machine.
      const first = r % 2 === 0 ? 'pgbench' : 'plb';
      for (const tool of first === 'pgbench' ? ['pgbench', 'plb'] : ['plb', 'pgbench']) {
        const f: Figures =
          tool === 'pgbench'
            ? await pgbench(clients, env, common, replica.port, creds.database)
            : await plb(clients, 1 + r);
        (tool === 'pgbench' ? row.pg : row.plb).push(f);
        process.stderr.write(
          `${clients} clients ${tool}: ${f.qps.toFixed(0)} q/s, p50 ${f.p50Ms?.toFixed(3)} ms${
            f.clientCpu !== undefined
              ? `, client CPU ${((f.clientCpu ?? 0) * 100).toFixed(0)}%, loop p99 ${f.loopP99Ms} ms`
              : ''
          }\n`,
        );
      }
    }
    rows.push(row);
  }
  const med = (xs: (number | null | undefined)[]): number | null =>
    quantile(
      xs.filter((x): x is number => typeof x === 'number'),
      0.5,
    );
  const range = (xs: (number | null | undefined)[], f: (v: number) => string): string => {
    const v = xs.filter((x): x is number => typeof x === 'number');
    return v.length > 1 ? ` [${f(Math.min(...v))}-${f(Math.max(...v))}]` : '';
  };
  const t = new Table({
    head: [
      'clients',
      'pgbench q/s',
      'plb q/s',
      'q/s ratio',
      'pgbench p50 ms',
      'plb p50 ms',
      'p50 ratio',
      'plb client CPU',
      'plb q/s per client core',
    ],
    style: { head: [], border: [] },
  });
  for (const r of rows) {
    const pq = med(r.pg.map((f) => f.qps)) ?? NaN;
    const lq = med(r.plb.map((f) => f.qps)) ?? NaN;
    const pp = med(r.pg.map((f) => f.p50Ms)) ?? NaN;
    const lp = med(r.plb.map((f) => f.p50Ms)) ?? NaN;
    const cpu = med(r.plb.map((f) => f.clientCpu)) ?? NaN;
    t.push([
      String(r.clients),
      `${pq.toFixed(0)}${range(
        r.pg.map((f) => f.qps),
        (v) => v.toFixed(0),
      )}`,
      `${lq.toFixed(0)}${range(
        r.plb.map((f) => f.qps),
        (v) => v.toFixed(0),
      )}`,
      `${(lq / pq).toFixed(2)}x`,
      pp.toFixed(3),
      lp.toFixed(3),
      `${(lp / pp).toFixed(2)}x`,
      `${(cpu * 100).toFixed(0)}%`,
      (lq / cpu).toFixed(0),
    ]);
  }
  console.log(
    `plb vs pgbench: "${SQL}" on one replica (local driver, no quota), closed loop, no think time, ${seconds} s each, ${repeat} run(s) per cell (median [min-max])`,
  );
  console.log(t.toString());
  console.log(
    "q/s per client core = plb q/s / plb client CPU: the rate at which one core of plb's client is all busy; above it the harness, not the server, sets the figures.",
  );
} finally {
  await driver.down().catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
}
