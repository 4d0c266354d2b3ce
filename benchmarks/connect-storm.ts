// Connects on a busy replica, real and simulated. N sessions keep one replica busy (a
// 30,000-row generate_series, back to back), a SELECT 1 every 50 ms times one turn of its run
// queue, then M connects: one after another (seq), all at once (storm) or R a second (rate); each
// timed from connect() to ready, with the client's 10 s connect timeout. The simulator runs the
// same on one simulated replica, without and with the postmaster stage (connect.postmasterCpuMs).
//
//   node --import tsx benchmarks/connect-storm.ts --calibration F [--postmaster-ms 0.73]
//     [--busy-ms 3.99] [--cpus 0.25] [--cases "64 seq 10,64 storm 32,64 rate 60 10"]
//     [--port P --password-file F]   (the real side: a replica of a plb cluster, user and db plb)
//     [--postmaster-pid PID]         (its postmaster: Docker's `docker inspect -f '{{.State.Pid}}'`)
//
// --busy-ms is the busy statement's CPU alone (measure it on the replica: its cgroup's counter
// over a few hundred runs). With --postmaster-pid, 500 connects to the idle replica first measure
// the postmaster's CPU a fork from its /proc/<pid>/stat (10 ms ticks), used unless --postmaster-ms.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { VirtualClock } from '../src/clock/virtual.js';
import { chargedCosts, loadCalibration, type SimCalibration } from '../src/cluster/sim/calibration.js';
import { DemandModel } from '../src/cluster/sim/demand.js';
import { SimServer, SimWorld } from '../src/cluster/sim/server.js';
import { quantile } from '../src/metrics/math.js';
import { option } from './lib/args.js';

const calPath = option('calibration');
if (calPath === undefined) throw new Error('--calibration F is required');
const loaded = loadCalibration(calPath);
const pmPid = option('postmaster-pid');
const busyMs = Number(option('busy-ms') ?? 3.99);
const cpus = Number(option('cpus') ?? 0.25);
const port = option('port');
const cases = (option('cases') ?? '64 seq 10,64 storm 32,64 rate 40 5,64 rate 60 10,64 rate 60 15')
  .split(',')
  .map((c) => {
    const [n, mode, m, rate] = c.trim().split(/\s+/);
    if (mode !== 'seq' && mode !== 'storm' && mode !== 'rate') throw new Error(`--cases: bad mode in "${c}"`);
    return { busy: Number(n), mode, count: Number(m), rate: Number(rate ?? 0) };
  });
type Case = (typeof cases)[number];
const TIMEOUT_MS = 10_000;
const BUSY_SQL = 'select count(*) from generate_series(1, 30000)';

interface Outcome {
  connects: number[];
  timeouts: number;
  probe: number[];
}

/** The case on any clock: `open` connects and closes; `busy` and `probe` run statements. */
async function drive(
  c: Case,
  env: {
    sleep: (ms: number) => Promise<void>;
    now: () => number;
    open: () => Promise<void>;
    startBusy: (stop: () => boolean) => Promise<void>;
    probeOnce: () => Promise<void>;
  },
): Promise<Outcome> {
  const out: Outcome = { connects: [], timeouts: 0, probe: [] };
  let stop = false;
  for (let i = 0; i < c.busy; i++) await env.startBusy(() => stop);
  await env.sleep(4000);
  const probing = (async () => {
    while (!stop) {
      const t = env.now();
      await env.probeOnce();
      out.probe.push(env.now() - t);
      await env.sleep(50);
    }
  })();
  const one = async (): Promise<void> => {
    const t = env.now();
    try {
      await env.open();
      out.connects.push(env.now() - t);
    } catch {
      out.timeouts++;
    }
  };
  if (c.mode === 'seq') for (let i = 0; i < c.count; i++) await one();
  else if (c.mode === 'storm') await Promise.all(Array.from({ length: c.count }, one));
  else {
    const all: Promise<void>[] = [];
    for (let i = 0; i < c.count; i++) {
      all.push(one());
      await env.sleep(1000 / c.rate);
    }
    await Promise.all(all);
  }
  stop = true;
  await probing;
  return out;
}

async function simulated(c: Case, cal: SimCalibration): Promise<Outcome> {
  const clock = new VirtualClock();
  const charged = chargedCosts(cal);
  const world = new SimWorld(clock, charged, new DemandModel(charged, 1));
  const server = new SimServer(world, 'r1', 'replica', 1, cpus, 1000);
  const opts = { connectTimeoutMs: TIMEOUT_MS, applicationName: 'storm', onError: () => undefined };
  const onCpu = (ms: number): Promise<void> =>
    new Promise((resolve) => server.cpu.submit(ms, () => clock.after(charged.queryOverheadMs, resolve)));
  return clock.run(() =>
    drive(c, {
      sleep: (ms) => clock.sleep(ms),
      now: () => clock.now(),
      open: async () => (await server.open(opts)).end(0),
      startBusy: async (stop) => {
        void (async () => {
          while (!stop()) await onCpu(busyMs);
        })();
      },
      probeOnce: () => onCpu(charged.healthCpuMs),
    }),
  );
}

function realConfig(): pg.ClientConfig {
  const pwFile = option('password-file');
  if (pwFile === undefined) throw new Error('--port needs --password-file F');
  return {
    host: '127.0.0.1',
    port: Number(port),
    user: 'plb',
    database: 'plb',
    password: readFileSync(pwFile, 'utf8').trim(),
    connectionTimeoutMillis: TIMEOUT_MS,
  };
}

async function real(c: Case): Promise<Outcome> {
  const cfg = realConfig();
  const clients: pg.Client[] = [];
  const client = async (): Promise<pg.Client> => {
    const k = new pg.Client(cfg);
    k.on('error', () => undefined);
    await k.connect();
    return k;
  };
  const probe = await client();
  clients.push(probe);
  try {
    return await drive(c, {
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
      now: () => performance.now(),
      open: async () => {
        const k = new pg.Client(cfg);
        k.on('error', () => undefined);
        await k.connect();
        await k.end();
      },
      startBusy: async (stop) => {
        const k = await client();
        clients.push(k);
        void (async () => {
          while (!stop()) await k.query(BUSY_SQL).catch(() => undefined);
        })();
      },
      probeOnce: async () => {
        await probe.query('SELECT 1');
      },
    });
  } finally {
    for (const k of clients) await k.end().catch(() => undefined);
  }
}

const pct = (xs: number[], p: number): string => quantile(xs, p)?.toFixed(0) ?? '-';
const cell = (o: Outcome): string =>
  `${pct(o.connects, 0.5)} / ${pct(o.connects, 0.95)} ms, ${o.timeouts} t/o, turn ${pct(o.probe, 0.5)}`;

/** The postmaster's CPU (ms) a connect, over `n` connects one after another to the idle replica. */
async function postmasterCpu(pid: string, n: number): Promise<number> {
  const ticks = (): number => {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return Number(f[11]) + Number(f[12]);
  };
  const cfg = realConfig();
  const t0 = ticks();
  for (let i = 0; i < n; i++) {
    const k = new pg.Client(cfg);
    await k.connect();
    await k.end();
  }
  return ((ticks() - t0) * 10) / n;
}

const measuredPm = port !== undefined && pmPid !== undefined ? await postmasterCpu(pmPid, 500) : undefined;
if (measuredPm !== undefined)
  console.log(`postmaster: ${measuredPm.toFixed(3)} ms CPU a connect (500 connects, idle)`);
const postmasterMs = Number(option('postmaster-ms') ?? measuredPm ?? loaded.connect.postmasterCpuMs ?? NaN);
const noStage: SimCalibration = {
  ...loaded,
  connect: { cpuMs: loaded.connect.cpuMs, latencyMs: loaded.connect.latencyMs },
};
const withStage: SimCalibration | undefined = Number.isFinite(postmasterMs)
  ? { ...loaded, connect: { ...noStage.connect, postmasterCpuMs: postmasterMs } }
  : undefined;
console.log(
  `busy statement ${busyMs} ms CPU, replica at ${cpus} core, calibration ${calPath}` +
    (withStage ? `, postmaster ${postmasterMs} ms a fork` : ' (no postmaster figure: --postmaster-ms)'),
);
console.log('connect p50 / p95, timeouts (10 s), p50 of a SELECT 1 beside them (one run-queue turn)');
for (const c of cases) {
  const name = `${c.busy} busy, ${c.mode === 'rate' ? `${c.count} at ${c.rate}/s` : `${c.count} ${c.mode}`}`;
  const parts = [name];
  if (port !== undefined) parts.push(`real ${cell(await real(c))}`);
  parts.push(`sim ${cell(await simulated(c, noStage))}`);
  if (withStage) parts.push(`sim+postmaster ${cell(await simulated(c, withStage))}`);
  console.log(parts.join(' | '));
}
