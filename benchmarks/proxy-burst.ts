// A flood of startups at `plb proxy` and a real premium client meanwhile. N raw startups go to the
// freemium listener (or --burst-premium of them to premium), as many at once as the descriptor
// limit allows; each ends as served (the replica's authentication request came back through the
// proxy: admitted and connected, then held open until the burst is over, so the replicas fill),
// refused with 53300 (over --max-client-conn, the admission queue full or its wait timed out),
// another error, or hung (no answer within --hang-timeout: must be 0). While the burst runs, a real
// premium client (node-postgres: connect, password, `select 1`) is timed up to --probes times, 200 ms
// apart, in a process of its own (loaded before the burst starts, as a real client is). The proxy
// runs in a child process (this file with --serve), so its descriptors, RSS and event loop are its
// own; both are sampled from /proc. A local cluster is brought up and removed at the end.
//
// Run: node --import tsx benchmarks/proxy-burst.ts [--startups 10000] [--parallel <from ulimit -n>]
//        [--replicas 2] [--admission-limit 40] [--admission-queue 1000] [--admission-timeout 5s]
//        [--premium-reserve 0.1] [--max-client-conn <proxy default>] [--probes 25] [--burst-premium 0]
//        [--hang-timeout 20] [--strategy plb] [--base-port 26400] [--listen-port 27400] [--pacing on|off]
//        [--pace-per-turn 64] [--probe-in-process] [--child-node-args "--cpu-prof ..."]
// --pacing off: freemium startups are routed as they come (no startup pacing, src/proxy/admission/paced-intake.ts).
// --probe-in-process: the premium client in this process, beside the flood's sockets, as before
// 2026-12-02. Reported besides the counts: the proxy's loop delay and longest stalls, this process's.
// --matrix: the burst matrix with every proxy default (its flags: lib/burst-matrix.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import pg from 'pg';
import { createLocalDriver } from '../src/cluster/local/index.js';
import { clusterSpec } from '../src/cluster/select.js';
import { parseDuration } from '../src/core/duration.js';
import { fdLimit } from '../src/proxy/process-usage.js';
import { startProxy } from '../src/proxy/proxy-server.js';
import { DEFAULT_PACER } from '../src/proxy/admission/accept-pacer.js';
import { DEFAULT_PREMIUM_RESERVE } from '../src/router/admission/admission-defaults.js';
import { isStrategyName } from '../src/router/index.js';
import type { StrategyName } from '../src/router/types.js';
import { option } from './lib/args.js';
import { runFlood, runMatrix, type FloodConfig } from './lib/burst-matrix.js';
import { startupPacket } from './lib/startup-packet.js';

const argv = process.argv.slice(2);
const opt = (n: string, d: string): string => option(n) ?? d;
const num = (n: string, d: number): number => Number(opt(n, String(d)));
const NAME = 'plbbench-burst';
const BASE_PORT = num('base-port', 26400);
const LISTEN = num('listen-port', 27400);
const replicas = num('replicas', 2);

interface ServeConfig {
  stateDir: string;
  strategy: StrategyName;
  maxClientConn?: number;
  admission: { limit: number; queue: number; timeoutMs: number; premiumReserve: number };
  /** Clients read per loop turn on the freemium listener; 0: not paced. */
  pacePerTurn: number;
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

/** A loop-delay histogram's figures in ms. */
function delays(h: IntervalHistogram): { p50: number; p99: number; max: number } {
  const ms = (ns: number): number => Math.round(ns / 1e5) / 10;
  return { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) };
}

function spec(stateDir: string) {
  return clusterSpec({ name: NAME, replicas, basePort: BASE_PORT, maxConnections: 200, stateDir });
}

/** The child: the proxy in front of the cluster until SIGTERM; then its counters as one JSON line. */
async function serve(config: ServeConfig): Promise<void> {
  const driver = createLocalDriver(spec(config.stateDir));
  const creds = await driver.credentials();
  const proxy = await startProxy({
    replicas: driver.endpoints().filter((e) => e.kind === 'replica'),
    connector: driver.connector(creds),
    host: '127.0.0.1',
    ports: { premium: LISTEN, freemium: LISTEN + 1 },
    classFrom: 'off',
    strategy: config.strategy,
    reference: { premium: 2, mixed: 1, freemium: 2 },
    partition: { premium: 1, freemium: 1 },
    slowStartMs: 0,
    borrowing: false,
    health: { intervalMs: 1000, timeoutMs: 1000, fall: 3, rise: 2, hangMs: 10_000 },
    statsEveryS: 0,
    admission: config.admission,
    ...(config.maxClientConn ? { maxClientConn: config.maxClientConn } : {}),
    freemiumPacing: config.pacePerTurn > 0 ? { ...DEFAULT_PACER, perTurn: config.pacePerTurn } : false,
    log: (l) => process.stderr.write(`proxy: ${l}\n`),
  });
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  // The loop's longest stalls, when (s after ready) and with how many clients open then.
  const stalls: { atS: number; ms: number; clients: number }[] = [];
  const t0 = performance.now();
  let last = t0;
  const tick = setInterval(() => {
    const now = performance.now();
    if (now - last > 55)
      stalls.push({
        atS: round2((now - t0) / 1000),
        ms: Math.round(now - last - 5),
        clients: proxy.sessionCount(),
      });
    last = now;
  }, 5);
  // The parent gone (its end of stdin closed): so is this proxy, never left listening behind it.
  process.stdin.on('data', () => undefined).on('end', () => process.exit(1));
  process.stdout.write(`ready ${proxy.maxClientConn}\n`);
  process.once('SIGTERM', () => {
    loop.disable();
    clearInterval(tick);
    const longest = stalls.sort((a, b) => b.ms - a.ms).slice(0, 5);
    void proxy.stop(1000).then(() => {
      const { stats, gate } = proxy;
      const loopDelayMs = delays(loop);
      process.stdout.write(
        `${JSON.stringify({ overLimit: stats.overLimit, classes: stats.classes, admission: gate.counters, paced: 'paced' in proxy ? proxy.paced() : undefined, loopDelayMs, stalls: longest, usage: proxy.usage() })}\n`,
      );
      process.exit(0);
    });
  });
}

type Outcome = 'served' | 'refused' | 'error' | 'hung';

/** One raw startup: how it ended; a served one is held (pushed to `held`) until the burst is over. */
function oneStartup(port: number, packet: Buffer, hangMs: number, held: Set<() => void>): Promise<Outcome> {
  return new Promise((resolve) => {
    let done = false;
    const s = createConnection({ host: '127.0.0.1', port });
    const end = (o: Outcome, keep = false): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (keep) held.add(() => s.destroy());
      else s.destroy();
      resolve(o);
    };
    const timer = setTimeout(() => end('hung'), hangMs);
    let buf = Buffer.alloc(0);
    s.on('error', () => end('error'));
    s.on('close', () => end('error')); // closed without an answer the proxy should give
    s.on('connect', () => s.write(packet));
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf[0] === 0x52) return end('served', true); // 'R': the server asks for a password
      if (buf[0] === 0x45 && buf.length >= 5 && buf.length >= 1 + buf.readInt32BE(1)) {
        const code = /C([0-9A-Z]{5})\0/.exec(buf.toString('latin1', 5))?.[1];
        end(code === '53300' ? 'refused' : 'error');
      }
    });
  });
}

function procUsage(pid: number): { rssMiB: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return { rssMiB: Math.round(kb / 1024), fds: readdirSync(`/proc/${pid}/fd`).length };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  if (s.length === 0) return NaN;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

async function main(): Promise<void> {
  const startups = num('startups', 10_000);
  // This process holds one descriptor per startup in flight; keep 200 for the rest.
  const parallel = Math.max(1, Math.min(startups, num('parallel', fdLimit() - 200)));
  const probes = num('probes', 25);
  const hangMs = num('hang-timeout', 20) * 1000;
  const burstPremium = num('burst-premium', 0);
  const admission = {
    limit: num('admission-limit', 40),
    queue: num('admission-queue', 1000),
    timeoutMs: (parseDuration(opt('admission-timeout', '5s')) ?? 5) * 1000,
    premiumReserve: num('premium-reserve', DEFAULT_PREMIUM_RESERVE),
  };
  const maxArg = argv.includes('--max-client-conn') ? num('max-client-conn', 0) : undefined;
  const work = mkdtempSync(join(tmpdir(), 'plb-burst-bench-'));
  chmodSync(work, 0o755);
  const stateDir = join(work, 'state');
  const driver = createLocalDriver(spec(stateDir));
  let child: ChildProcess | undefined;
  let probeChild: ChildProcess | undefined;
  try {
    await driver.down();
    await driver.up((l) => process.stderr.write(`${l}\n`));
    const creds = await driver.credentials();
    const strategy = opt('strategy', 'plb');
    if (!isStrategyName(strategy)) throw new Error(`--strategy: unknown strategy "${strategy}"`);
    const config: ServeConfig = {
      stateDir,
      strategy,
      admission,
      ...(maxArg ? { maxClientConn: maxArg } : {}),
      pacePerTurn: opt('pacing', 'on') === 'off' ? 0 : num('pace-per-turn', DEFAULT_PACER.perTurn),
    };
    const childArgs = opt('child-node-args', '')
      .split(' ')
      .filter((a) => a !== '');
    child = spawn(
      process.execPath,
      [
        ...childArgs,
        ...process.execArgv,
        fileURLToPath(import.meta.url),
        '--serve',
        JSON.stringify(config),
        ...argv,
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const out: string[] = [];
    let pending = '';
    const line = new Promise<string>((resolve, reject) => {
      child!.stdout!.on('data', (d: Buffer) => {
        pending += d.toString();
        for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
          out.push(pending.slice(0, i));
          pending = pending.slice(i + 1);
          if (out.length === 1) resolve(out[0] as string);
        }
      });
      child!.once('exit', (code) => reject(new Error(`proxy child exited (${code})`)));
    });
    const maxClientConn = Number((await line).split(' ')[1]);
    const pid = child.pid as number;
    const peak = { rssMiB: 0, fds: 0 };
    const sample = (): void => {
      try {
        const u = procUsage(pid);
        peak.rssMiB = Math.max(peak.rssMiB, u.rssMiB);
        peak.fds = Math.max(peak.fds, u.fds);
      } catch {
        // the child is gone
      }
    };
    const sampler = setInterval(sample, 200);

    if (!argv.includes('--probe-in-process')) {
      const args = ['--probe', JSON.stringify({ creds, probes }), ...argv];
      probeChild = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...args], {
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      const pc = probeChild;
      // Its tries may all be done before the burst is (then it has exited and the stop finds no reader).
      pc.stdin!.on('error', () => undefined);
      await new Promise<void>((resolve, reject) => {
        pc.stdout!.once('data', () => resolve());
        pc.once('exit', (code) => reject(new Error(`probe exited (${code})`)));
      });
    }
    const genLoop = monitorEventLoopDelay({ resolution: 5 });
    genLoop.enable();
    const packet = startupPacket(creds.user, creds.database, 'burst');
    const held = new Set<() => void>();
    const counts: Record<Outcome, number> = { served: 0, refused: 0, error: 0, hung: 0 };
    let next = 0;
    const t0 = Date.now();
    const worker = async (): Promise<void> => {
      while (next < startups) {
        const i = next++;
        const port = i < burstPremium ? LISTEN : LISTEN + 1;
        counts[await oneStartup(port, packet, hangMs, held)] += 1;
      }
    };
    let burstDone = false;
    const burst = Promise.all(Array.from({ length: parallel }, () => worker())).then(() => {
      burstDone = true;
      return Date.now() - t0;
    });
    // The real premium client, while the burst is in flight: here, or in its own process (started
    // and loaded before the burst, told to go when it starts).
    let probing: Promise<ProbeResult>;
    if (probeChild) {
      const pc = probeChild;
      pc.stdin!.write('go\n');
      void burst.then(() => pc.stdin?.end('stop\n'));
      probing = new Promise((resolve, reject) => {
        let text = '';
        pc.stdout!.on('data', (d: Buffer) => (text += d.toString()));
        pc.once('exit', (code) =>
          code === 0
            ? resolve(JSON.parse(text.trim().split('\n').pop() as string) as ProbeResult)
            : reject(new Error(`probe exited (${code})`)),
        );
      });
    } else probing = runProbes(creds, probes, () => burstDone);
    const { ms: probeMs, failed: probeFailed } = await probing;
    const burstMs = await burst;
    genLoop.disable();
    sample();
    for (const close of held) close();
    clearInterval(sampler);
    child.kill('SIGTERM');
    await new Promise<void>((r) => child!.once('exit', () => r()));
    const summary = out[1] ? (JSON.parse(out[1]) as Record<string, unknown>) : undefined;
    const fmt = (x: number): string => x.toFixed(1);
    process.stdout.write(
      [
        `burst: ${startups} startups (${burstPremium} to premium), ${parallel} at once, ${replicas} replicas, ${strategy}; ` +
          `--max-client-conn ${maxClientConn}, --admission-limit ${admission.limit} --admission-queue ${admission.queue} ` +
          `--admission-timeout ${admission.timeoutMs / 1000}s --admission-premium-reserve ${admission.premiumReserve}; took ${(burstMs / 1000).toFixed(1)} s`,
        `outcomes: served ${counts.served}, 53300 ${counts.refused}, other error ${counts.error}, hung ${counts.hung}`,
        `premium client during the burst (${probeMs.length + probeFailed} of ${probes} tries ran before it ended): median ${fmt(median(probeMs))} ms, ` +
          `max ${probeMs.length ? fmt(Math.max(...probeMs)) : '-'} ms, failed ${probeFailed}`,
        `proxy process: peak RSS ${peak.rssMiB} MiB, peak fds ${peak.fds} (sampled every 200 ms)`,
        `premium tries, ms (${probeChild ? 'own process' : 'in this process'}): ${probeMs.map(fmt).join(', ')}`,
        `this process's loop delay, ms: ${JSON.stringify(delays(genLoop))}`,
        ...(summary ? [`proxy counters: ${JSON.stringify(summary)}`] : []),
      ].join('\n') + '\n',
    );
  } finally {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    if (probeChild && probeChild.exitCode === null) probeChild.kill('SIGKILL');
    await driver.down();
    rmSync(work, { recursive: true, force: true });
  }
}

interface ProbeResult {
  ms: number[];
  failed: number;
}
interface Creds {
  user: string;
  password: string;
  database: string;
}

/** The premium client: connect, password, `select 1`, timed; tries 200 ms apart until done(). */
async function runProbes(creds: Creds, probes: number, done: () => boolean): Promise<ProbeResult> {
  const ms: number[] = [];
  let failed = 0;
  await new Promise((r) => setTimeout(r, 300));
  // Only while the burst is still in flight (a probe after it measures nothing).
  for (let p = 0; p < probes && !done(); p++) {
    const c = new pg.Client({ host: '127.0.0.1', port: LISTEN, ...creds, connectionTimeoutMillis: 10_000 });
    c.on('error', () => undefined);
    const s0 = performance.now();
    try {
      await c.connect();
      await c.query('select 1');
      ms.push(performance.now() - s0);
    } catch (err) {
      failed += 1;
      process.stderr.write(`premium probe ${p + 1}: ${err instanceof Error ? err.message : String(err)}\n`);
    } finally {
      await c.end().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { ms, failed };
}

/** --probe-process: the tries, from the parent's go until its stop (stdin); the result on stdout. */
async function probeProcess(config: { creds: Creds; probes: number }): Promise<void> {
  // Loaded (pg and all): ready; the first line from the parent is the go, the next the stop.
  let lines = 0;
  let stop = false;
  const go = new Promise<void>((resolve) =>
    process.stdin.on('data', (d: Buffer) => {
      lines += d.toString().split('\n').length - 1;
      if (lines >= 1) resolve();
      if (lines >= 2) stop = true;
    }),
  );
  process.stdin.on('end', () => (stop = true));
  process.stdout.write('ready\n');
  await go;
  const r = await runProbes(config.creds, config.probes, () => stop);
  process.stdout.write(`${JSON.stringify(r)}\n`);
  process.exit(0);
}

const serveAt = argv.indexOf('--serve');
const probeAt = argv.indexOf('--probe');
const floodAt = argv.indexOf('--flood');
if (argv.includes('--matrix')) await runMatrix();
else if (floodAt >= 0) await runFlood(JSON.parse(argv[floodAt + 1] as string) as FloodConfig);
else if (serveAt >= 0) await serve(JSON.parse(argv[serveAt + 1] as string) as ServeConfig);
else if (probeAt >= 0)
  await probeProcess(JSON.parse(argv[probeAt + 1] as string) as { creds: Creds; probes: number });
else await main();
