// What `plb proxy` adds: pgbench against one replica directly and through the proxy, in pgbench's own
// figures. -S (select-only, connections kept): added latency per query; -S -C (a new connection per
// transaction): the connection rate and the connect time through the proxy. A local cluster of one
// replica (so the proxy has exactly one place to send a session) is brought up on ports
// 24700/24701 with the proxy on 24760, and removed at the end. The proxy runs in this process.
//
// Run: node --import tsx benchmarks/proxy-overhead.ts [--seconds 10] [--clients 4] [--cpus 1] [--repeat 3]
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Table from 'cli-table3';
import { DEFAULT_HEALTH } from '../src/cluster/health.js';
import { findBinDir } from '../src/cluster/local/binaries.js';
import { createLocalDriver } from '../src/cluster/local/index.js';
import { currentWalLsn, waitCaughtUp } from '../src/cluster/pg-util.js';
import { clusterSpec } from '../src/cluster/select.js';
import { startProxy } from '../src/proxy/proxy-server.js';

const argv = process.argv.slice(2);
const opt = (n: string, d: number): number => {
  const i = argv.indexOf(`--${n}`);
  return i >= 0 ? Number(argv[i + 1]) : d;
};
const seconds = opt('seconds', 10);
const clients = opt('clients', 4);
const cpus = opt('cpus', 1);
const repeat = opt('repeat', 3);
const BASE_PORT = 24700;
const PROXY_PORT = 24760;

interface Figures {
  tps: number;
  latencyMs: number;
  connectMs: number | undefined;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(file, args, { env, encoding: 'utf8', maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${file} ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    ),
  );
}

function figures(out: string): Figures {
  const num = (re: RegExp): number | undefined => {
    const m = re.exec(out);
    return m ? Number(m[1]) : undefined;
  };
  return {
    tps: num(/tps = ([\d.]+)/) ?? NaN,
    latencyMs: num(/latency average = ([\d.]+) ms/) ?? NaN,
    connectMs: num(/average connection time = ([\d.]+) ms/),
  };
}

const stateDir = mkdtempSync(join(tmpdir(), 'plb-proxy-bench-'));
const driver = createLocalDriver(
  clusterSpec({ name: 'plbbench-proxy', replicas: 1, basePort: BASE_PORT, cpus, stateDir }),
);
const bin = findBinDir();
try {
  await driver.down();
  await driver.up((l) => process.stderr.write(`${l}\n`));
  const creds = await driver.credentials();
  const [primary, replica] = driver.endpoints();
  const env = { ...process.env, PGPASSWORD: creds.password };
  const common = ['-U', creds.user, '-h', '127.0.0.1'];
  await run(
    join(bin, 'pgbench'),
    ['-i', '-q', '-s', '1', ...common, '-p', String(primary!.port), creds.database],
    env,
  );
  await waitCaughtUp(replica!, creds, await currentWalLsn(primary!, creds), 60_000);
  const proxy = await startProxy({
    replicas: [replica!],
    connector: driver.connector(creds),
    host: '127.0.0.1',
    ports: { premium: PROXY_PORT },
    classFrom: 'off',
    strategy: 'plb',
    reference: { premium: 2, mixed: 1, freemium: 2 },
    partition: { premium: 1, freemium: 0 },
    slowStartMs: 0,
    borrowing: false,
    health: DEFAULT_HEALTH,
    statsEveryS: 0,
    log: (l) => process.stderr.write(`proxy: ${l}\n`),
  });
  const modes = [
    { key: '-S', what: 'select-only, kept connections', args: ['-S'] },
    { key: '-S -C', what: 'select-only, a connection per transaction', args: ['-S', '-C'] },
  ];
  // Warm-up (discarded): the replica's cache, the proxy's code paths.
  for (const port of [replica!.port, PROXY_PORT])
    await run(
      join(bin, 'pgbench'),
      ['-n', '-S', '-c', String(clients), '-T', '3', ...common, '-p', String(port), creds.database],
      env,
    );
  const results = new Map<string, Figures[]>();
  for (let r = 0; r < repeat; r++) {
    for (const m of modes) {
      // Alternate the order, so neither side always runs on a warmer (or more tired) machine.
      const order = r % 2 === 0 ? (['direct', 'proxy'] as const) : (['proxy', 'direct'] as const);
      for (const via of order) {
        const port = via === 'direct' ? replica!.port : PROXY_PORT;
        const args = ['-n', ...m.args, '-c', String(clients), '-j', '2', '-T', String(seconds), ...common];
        const out = await run(join(bin, 'pgbench'), [...args, '-p', String(port), creds.database], env);
        const f = figures(out);
        process.stderr.write(
          `${m.key} ${via}: tps ${f.tps} latency ${f.latencyMs} ms connect ${f.connectMs ?? '-'} ms\n`,
        );
        const k = `${m.key}|${via}`;
        results.set(k, [...(results.get(k) ?? []), f]);
      }
    }
  }
  await proxy.stop(1000);
  const median = (xs: number[]): number => {
    const s = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(s.length / 2);
    return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
  };
  const table = new Table({
    head: ['pgbench', 'via', 'tps', 'latency avg ms', 'connect avg ms', 'added latency ms', 'tps vs direct'],
    style: { head: [], border: [] },
  });
  for (const m of modes) {
    const d = results.get(`${m.key}|direct`) ?? [];
    const dl = median(d.map((f) => f.latencyMs));
    const dt = median(d.map((f) => f.tps));
    for (const via of ['direct', 'proxy'] as const) {
      const fs = results.get(`${m.key}|${via}`) ?? [];
      const tps = median(fs.map((f) => f.tps));
      const lat = median(fs.map((f) => f.latencyMs));
      const conn = fs.every((f) => f.connectMs !== undefined)
        ? median(fs.map((f) => f.connectMs as number))
        : undefined;
      table.push([
        m.key,
        via,
        tps.toFixed(0),
        lat.toFixed(3),
        conn === undefined ? '-' : conn.toFixed(3),
        via === 'direct' ? '' : (lat - dl).toFixed(3),
        via === 'direct' ? '' : `${(((tps - dt) / dt) * 100).toFixed(1)} %`,
      ]);
    }
  }
  console.log(
    `pgbench ${clients} clients, 2 threads, ${seconds} s a run, median of ${repeat}; one replica at ${cpus} core(s)` +
      `${driver.cpusEnforced ? '' : ' (quota not enforced here)'}; ${process.version}`,
  );
  console.log(table.toString());
} finally {
  await driver.down();
  rmSync(stateDir, { recursive: true, force: true });
}
