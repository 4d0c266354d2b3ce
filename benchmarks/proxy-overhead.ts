// What a proxy adds: pgbench against one replica directly, through `plb proxy`, through HAProxy
// (the `plb haproxy-config` TCP configuration, leastconn), through PgBouncer (session pooling) and
// through Pgpool-II (the `plb pgpool-config` setup: the primary at weight 0, the replica balanced,
// so a pgpool session also holds a connection to the primary; its children keep their server
// connections between client sessions), in pgbench's own figures. Kept connections
// (`-f select1.sql`): added latency per query and tps; `-C` (a new connection per transaction):
// added time per connection. A local cluster of one replica (so every path has exactly one place
// to send a session) is brought up and removed at the end. `plb proxy` runs as users run it: the
// built CLI (`npm run build` first) in its own process, like HAProxy, PgBouncer and Pgpool-II,
// which are skipped, with a line saying so, when not installed. Every proxy's CPU is read from
// /proc (Pgpool-II's: its whole process tree). `plb-late` is plb proxy with `--early-connect off`
// (the replica connection opened only after the startup packet; the native front door never
// connects early, so there `plb-late` is plb again in a second process: a like-for-like pair, the
// benchmark's noise floor); `plb-js` with `--relay js` (its sessions on Node's sockets, not the native relay).
// `node-pipe` is the floor of any relay written in Node: a bare net relay (socket.pipe both ways,
// no delay), in this process. plb's `-C` CPU is also split by thread (Node's main thread, the relay
// threads, the rest). To profile plb proxy, give its node flags:
// --plb-node-args "--cpu-prof --cpu-prof-dir /tmp/prof".
//
// Run: node --import tsx benchmarks/proxy-overhead.ts [--seconds 8] [--clients 4] [--cpus 1]
//        [--repeat 3] [--warmup 2] [--base-port 26200] [--listen-port 27200]
//        [--only plb,plb-late,plb-js,haproxy,pgbouncer,pgpool,node-pipe] [--relay-threads 2]
//        [--no-connect | --no-kept]
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import { haproxyConfig } from '../src/baselines/haproxy.js';
import { DEFAULT_HEALTH } from '../src/cluster/health.js';
import { findBinDir } from '../src/cluster/local/binaries.js';
import { createLocalDriver } from '../src/cluster/local/index.js';
import { clusterSpec } from '../src/cluster/select.js';
import { DEFAULT_RELAY_THREADS } from '../src/proxy/native/native-relay.js';
import { initPgbench, parsePgbench, runTool } from './lib/pgbench.js';
import { overRuns } from '../src/report/evidence/evidence.js';
import { formatInterval, pairwise, side } from './lib/paired.js';
import { procCpuS, threadsCpuS, treeCpuS, type Threads } from './lib/proc-cpu.js';
import { lastWords, listening, startPgbouncer, startPgpool, which } from './lib/poolers.js';
import { option } from './lib/args.js';

const argv = process.argv.slice(2);
const opt = (n: string, d: number): number => {
  const v = option(n);
  return v === undefined ? d : Number(v);
};
const seconds = opt('seconds', 8);
const clients = opt('clients', 4);
const cpus = opt('cpus', 1);
const repeat = opt('repeat', 3);
// Seconds each path runs each mode before the repeats (discarded): a JIT warms its connection path.
const warmup = opt('warmup', 2);
const relayThreads = opt('relay-threads', DEFAULT_RELAY_THREADS);
const BASE_PORT = opt('base-port', 26200);
const LISTEN = opt('listen-port', 27200);
const nodeArgsAt = argv.indexOf('--plb-node-args');
const plbNodeArgs = nodeArgsAt >= 0 ? (argv[nodeArgsAt + 1] ?? '').split(' ').filter((a) => a !== '') : [];
const onlyArg = argv.indexOf('--only');
const only = onlyArg >= 0 ? new Set((argv[onlyArg + 1] ?? '').split(',')) : undefined;
const withConnect = !argv.includes('--no-connect');
// -C only (the per-connection figures), e.g. to profile connection handling.
const withKept = !argv.includes('--no-kept');

type Via = 'direct' | 'haproxy' | 'pgbouncer' | 'pgpool' | 'node-pipe' | 'plb' | 'plb-late' | 'plb-js';
interface Figures {
  tps: number;
  latencyMs: number;
  connectMs: number | undefined;
  /** CPU time the proxy used per transaction (user + system), µs; undefined for direct. */
  cpuUs: number | undefined;
  /** plb's, by thread (µs per transaction). */
  threadsUs?: Threads;
}

/** The bare relay: every client piped to a new connection to the replica and back. */
function nodePipe(port: number, to: number): Promise<Server> {
  const server = createServer({ noDelay: true }, (c: Socket) => {
    const b = createConnection({ host: '127.0.0.1', port: to, noDelay: true });
    const end = (): void => {
      c.destroy();
      b.destroy();
    };
    c.on('error', end).on('close', end);
    b.on('error', end).on('close', end);
    c.pipe(b);
    b.pipe(c);
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};
const spread = (xs: number[], digits: number): string =>
  xs.length > 1 ? ` [${Math.min(...xs).toFixed(digits)}..${Math.max(...xs).toFixed(digits)}]` : '';

const work = mkdtempSync(join(tmpdir(), 'plb-proxy-bench-'));
chmodSync(work, 0o755);
const driver = createLocalDriver(
  clusterSpec({
    name: 'plbbench-proxy',
    replicas: 1,
    basePort: BASE_PORT,
    cpus,
    stateDir: join(work, 'state'),
  }),
);
const bin = findBinDir();
const children: ChildProcess[] = [];
let plbRelay = '-';
let pipeServer: Server | undefined;
/** Per path: the proxy's CPU seconds so far. */
const cpuOf: Partial<Record<Via, () => number>> = {};
const threadsOf: Partial<Record<Via, () => Threads>> = {};
/** The poolers' processes, whose last words a failed pgbench run shows. */
const procOf: Partial<Record<Via, ChildProcess>> = {};
try {
  await driver.down();
  await driver.up((l) => process.stderr.write(`${l}\n`));
  const { creds, replica, env, common } = await initPgbench(bin, driver);
  const script = join(work, 'select1.sql');
  writeFileSync(script, 'SELECT 1;\n');

  const ports: Partial<Record<Via, number>> = { direct: replica.port };
  const want = (v: Via): boolean => v === 'direct' || only === undefined || only.has(v);
  const thisCpuS = (): number => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  // plb proxy as it runs (the native relay where it is built), without early connects, and with --relay js.
  const plbPaths = [
    { via: 'plb' as const, port: LISTEN, flags: ['--relay-threads', String(relayThreads)] },
    {
      via: 'plb-late' as const,
      port: LISTEN + 5,
      flags: ['--relay-threads', String(relayThreads), '--early-connect', 'off'],
    },
    { via: 'plb-js' as const, port: LISTEN + 4, flags: ['--relay', 'js'] },
  ];
  const cli = fileURLToPath(new URL('../bin/run.js', import.meta.url));
  for (const p of plbPaths.filter((x) => want(x.via))) {
    const args = [...plbNodeArgs, cli, 'proxy', '--name', 'plbbench-proxy', '--premium-port', String(p.port)];
    const flags = ['--freemium-port', '0', '--partition', '1:0', '--borrow', 'off', '--slow-start', '0s'];
    const child = spawn(process.execPath, [...args, ...flags, '--stats-every', '0', ...p.flags], {
      env: { ...process.env, PLB_STATE_DIR: join(work, 'state') },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    child.stdout?.on('data', (d: Buffer) => {
      // With node flags of its own (--trace-gc, say) the proxy's output is shown.
      if (plbNodeArgs.length > 0) process.stderr.write(d);
      const m = /relay (native, \d+ thread\(s\)|js)/.exec(d.toString());
      if (m && p.via === 'plb') plbRelay = m[1] as string;
    });
    await listening(p.port, 30_000);
    ports[p.via] = p.port;
    cpuOf[p.via] = () => procCpuS(child.pid as number);
    threadsOf[p.via] = () => threadsCpuS(child.pid as number);
  }
  if (want('node-pipe')) {
    pipeServer = await nodePipe(LISTEN + 3, replica.port);
    ports['node-pipe'] = LISTEN + 3;
    cpuOf['node-pipe'] = thisCpuS;
  }
  const haproxy = which(['haproxy', '/usr/sbin/haproxy'], '-v');
  if (want('haproxy') && haproxy === undefined) console.log('haproxy: not installed, skipped');
  else if (want('haproxy') && haproxy !== undefined) {
    const cfg = join(work, 'haproxy.cfg');
    writeFileSync(
      cfg,
      haproxyConfig({
        cluster: 'plbbench-proxy',
        replicas: [{ id: replica.id, host: '127.0.0.1', port: replica.port }],
        listen: { host: '127.0.0.1', port: LISTEN + 1 },
        balance: 'leastconn',
        slowStartMs: 0,
        health: DEFAULT_HEALTH,
        user: creds.user,
      }),
    );
    const child = spawn(haproxy, ['-f', cfg, '-db'], { stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(child);
    cpuOf.haproxy = () => procCpuS(child.pid as number);
    await listening(LISTEN + 1);
    ports.haproxy = LISTEN + 1;
  }
  const pgbouncer = which(['pgbouncer', '/usr/sbin/pgbouncer'], '-V');
  if (want('pgbouncer') && pgbouncer === undefined) console.log('pgbouncer: not installed, skipped');
  else if (want('pgbouncer') && pgbouncer !== undefined) {
    const child = await startPgbouncer(pgbouncer, { work, creds, listen: LISTEN + 2, clients }, replica);
    children.push(child);
    procOf.pgbouncer = child;
    cpuOf.pgbouncer = () => procCpuS(child.pid as number);
    ports.pgbouncer = LISTEN + 2;
  }
  const pgpool = which(['pgpool', '/usr/sbin/pgpool'], '--version');
  if (want('pgpool') && pgpool === undefined) console.log('pgpool: not installed, skipped');
  else if (want('pgpool') && pgpool !== undefined) {
    const primary = driver.endpoints().find((e) => e.kind === 'primary');
    if (primary === undefined) throw new Error('the cluster has no primary');
    const servers = { primary, replicas: [{ id: replica.id, host: '127.0.0.1', port: replica.port }] };
    const child = await startPgpool(pgpool, { work, creds, listen: LISTEN + 6, clients }, servers);
    children.push(child);
    procOf.pgpool = child;
    // A process a session (its children): the whole tree's CPU.
    cpuOf.pgpool = () => treeCpuS(child.pid as number);
    ports.pgpool = LISTEN + 6;
  }
  const paths = (
    ['direct', 'haproxy', 'pgbouncer', 'pgpool', 'node-pipe', 'plb-js', 'plb-late', 'plb'] as const
  ).filter((v) => ports[v] !== undefined);
  const modes = [
    ...(withKept ? [{ key: 'kept', args: ['-f', script] }] : []),
    ...(withConnect ? [{ key: '-C', args: ['-f', script, '-C'] }] : []),
  ];
  const bench = async (via: Via, args: string[], s: number): Promise<Figures> => {
    const all = ['-n', ...args, '-c', String(clients), '-j', '2', '-T', String(s), ...common];
    const cpu = cpuOf[via];
    const c0 = cpu?.();
    const t0 = threadsOf[via]?.();
    const out = await runTool(
      join(bin, 'pgbench'),
      [...all, '-p', String(ports[via]), creds.database],
      env,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\n${via}'s log:\n${lastWords(procOf[via])}`);
    });
    const { tps, latencyMs, connectMs, transactions } = parsePgbench(out);
    const f: Figures = { tps, latencyMs, connectMs, cpuUs: undefined };
    if (cpu && c0 !== undefined) f.cpuUs = ((cpu() - c0) * 1e6) / transactions;
    const t1 = threadsOf[via]?.();
    if (t0 && t1) {
      const per = (k: keyof Threads): number => ((t1[k] - t0[k]) * 1e6) / transactions;
      f.threadsUs = { main: per('main'), relay: per('relay'), rest: per('rest') };
    }
    return f;
  };
  // Warm-up (discarded): the replica's cache, the proxies' code paths (a JIT compiles the
  // connection path only once it has run: a proxy that runs for days pays that once).
  // --warmup 0: none.
  if (warmup > 0) for (const via of paths) for (const m of modes) await bench(via, m.args, warmup);
  const results = new Map<string, Figures[]>();
  for (let r = 0; r < repeat; r++) {
    for (const m of modes) {
      // Rotate the order, so no path always runs on a warmer (or more tired) machine.
      const order = paths.map((_, i) => paths[(i + r) % paths.length] as Via);
      for (const via of order) {
        const f = await bench(via, m.args, seconds);
        process.stderr.write(
          `${m.key} ${via}: tps ${f.tps} latency ${f.latencyMs} ms connect ${f.connectMs ?? '-'} ms\n`,
        );
        const k = `${m.key}|${via}`;
        results.set(k, [...(results.get(k) ?? []), f]);
      }
    }
  }
  type Key = 'tps' | 'latencyMs' | 'connectMs' | 'cpuUs';
  const get = (m: string, via: Via): Figures[] => results.get(`${m}|${via}`) ?? [];
  const values = (m: string, via: Via, k: Key): number[] => get(m, via).map((f) => f[k] ?? NaN);
  /** The median with [min..max] of the runs; '-' where it was not measured. */
  const cell = (m: string, via: Via, k: Key, digits: number): string => {
    const xs = values(m, via, k);
    return xs.length === 0 || xs.some(Number.isNaN)
      ? '-'
      : `${median(xs).toFixed(digits)}${spread(xs, digits)}`;
  };
  // What a path adds, per repeat: its figure minus direct's in the same repeat.
  const addedPer = (m: string, via: Via): number[] => {
    const k = m === 'kept' ? 'latencyMs' : 'connectMs';
    return pairwise(values(m, via, k), values(m, 'direct', k), (a, b) => a - b);
  };
  const addedCell = (m: string, via: Via, on: boolean, digits: number): string =>
    via === 'direct' || !on ? '' : formatInterval(overRuns(addedPer(m, via)), digits);
  const table = new Table({
    head: [
      'path',
      'tps',
      'latency ms',
      'added/query ms',
      'CPU µs/query',
      '-C connect ms',
      'added/conn ms',
      '-C CPU µs/conn',
    ],
    style: { head: [], border: [] },
  });
  for (const via of paths)
    table.push([
      via,
      cell('kept', via, 'tps', 0),
      cell('kept', via, 'latencyMs', 3),
      addedCell('kept', via, withKept, 3),
      cell('kept', via, 'cpuUs', 1),
      cell('-C', via, 'connectMs', 2),
      addedCell('-C', via, withConnect, 2),
      cell('-C', via, 'cpuUs', 0),
    ]);
  console.log(
    `pgbench -n -f select1.sql -c ${clients} -j 2 -T ${seconds} (and -C), ${repeat} repeats: ` +
      'figures median [min..max], added = path minus direct in the same repeat, mean [95 % interval]; ' +
      `plb: ${plbRelay}; ` +
      `one replica at ${cpus} core(s)${driver.cpusEnforced ? '' : ' (quota not enforced here)'}; node ${process.version}`,
  );
  console.log(table.toString());
  /** a against b, paired by repeat: the ratio of mean added time, and the difference's interval. */
  const added = (m: string, a: Via, b: Via, unit: string, digits: number): string => {
    const [xa, xb] = [addedPer(m, a), addedPer(m, b)];
    const d = overRuns(pairwise(xa, xb, (x, y) => x - y));
    const ratio = (overRuns(xa).value ?? NaN) / (overRuns(xb).value ?? NaN);
    return `${ratio.toFixed(2)}x (difference ${formatInterval(d, digits)} ${unit}: ${side(d)})`;
  };
  const ratio = (m: string, a: Via, b: Via, k: Key): string => {
    const r = overRuns(pairwise(values(m, a, k), values(m, b, k), (x, y) => x / y));
    return `${formatInterval(r, 2)}x`;
  };
  const versus = (a: Via, b: Via, label: string): void => {
    if (ports[a] === undefined || ports[b] === undefined) return;
    const kept = withKept
      ? `added per query ${added('kept', a, b, 'ms', 3)}, tps ${ratio('kept', a, b, 'tps')}`
      : '';
    const conn = withConnect
      ? `added per connection ${added('-C', a, b, 'ms', 2)}, CPU per connection ${ratio('-C', a, b, 'cpuUs')}`
      : '';
    console.log(`${label}: ${[kept, conn].filter((x) => x !== '').join('; ')}`);
  };
  versus('plb', 'haproxy', 'plb vs HAProxy');
  versus('plb', 'pgbouncer', 'plb vs PgBouncer');
  versus('plb', 'pgpool', 'plb vs Pgpool-II');
  versus('node-pipe', 'haproxy', 'bare Node relay vs HAProxy');
  versus('plb', 'node-pipe', 'plb vs bare Node relay');
  const same = plbRelay.startsWith('native') ? ' (the same configuration: the noise floor)' : '';
  versus('plb', 'plb-late', `plb vs plb --early-connect off${same}`);
  versus('plb', 'plb-js', 'plb vs plb --relay js');
  // Where plb's CPU per connection goes: JavaScript's thread against the relay's.
  for (const via of ['plb', 'plb-late', 'plb-js'] as const) {
    const split = get('-C', via).flatMap((f) => (f.threadsUs ? [f.threadsUs] : []));
    const of = (k: keyof Threads): string => {
      const xs = split.map((t) => t[k]);
      return `${median(xs).toFixed(0)}${spread(xs, 0)}`;
    };
    if (split.length > 0)
      console.log(
        `${via} -C CPU µs/conn by thread, median [min..max]: Node's main thread ${of('main')}, ` +
          `relay threads ${of('relay')}, the rest (V8, libuv) ${of('rest')}`,
      );
  }
} finally {
  pipeServer?.close();
  await Promise.all(
    children
      .filter((c) => c.exitCode === null)
      .map((c) => new Promise((resolve) => c.once('exit', resolve).kill('SIGTERM'))),
  );
  await driver.down();
  rmSync(work, { recursive: true, force: true });
}
