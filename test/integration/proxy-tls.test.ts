/**
 * TLS on the proxy's replica leg (--server-tls) against a local cluster whose first standby has
 * ssl=on (a self-signed certificate made here with openssl) and whose second has not: require and
 * prefer use TLS where the server offers it (pg_stat_ssl says so), prefer goes on in plain text
 * where it does not, require refuses then; a large result and a cancel work over the TLS leg; and
 * with the client side on TLS too (--tls-cert/--tls-key) sslmode=require is encrypted end to end.
 * Skips without the server binaries, except with CI=true (a failure there).
 */
import { statSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataDir } from '../../src/cluster/state.js';
import type { ProxyHandle, ProxyOptions } from '../../src/proxy/proxy-server.js';
import { loadTls } from '../../src/proxy/protocol/tls-client.js';
import { parseServerTls } from '../../src/proxy/protocol/tls-server.js';
import { parseLimitFlags } from '../../src/proxy/admission/limit-options.js';
import { haveServerBinaries } from '../helpers/fixtures.js';
import {
  selfSignedCert,
  sslOnAtReload,
  until,
  untilRunning,
  startTestProxy,
  upProxyCluster,
  type ProxyTestCluster,
  failInCiWithout,
} from '../helpers/proxy-setup.js';

const NAME = 'plbtest-proxy-tls';
const BASE_PORT = 22200;
let nextPort = 22260;

failInCiWithout(haveServerBinaries, 'the proxy TLS test (no PostgreSQL server binaries)');

describe('--server-tls values', () => {
  it('takes disable, prefer, require, verify-ca and verify-full; anything else is one line naming the flag', () => {
    expect(parseServerTls(undefined)).toBe('disable');
    expect(parseServerTls('Require')).toBe('require');
    expect(parseServerTls('prefer')).toBe('prefer');
    expect(parseServerTls('verify-full')).toBe('verify-full');
    for (const bad of ['allow', 'yes', ''])
      expect(() => parseServerTls(bad)).toThrow(
        /^--server-tls: must be disable, prefer, require, verify-ca or verify-full/,
      );
    expect(parseLimitFlags({ 'server-tls': 'prefer' }, 'plb').serverTls).toBe('prefer');
  });
});

describe.skipIf(!haveServerBinaries)('plb proxy --server-tls on a local cluster', () => {
  let cluster: ProxyTestCluster;
  const proxies: ProxyHandle[] = [];
  const logs: string[] = [];

  /** A proxy over one replica (r1: ssl=on, r2: off) in the given mode; its premium port. */
  async function proxyTo(id: 'r1' | 'r2', over: Partial<ProxyOptions>): Promise<number> {
    const port = nextPort++;
    proxies.push(
      await startTestProxy({
        ...cluster.proxyBase,
        replicas: cluster.replicas.filter((r) => r.id === id),
        ports: { premium: port },
        log: (l) => logs.push(l),
        ...over,
      }),
    );
    return port;
  }

  async function connect(port: number, extra: Partial<pg.ClientConfig> = {}): Promise<pg.Client> {
    const c = new pg.Client(cluster.pgConfig(port, extra));
    c.on('error', () => undefined);
    await c.connect();
    return c;
  }

  /** Whether this session's server side is TLS, as the server sees it. */
  async function serverSsl(port: number, extra: Partial<pg.ClientConfig> = {}): Promise<boolean> {
    const c = await connect(port, extra);
    try {
      const r = await c.query<{ ssl: boolean }>('select ssl from pg_stat_ssl where pid = pg_backend_pid()');
      return r.rows[0]!.ssl;
    } finally {
      await c.end();
    }
  }

  beforeAll(async () => {
    cluster = await upProxyCluster({ name: NAME, replicas: 2, basePort: BASE_PORT });
    // ssl=on for r1 only, taken at a reload (PostgreSQL 10 and later).
    const dir = dataDir(cluster.stateDir, NAME, 'r1');
    selfSignedCert(dir, 'server', dir);
    expect(statSync(join(dir, 'server.key')).mode & 0o077).toBe(0);
    await sslOnAtReload(cluster, dir, cluster.replicas.find((r) => r.id === 'r1')!.port);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.stop(1000)));
    await cluster?.down();
  }, 60_000);

  it('disable (the default): plain TCP to a replica that offers TLS', async () => {
    expect(await serverSsl(await proxyTo('r1', {}))).toBe(false);
  }, 60_000);

  it('require and prefer: TLS to the replica with ssl=on', async () => {
    expect(await serverSsl(await proxyTo('r1', { serverTls: 'require' }))).toBe(true);
    expect(await serverSsl(await proxyTo('r1', { serverTls: 'prefer' }))).toBe(true);
  }, 60_000);

  it('prefer goes on in plain text where the replica has no TLS; require refuses, with a clear error', async () => {
    expect(await serverSsl(await proxyTo('r2', { serverTls: 'prefer' }))).toBe(false);
    const port = await proxyTo('r2', { serverTls: 'require' });
    await expect(connect(port)).rejects.toMatchObject({
      code: '08006',
      message: expect.stringMatching(/does not accept TLS/),
    });
  }, 60_000);

  it('over the TLS leg: an 8 MB result arrives whole, and a cancel reaches the backend', async () => {
    const port = await proxyTo('r1', { serverTls: 'require' });
    const c = await connect(port);
    try {
      const big = await c.query<{ s: string }>("select repeat('y', 1000000) as s from generate_series(1, 8)");
      expect(big.rows).toHaveLength(8);
      expect(big.rows.every((row) => row.s.length === 1_000_000)).toBe(true);
      const { processID, secretKey } = c as unknown as { processID: number; secretKey: number };
      const q = c.query('select pg_sleep(20)').then(
        () => undefined,
        (e: unknown) => e,
      );
      // Sent once the backend runs the sleep (a cancel before it would cancel nothing).
      await untilRunning(cluster, 'select pg_sleep(20)', [cluster.replicas.find((r) => r.id === 'r1')!.port]);
      await new Promise<void>((resolve) => {
        const s = createConnection({ host: '127.0.0.1', port });
        s.on('error', () => resolve());
        s.on('connect', () => s.write(serialize.cancel(processID, secretKey)));
        s.on('close', () => resolve());
      });
      expect(await q).toMatchObject({ code: '57014' });
      expect((await c.query<{ x: number }>('select 1 as x')).rows[0]!.x).toBe(1);
    } finally {
      await c.end();
    }
  }, 60_000);

  it('sslmode=require end to end: TLS from the client to the proxy and from the proxy to the replica', async () => {
    const { cert, key } = selfSignedCert(cluster.stateDir, 'proxy');
    const port = await proxyTo('r1', { serverTls: 'require', tls: loadTls(cert, key) });
    const c = await connect(port, { ssl: { rejectUnauthorized: false } });
    try {
      const stream = (c as unknown as { connection: { stream: { encrypted?: boolean } } }).connection.stream;
      expect(stream.encrypted).toBe(true);
      const r = await c.query<{ ssl: boolean }>('select ssl from pg_stat_ssl where pid = pg_backend_pid()');
      expect(r.rows[0]!.ssl).toBe(true);
    } finally {
      await c.end();
    }
    // Every session ended: nothing left on any router.
    const live = (): number =>
      proxies.reduce((n, p) => n + p.router.snapshot().reduce((m, s) => m + s.sessions.premium, 0), 0);
    await until(() => live() === 0);
    expect(live()).toBe(0);
  }, 60_000);
});
