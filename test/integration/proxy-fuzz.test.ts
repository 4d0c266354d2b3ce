/**
 * `plb proxy` under hostile clients, seeded (fast-check): random bytes, mutated startup packets,
 * cancel requests with random and real keys, garbage after authentication, half-closed and reset
 * sockets, all at once in batches. After every batch the proxy still answers a real query, and
 * once the clients are gone no session is left on any replica (no router slot leaked) and no
 * connection is left open. Against real postgres processes (local driver, two standbys); skips
 * without the server binaries, except with CI=true (a failure there).
 */
import { execFile } from 'node:child_process';
import { createConnection, type Socket } from 'node:net';
import { join } from 'node:path';
import fc from 'fast-check';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Credentials } from '../../src/core/endpoint.js';
import { findBinDir } from '../../src/cluster/local/binaries.js';
import type { ProxyHandle } from '../../src/proxy/proxy-server.js';
import { loadTls } from '../../src/proxy/protocol/tls-client.js';
import { haveServerBinaries } from '../helpers/fixtures.js';
import {
  selfSignedCert,
  sleep,
  startTestProxy,
  upProxyCluster,
  type ProxyTestCluster,
  failInCiWithout,
} from '../helpers/proxy-setup.js';

const BASE_PORT = 26230;
const PREMIUM_PORT = 27230;
const FREEMIUM_PORT = 27231;
const SEED = 25_0001;

failInCiWithout(haveServerBinaries, 'the proxy fuzz test (no PostgreSQL server binaries)');

/** A valid StartupMessage for user/database with extra parameters. */
function startup(params: Record<string, string>): Buffer {
  const body = Buffer.concat([
    ...Object.entries(params).map(([k, v]) => Buffer.from(`${k}\0${v}\0`)),
    Buffer.from([0]),
  ]);
  const out = Buffer.alloc(8 + body.length);
  out.writeInt32BE(out.length, 0);
  out.writeInt32BE(3 << 16, 4);
  body.copy(out, 8);
  return out;
}

type Ending = 'end' | 'reset' | 'destroy' | 'wait';
type Action =
  | { kind: 'bytes'; data: Uint8Array; ending: Ending }
  | { kind: 'mutated'; flips: { at: number; value: number }[]; cut: number; ending: Ending }
  | { kind: 'cancel'; pid: number; secret: number; real: boolean; ending: Ending }
  /** queries first: after two the session is the native relay's (where built), and so is the garbage. */
  | { kind: 'garbage-after-auth'; queries: number; data: Uint8Array; ending: Ending }
  | { kind: 'half-close'; cut: number };

const ending = fc.constantFrom<Ending>('end', 'reset', 'destroy', 'wait');
const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ kind: fc.constant('bytes' as const), data: fc.uint8Array({ maxLength: 300 }), ending }),
  fc.record({
    kind: fc.constant('mutated' as const),
    flips: fc.array(fc.record({ at: fc.nat(80), value: fc.nat(255) }), { maxLength: 4 }),
    cut: fc.nat(100),
    ending,
  }),
  fc.record({
    kind: fc.constant('cancel' as const),
    pid: fc.integer(),
    secret: fc.integer(),
    real: fc.boolean(),
    ending,
  }),
  fc.record({
    kind: fc.constant('garbage-after-auth' as const),
    queries: fc.nat(2),
    data: fc.uint8Array({ minLength: 1, maxLength: 200 }),
    ending,
  }),
  fc.record({ kind: fc.constant('half-close' as const), cut: fc.nat(60) }),
);

describe.skipIf(!haveServerBinaries)('plb proxy fuzz on a local cluster', () => {
  let cluster: ProxyTestCluster;
  let creds: Credentials;
  let proxy: ProxyHandle;
  const logs: string[] = [];
  const counts: Record<string, number> = {};
  let realKey: { pid: number; secret: number } | undefined;

  const pgConfig = (port: number): pg.ClientConfig => cluster.pgConfig(port);

  /** A real client: connects, answers a query, ends. */
  async function realQuery(port: number): Promise<number> {
    const c = new pg.Client(pgConfig(port));
    c.on('error', () => undefined);
    await c.connect();
    try {
      const r = await c.query<{ n: number }>('select 41 + 1 as n');
      return Number(r.rows[0]!.n);
    } finally {
      await c.end();
    }
  }

  /** Opens a raw socket to a proxy port; resolves when it is closed (by either side) or after waitMs. */
  function raw(port: number, run: (s: Socket) => void, waitMs = 3000): Promise<void> {
    return new Promise((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port, allowHalfOpen: true });
      const timer = setTimeout(() => s.destroy(), waitMs);
      s.on('error', () => undefined);
      s.on('data', () => undefined);
      s.on('close', () => {
        clearTimeout(timer);
        resolve();
      });
      s.on('connect', () => run(s));
    });
  }

  function finish(s: Socket, how: Ending): void {
    if (how === 'end') s.end();
    else if (how === 'reset') s.resetAndDestroy();
    else if (how === 'destroy') s.destroy();
    // 'wait': the proxy decides (an error and close, or the startup timeout)
  }

  async function play(a: Action, i: number): Promise<void> {
    counts[a.kind] = (counts[a.kind] ?? 0) + 1;
    const port = i % 2 === 0 ? PREMIUM_PORT : FREEMIUM_PORT;
    switch (a.kind) {
      case 'bytes':
        return raw(port, (s) => {
          s.write(a.data);
          finish(s, a.ending);
        });
      case 'mutated': {
        const p = startup({ user: creds.user, database: creds.database, application_name: 'fuzz' });
        for (const f of a.flips) if (f.at < p.length) p[f.at] = f.value;
        return raw(port, (s) => {
          s.write(p.subarray(0, Math.min(p.length, a.cut + 4)));
          finish(s, a.ending);
        });
      }
      case 'cancel': {
        const key = a.real && realKey ? realKey : { pid: a.pid, secret: a.secret };
        return raw(port, (s) => {
          s.write(serialize.cancel(key.pid, key.secret));
          finish(s, a.ending);
        });
      }
      case 'garbage-after-auth': {
        const c = new pg.Client(pgConfig(port));
        c.on('error', () => undefined);
        try {
          await c.connect();
          for (let q = 0; q < a.queries; q++) await c.query('select 1');
          const stream = (c as unknown as { connection: { stream: Socket } }).connection.stream;
          const closed = new Promise<void>((r) => stream.once('close', () => r()));
          stream.write(a.data);
          if (a.ending === 'reset') stream.resetAndDestroy();
          else if (a.ending === 'destroy') stream.destroy();
          else if (a.ending === 'end') stream.end();
          await Promise.race([closed, sleep(3000)]);
        } catch {
          // refused or cut: what matters is what the proxy does next
        } finally {
          await c.end().catch(() => undefined);
        }
        return;
      }
      case 'half-close': {
        const p = startup({ user: creds.user, database: creds.database });
        return raw(port, (s) => s.end(p.subarray(0, Math.min(p.length, a.cut))));
      }
    }
  }

  beforeAll(async () => {
    cluster = await upProxyCluster({ name: 'plbtest-proxy-fuzz', replicas: 2, basePort: BASE_PORT });
    creds = cluster.creds;
    // A self-signed certificate: clients may ask for TLS (sslmode=require), the proxy ends it.
    const { cert, key } = selfSignedCert(cluster.stateDir, 'proxy');
    proxy = await startTestProxy({
      ...cluster.proxyBase,
      tls: loadTls(cert, key),
      ports: { premium: PREMIUM_PORT, freemium: FREEMIUM_PORT },
      classFrom: 'option',
      startupTimeoutMs: 1500,
      admission: { limit: 40, queue: 200, timeoutMs: 5000 },
      log: (l) => logs.push(l),
    });
  }, 120_000);

  afterAll(async () => {
    await proxy?.stop(1000);
    await cluster?.down();
    console.log(`fuzz actions: ${JSON.stringify(counts)}`);
  });

  it('TLS: sslmode=require ends at the proxy; sslmode=disable still plain', async () => {
    const psql = (mode: string): Promise<string> =>
      new Promise((resolve, reject) =>
        execFile(
          join(findBinDir(), 'psql'),
          [
            `host=127.0.0.1 port=${PREMIUM_PORT} user=${creds.user} dbname=${creds.database} sslmode=${mode}`,
            '-XAt',
            '-c',
            'select 40 + 2',
            '-c',
            '\\conninfo',
          ],
          { env: { ...process.env, PGPASSWORD: creds.password }, encoding: 'utf8', timeout: 20_000 },
          (err, stdout, stderr) => (err ? reject(new Error(stderr || err.message)) : resolve(stdout)),
        ),
      );
    const secure = await psql('require');
    expect(secure).toContain('42');
    expect(secure).toMatch(/SSL connection \(protocol: TLSv1\.[23]/);
    const plain = await psql('disable');
    expect(plain).toContain('42');
    expect(plain).not.toContain('SSL connection');
    // node-postgres with TLS: the socket it reads is encrypted.
    const c = new pg.Client({ ...pgConfig(FREEMIUM_PORT), ssl: { rejectUnauthorized: false } });
    await c.connect();
    expect((await c.query('select 1 as one')).rows[0]).toEqual({ one: 1 });
    expect(
      (c as unknown as { connection: { stream: { encrypted?: boolean } } }).connection.stream.encrypted,
    ).toBe(true);
    await c.end();
  }, 30_000);

  it('never crashes, keeps serving, and leaks no session slot', async () => {
    // A live session's key, so some cancels are real ones (a cancel of an idle session is harmless).
    const holder = new pg.Client(pgConfig(PREMIUM_PORT));
    holder.on('error', () => undefined);
    await holder.connect();
    const conn = holder as unknown as { processID: number; secretKey: number };
    realKey = { pid: conn.processID, secret: conn.secretKey };
    let batches = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 10, maxLength: 40 }), async (batch) => {
        await Promise.all(batch.map((a, i) => play(a, i)));
        batches++;
        // Still serving, on both ports.
        expect(await realQuery(PREMIUM_PORT)).toBe(42);
        expect(await realQuery(FREEMIUM_PORT)).toBe(42);
      }),
      { seed: SEED, numRuns: 25, endOnFailure: true },
    );
    expect((await holder.query('select 1 as one')).rows[0]).toEqual({ one: 1 });
    await holder.end();
    // Every client is gone: no session held on any replica, no connection open in the proxy.
    const deadline = Date.now() + 15_000;
    const live = (): number =>
      proxy.router.snapshot().reduce((n, r) => n + r.sessions.premium + r.sessions.freemium, 0);
    while ((live() > 0 || proxy.sessionCount() > 0) && Date.now() < deadline) await sleep(100);
    expect(live()).toBe(0);
    expect(proxy.sessionCount()).toBe(0);
    // Sessions garbled after two queries were the native relay's (where built): its slots are back too.
    if (proxy.relay !== 'js') expect(proxy.stats.relayed).toBeGreaterThan(0);
    expect(proxy.gate.queued('premium') + proxy.gate.queued('freemium')).toBe(0);
    expect(batches).toBe(25);
    // Nothing was marked down by hostile clients: both replicas still up.
    expect(proxy.router.snapshot().every((r) => r.healthy)).toBe(true);
  }, 180_000);
});
