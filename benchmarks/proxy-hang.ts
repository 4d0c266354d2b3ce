// The proxy's hang path, measured: a replica blackholed behind `plb proxy` (every packet to and from
// its port dropped on lo, iptables: its server and kernel answer nothing, as behind a partition),
// with N clients spread over the replicas by round robin, those on it half idle and half in a
// running query (pg_sleep). For each front door (native, js) and each --hang-timeout (the checks'
// hang and the replica connections' keepalive and TCP_USER_TIMEOUT; 0: the connections get neither
// and the checks keep 5 s, which is the proxy before they had them): the time from the injection to
// the replica marked down (and by what: the checks, or the sessions' own reports), each affected
// client's wait until its connection closed (with the error it was told), their median and max,
// against the promise: hang + one check interval. A local cluster is brought up and removed at the
// end; every rule is removed after each case (and checked). Needs root and iptables.
//
// Run: node --import tsx benchmarks/proxy-hang.ts [--clients 20] [--replicas 3] [--hangs 2s,5s,10s,0]
//        [--fronts native,js] [--interval 1s] [--fall 2] [--base-port 23630] [--listen-port 23636]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Table from 'cli-table3';
import pg from 'pg';
import { DEFAULT_HEALTH } from '../src/cluster/health.js';
import { createLocalDriver } from '../src/cluster/local/index.js';
import { clusterSpec } from '../src/cluster/select.js';
import type { Connector } from '../src/cluster/connector.js';
import type { Credentials, Endpoint } from '../src/core/endpoint.js';
import { parseDuration } from '../src/core/duration.js';
import { startProxy } from '../src/proxy/proxy-server.js';
import { NativeRelay } from '../src/proxy/native/native-relay.js';
import { Blackhole, haveIptables, serverPort, Watched } from '../test/helpers/hang-rig.js';
import { option } from './lib/args.js';

const opt = (n: string, d: string): string => option(n) ?? d;
const ms = (text: string): number => (parseDuration(text) ?? NaN) * 1000;
const CLIENTS = Number(opt('clients', '20'));
const REPLICAS = Number(opt('replicas', '3'));
const HANGS = opt('hangs', '2s,5s,10s,0').split(',').map(ms);
const FRONTS = opt('fronts', 'native,js').split(',');
const INTERVAL_MS = ms(opt('interval', '1s'));
const FALL = Number(opt('fall', '2'));
const BASE_PORT = Number(opt('base-port', '23630'));
const LISTEN = Number(opt('listen-port', '23636'));
const NAME = 'plbbench-hang';
/** How long a case waits for its clients at most (a client past it is reported as still waiting). */
const capMs = (hangMs: number): number => Math.max(60_000, 6 * (hangMs || DEFAULT_HEALTH.hangMs));

interface Outcome {
  front: string;
  hangMs: number;
  downMs: number | undefined;
  downVia: string;
  waits: { ms: number | undefined; running: boolean; code: string | undefined }[];
  others: number;
}

const s1 = (x: number | undefined): string => (x === undefined ? '-' : (x / 1000).toFixed(2));
const median = (xs: number[]): number | undefined => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? undefined : s[Math.floor((s.length - 1) / 2)];
};

interface Rig {
  replicas: Endpoint[];
  creds: Credentials;
  connector: Connector;
  hole: Blackhole;
}

async function runCase(front: string, hangMs: number, rig: Rig): Promise<Outcome> {
  const { replicas, creds, connector, hole } = rig;
  const logs: { at: number; line: string }[] = [];
  const proxy = await startProxy({
    replicas,
    connector,
    host: '127.0.0.1',
    ports: { premium: LISTEN },
    classFrom: 'off',
    strategy: 'rr',
    reference: { premium: 2, mixed: 1, freemium: 2 },
    partition: { premium: 1, freemium: 1 },
    slowStartMs: 0,
    borrowing: false,
    health: {
      intervalMs: INTERVAL_MS,
      timeoutMs: INTERVAL_MS,
      fall: FALL,
      rise: 2,
      hangMs: hangMs > 0 ? hangMs : DEFAULT_HEALTH.hangMs,
    },
    serverHangMs: hangMs,
    statsEveryS: 0,
    relay: front === 'js' ? { kind: 'js' } : { kind: 'native', threads: 2 },
    log: (line) => logs.push({ at: Date.now(), line }),
  });
  if (proxy.relay.split(',')[0] !== front)
    throw new Error(`asked for the ${front} front door, got ${proxy.relay}`);
  const config = (port: number): pg.ClientConfig => ({
    host: '127.0.0.1',
    port,
    user: creds.user,
    password: creds.password,
    database: creds.database,
    connectionTimeoutMillis: 10_000,
  });
  const r1 = replicas[0]!;
  const clients: pg.Client[] = [];
  const onR1: Watched[] = [];
  let others = 0;
  try {
    for (let i = 0; i < CLIENTS; i++) {
      const c = new pg.Client(config(LISTEN));
      c.on('error', () => undefined);
      clients.push(c);
      await c.connect();
      if ((await serverPort(c)) === r1.port) onR1.push(new Watched(c));
      else others += 1;
    }
    // Half of r1's clients in a running query, half idle (quiet since their last query).
    onR1.forEach((w, i) => i % 2 === 1 && w.runLong(600));
    await new Promise((r) => setTimeout(r, 1000));
    const t0 = Date.now();
    await hole.apply(r1.id, r1.port);
    const cap = new Promise<void>((r) => setTimeout(r, capMs(hangMs)).unref());
    await Promise.race([Promise.all(onR1.map((w) => w.ended)), cap]);
    const down = logs.find((l) => l.line.startsWith(`${r1.id} down (`));
    const waits = await Promise.all(
      onR1.map(async (w, i) => {
        const e = w.endedAt === undefined ? undefined : await w.ended;
        return { ms: e && e.at - t0, running: i % 2 === 1, code: e?.code };
      }),
    );
    return {
      front,
      hangMs,
      downMs: down && down.at - t0,
      downVia: down ? (/\((\w+):/.exec(down.line)?.[1] ?? '?') : 'not down',
      waits,
      others,
    };
  } finally {
    await hole.heal();
    for (const c of clients) await c.end().catch(() => undefined);
    await proxy.stop(500);
    await terminateClients(config(r1.port));
  }
}

/** Ends what the blackholed replica still holds of the ended sessions (its side never heard the close). */
async function terminateClients(config: pg.ClientConfig): Promise<void> {
  const c = new pg.Client(config);
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.query(
      "select pg_terminate_backend(pid) from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()",
    );
  } finally {
    await c.end().catch(() => undefined);
  }
}

function report(outcomes: Outcome[]): void {
  const t = new Table({
    style: { head: [], border: [] },
    head: [
      'front',
      '--hang-timeout',
      'promise (s)',
      'down after (s)',
      'down by',
      'clients on r1 (idle/running)',
      'wait min',
      'median',
      'max (s)',
      'told 08006',
      'within promise',
    ],
  });
  for (const o of outcomes) {
    const done = o.waits.flatMap((w) => (w.ms === undefined ? [] : [w.ms]));
    const promise = (o.hangMs > 0 ? o.hangMs : DEFAULT_HEALTH.hangMs) + INTERVAL_MS;
    const running = o.waits.filter((w) => w.running).length;
    const stillWaiting = o.waits.length - done.length;
    t.push([
      o.front,
      o.hangMs > 0 ? `${o.hangMs / 1000}s` : `0 (checks ${DEFAULT_HEALTH.hangMs / 1000}s)`,
      s1(promise),
      s1(o.downMs),
      o.downVia,
      `${o.waits.length} (${o.waits.length - running}/${running})`,
      s1(Math.min(...done)),
      s1(median(done)),
      stillWaiting > 0 ? `> ${s1(capMs(o.hangMs))} (${stillWaiting} waiting)` : s1(Math.max(...done)),
      `${o.waits.filter((w) => w.code === '08006').length}/${o.waits.length}`,
      `${done.filter((w) => w <= promise).length}/${o.waits.length}`,
    ]);
  }
  console.log(t.toString());
  console.log('per client (s, i idle / r running):');
  for (const o of outcomes)
    console.log(
      `  ${o.front} ${o.hangMs / 1000}s: ${o.waits.map((w) => `${s1(w.ms)}${w.running ? 'r' : 'i'}`).join(' ')}`,
    );
}

async function main(): Promise<void> {
  if (!haveIptables()) throw new Error('needs root and iptables (apt-get install iptables)');
  const fronts = FRONTS.filter((f) => f === 'js' || typeof NativeRelay.load(2) !== 'string');
  if (fronts.length < FRONTS.length) console.log(`native front door: not built, skipped`);
  const stateDir = mkdtempSync(join(tmpdir(), `${NAME}-`));
  const driver = createLocalDriver(
    clusterSpec({ name: NAME, replicas: REPLICAS, basePort: BASE_PORT, stateDir }),
  );
  const hole = new Blackhole();
  const outcomes: Outcome[] = [];
  try {
    await driver.down();
    await driver.up(() => undefined);
    const creds = await driver.credentials();
    const replicas = driver.endpoints().filter((e) => e.kind === 'replica');
    const rig = { replicas, creds, connector: driver.connector(creds), hole };
    console.log(
      `${CLIENTS} clients over ${replicas.length} replicas (rr), r1 blackholed; checks every ${INTERVAL_MS / 1000} s, fall ${FALL}`,
    );
    for (const front of fronts)
      for (const hangMs of HANGS) {
        const o = await runCase(front, hangMs, rig);
        outcomes.push(o);
        console.log(
          `${front} hang ${hangMs / 1000}s: down after ${s1(o.downMs)} s (${o.downVia}); max wait ${s1(Math.max(...o.waits.map((w) => w.ms ?? Infinity)))} s`,
        );
      }
  } finally {
    await hole.heal();
    await driver.down();
    rmSync(stateDir, { recursive: true, force: true });
  }
  report(outcomes);
  const left = hole.leftovers();
  console.log(`iptables rules left behind: ${left.length}`);
  if (left.length > 0) process.exitCode = 1;
}

await main();
