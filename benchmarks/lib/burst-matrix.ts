// The burst matrix with every proxy default (proxy-burst.ts --matrix): a local cluster made by
// `plb cluster up`, and per scenario a fresh `plb proxy --name <cluster>` with no flag but its two
// ports (admission limits auto from max_connections, --startup-timeout 5s, startup pacing on), a
// flood in a process of its own, and the other class's client (psql: connect, password,
// `select 1`, timed from its spawn to its exit, so with its ~10 ms of process start) tried
// --tries times, --gap apart, once the flood has run --settle seconds. The flood: --flood sockets
// at once, each sending a startup packet and never answering the password request (the proxy cuts
// it at its startup timeout), opening another when it is closed; refused ones wait 100 ms first
// (a client's retry, not a spin). Scenarios: freemium flood/premium client, premium
// flood/freemium client, mixed flood (half each)/both clients, and premium flood/premium client
// (a class's own flood, the reference for the mixed flood's premium client). Per scenario one table: tries,
// served, served within 1 s, refused, hung (no exit within 15 s), latency p50/p95/max; and what
// the flood's startups met. --flood-from: the address the flood's sockets are bound to, default
// 127.0.0.2: the flood from one host, the client (psql, from 127.0.0.1) from another, which the
// proxy tells apart (--startup-yield); --flood-from 127.0.0.1: the same host as the client, where
// nothing can tell them apart (the reference row). Any 127.x.y.z is local on Linux. Each slow
// try (over 1 s) is listed with what the proxy counted meanwhile (its admin view on
// --listen-port + 10): the flood's sockets cut at their startup timeout, the yields, the waiters.
// Run: node --import tsx benchmarks/proxy-burst.ts --matrix [--flood 2000] [--tries 10] [--replicas 2]
//        [--name front] [--base-port 13432] [--listen-port 13600] [--settle 3] [--gap-ms 300]
//        [--scenarios freemium,premium,mixed,own] [--log-dir /tmp] [--direct] [--flood-from 127.0.0.2]
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createConnection } from 'node:net';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findBinDir } from '../../src/cluster/local/binaries.js';
import { defaultStateDir, loadCredentials } from '../../src/cluster/state.js';
import { option } from './args.js';
import { startupPacket } from './startup-packet.js';
import { HUNG_MS, table, tracedTry, type Cls, type Try } from './burst-tries.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PLB = join(ROOT, 'bin', 'run.js');
const opt = (n: string, d: string): string => option(n) ?? d;
const num = (n: string, d: number): number => Number(opt(n, String(d)));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Scenario {
  name: string;
  /** The flood's share on the premium port (0: all freemium). */
  premiumShare: number;
  clients: Cls[];
}
const SCENARIOS: Scenario[] = [
  { name: 'freemium flood / premium client', premiumShare: 0, clients: ['premium'] },
  { name: 'premium flood / freemium client', premiumShare: 1, clients: ['freemium'] },
  { name: 'mixed flood / both clients', premiumShare: 0.5, clients: ['premium', 'freemium'] },
  // The reference for the mixed flood's premium client: its own class's flood alone.
  { name: 'own class: premium flood / premium client', premiumShare: 1, clients: ['premium'] },
];

/** `node bin/run.js ...args`, its output when it exits 0. */
function plb(args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, [PLB, ...args], { encoding: 'utf8' }, (err, out, errOut) =>
      err ? reject(new Error(`plb ${args.join(' ')}: ${errOut || err.message}`)) : resolve(out),
    ),
  );
}

async function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port });
    s.on('connect', () => (s.destroy(), resolve(true)));
    s.on('error', () => resolve(false));
  });
}

export async function runMatrix(): Promise<void> {
  const name = opt('name', 'front');
  const basePort = num('base-port', 13432);
  const listen = num('listen-port', 13600);
  const replicas = num('replicas', 2);
  const tries = num('tries', 10);
  const gapMs = num('gap-ms', 300);
  const settleS = num('settle', 3);
  const flood = num('flood', 2000);
  const floodFrom = opt('flood-from', '127.0.0.2');
  const only = option('scenarios')?.split(',');
  // --direct: with each try, at the same instant, psql straight to the class's own replica (r1
  // premium, r2 freemium under the default partition): what the host and that replica's postmaster
  // give under the flood at that moment, no proxy; a slow try is the proxy's only when its pair is not slow.
  const withDirect = process.argv.includes('--direct');
  const replicaOf: Record<Cls, number> = { premium: basePort + 1, freemium: basePort + 2 };
  const ports: Record<Cls, number> = { premium: listen, freemium: listen + 1 };
  const metricsPort = listen + 10;
  const bin = findBinDir();
  const logDir = opt('log-dir', '/tmp');
  process.stderr.write(`cluster up: ${name}, ${replicas} replicas, base port ${basePort}\n`);
  await plb([
    'cluster',
    'up',
    '--driver',
    'local',
    '--name',
    name,
    '--base-port',
    String(basePort),
    '--replicas',
    String(replicas),
  ]);
  const creds = loadCredentials(defaultStateDir(), name);
  const out: string[] = [
    `burst matrix: every proxy default (plb proxy --name ${name} --premium-port ${ports.premium} --freemium-port ${ports.freemium}), ` +
      `local cluster of ${replicas} replicas (plb cluster up defaults: max_connections 200); flood ${flood} startups at once from ${floodFrom} (the client from 127.0.0.1), ` +
      `client tries ${tries}, ${gapMs} ms apart after ${settleS} s of flood`,
  ];
  let proxy: ChildProcess | undefined;
  let flooder: ChildProcess | undefined;
  try {
    for (const [i, sc] of SCENARIOS.entries()) {
      if (only && !only.some((o) => sc.name.startsWith(o))) continue;
      const log = join(logDir, `plb-burst-matrix-${i}.log`);
      proxy = spawn(
        process.execPath,
        [
          PLB,
          'proxy',
          '--name',
          name,
          '--premium-port',
          String(ports.premium),
          '--freemium-port',
          String(ports.freemium),
          '--metrics-port',
          String(metricsPort),
        ],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      const sink = createWriteStream(log);
      proxy.stdout!.pipe(sink);
      proxy.stderr!.pipe(sink);
      for (let t = 0; !((await listening(ports.premium)) && (await listening(ports.freemium))); t++) {
        if (t > 300 || proxy.exitCode !== null) throw new Error(`plb proxy did not start (${log})`);
        await sleep(100);
      }
      const config = {
        ports,
        premiumShare: sc.premiumShare,
        n: flood,
        from: floodFrom,
        user: creds.user,
        database: creds.database,
      };
      flooder = spawn(
        process.execPath,
        [...process.execArgv, join(ROOT, 'benchmarks', 'proxy-burst.ts'), '--flood', JSON.stringify(config)],
        {
          stdio: ['pipe', 'pipe', 'inherit'],
        },
      );
      let floodOut = '';
      flooder.stdout!.on('data', (d: Buffer) => (floodOut += d.toString()));
      const load0 = loadavg()[0]!.toFixed(1);
      await sleep(settleS * 1000);
      const results: Record<Cls, Try[]> = { premium: [], freemium: [] };
      const direct: Record<Cls, Try[]> = { premium: [], freemium: [] };
      for (let k = 0; k < tries; k++)
        for (const cls of sc.clients) {
          const { through, straight } = await tracedTry(
            bin,
            creds,
            ports[cls],
            cls,
            metricsPort,
            withDirect ? replicaOf[cls] : undefined,
          );
          results[cls].push(through);
          if (straight) direct[cls].push(straight);
          await sleep(gapMs);
        }
      const f = flooder;
      const floodDone = new Promise<void>((r) => f.once('exit', () => r()));
      f.stdin!.end();
      await floodDone;
      flooder = undefined;
      const p = proxy;
      const stopped = new Promise<void>((r) => p.once('exit', () => r()));
      // Its queued sessions are not waited for (a second signal exits at once).
      p.kill('SIGTERM');
      const again = setTimeout(() => p.kill('SIGTERM'), 1000);
      await stopped;
      clearTimeout(again);
      proxy = undefined;
      const block = [
        `${sc.name}:`,
        ...sc.clients.flatMap((c) => table(c, results[c])),
        ...(withDirect
          ? sc.clients.flatMap((c) =>
              table(`reference: ${c}'s replica (${replicaOf[c]}) direct, each with its try`, direct[c]),
            )
          : []),
        `  flood: ${floodOut.trim()}`,
        `  host load average (1 min) at the start and end: ${load0} ${loadavg()[0]!.toFixed(1)} (${availableParallelism()} cores)`,
        `  proxy log: ${log}`,
      ];
      out.push(...block);
      process.stderr.write(`${block.join('\n')}\n`);
      await sleep(2000); // the replicas' backends of the flood gone before the next scenario
    }
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    flooder?.kill('SIGKILL');
    proxy?.kill('SIGKILL');
    await plb(['cluster', 'down', '--name', name]).catch((e: unknown) =>
      process.stderr.write(`${String(e)}\n`),
    );
  }
}

export interface FloodConfig {
  ports: Record<Cls, number>;
  premiumShare: number;
  n: number;
  /** The local address its sockets are bound to (the flood's client host). */
  from: string;
  user: string;
  database: string;
}

/** The flood (its own process): until stdin ends, then its counts as one line. */
export async function runFlood(c: FloodConfig): Promise<void> {
  const packet = startupPacket(c.user, c.database, 'flood');
  const counts: Record<string, number> = { startups: 0, asked: 0, hung: 0, closed: 0 };
  const bump = (k: string): void => void (counts[k] = (counts[k] ?? 0) + 1);
  let stop = false;
  process.stdin.on('data', () => undefined).on('end', () => (stop = true));
  const one = (port: number): Promise<boolean> =>
    new Promise((resolve) => {
      bump('startups');
      const s = createConnection({ host: '127.0.0.1', port, localAddress: c.from });
      let buf = Buffer.alloc(0);
      let told = false;
      const hung = setTimeout(() => (bump('hung'), s.destroy()), HUNG_MS);
      s.on('error', () => undefined);
      s.on('connect', () => s.write(packet));
      let asked = false;
      s.on('data', (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        // Whole messages: the password request, then (at the startup timeout) an error.
        while (buf.length >= 5 && buf.length >= 1 + buf.readInt32BE(1)) {
          const end = 1 + buf.readInt32BE(1);
          if (buf[0] === 0x52 && !asked) {
            asked = told = true;
            clearTimeout(hung);
            bump('asked');
          }
          if (buf[0] === 0x45) {
            clearTimeout(hung);
            bump(/C([0-9A-Z]{5})\0/.exec(buf.toString('latin1', 5, end))?.[1] ?? 'error');
            told = true;
            s.destroy();
          }
          buf = buf.subarray(end);
        }
      });
      s.on('close', () => {
        clearTimeout(hung);
        if (!told) bump('closed');
        resolve(asked);
      });
    });
  let k = 0;
  const worker = async (): Promise<void> => {
    while (!stop) {
      const port = k++ % 100 < c.premiumShare * 100 ? c.ports.premium : c.ports.freemium;
      if (!(await one(port))) await sleep(100);
    }
  };
  await Promise.race([
    Promise.all(Array.from({ length: c.n }, () => worker())),
    new Promise((r) => process.stdin.on('end', r)),
  ]);
  process.stdout.write(
    `${Object.entries(counts)
      .map(([k2, v]) => `${k2} ${v}`)
      .join(', ')}\n`,
  );
  process.exit(0);
}
