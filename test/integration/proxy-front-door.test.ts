/**
 * The proxy's front door on a local cluster, on both relays (native and js): every refusal is said
 * where the client reads it (over --max-client-conn, the admission wait timed out, no replica), so
 * psql prints the reason with sslmode=prefer (its default: an SSLRequest answered 'N') and, with
 * --tls-cert, with sslmode=require (TLS first); a client that sends Terminate (or closes) instead
 * of its startup packet is closed without a word; and a session that holds a replica slot without
 * authenticating is ended at --startup-timeout (57014), its slot counted against its class until
 * then and given back after. Skips without the server binaries, except with CI=true.
 */
import { createConnection, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findBinDir } from '../../src/cluster/local/binaries.js';
import type { ProxyHandle, ProxyOptions } from '../../src/proxy/proxy-server.js';
import { loadTls } from '../../src/proxy/protocol/tls-client.js';
import { haveServerBinaries } from '../helpers/fixtures.js';
import { startupPacket } from '../helpers/startup-packet.js';
import {
  failInCiWithout,
  runPsql,
  selfSignedCert,
  sleep,
  startTestProxy,
  upProxyCluster,
  type ProxyTestCluster,
} from '../helpers/proxy-setup.js';

const NAME = 'plbtest-front-door';
const BASE_PORT = 13440;
let nextPort = 13500;

failInCiWithout(haveServerBinaries, 'the proxy front door test (no PostgreSQL server binaries)');

/**
 * A raw client: sends `first`, collects what it is told until the proxy's FIN (`closed`);
 * allowHalfOpen: it keeps its own side open after that, as a client that never closes.
 */
function raw(
  port: number,
  first: Buffer,
  allowHalfOpen = false,
): { socket: Socket; got: () => Buffer; closed: Promise<Buffer> } {
  const socket = createConnection({ host: '127.0.0.1', port, allowHalfOpen });
  const chunks: Buffer[] = [];
  socket.on('error', () => undefined);
  socket.on('connect', () => socket.write(first));
  socket.on('data', (d: Buffer) => chunks.push(d));
  const closed = new Promise<Buffer>((r) => {
    socket.on('end', () => r(Buffer.concat(chunks)));
    socket.on('close', () => r(Buffer.concat(chunks)));
  });
  return { socket, got: () => Buffer.concat(chunks), closed };
}

const until = async (what: () => boolean, ms = 15_000): Promise<void> => {
  const t0 = Date.now();
  while (!what()) {
    if (Date.now() - t0 > ms) throw new Error('timed out waiting');
    await sleep(20);
  }
};

/** The SQLSTATE of an ErrorResponse at the start of `b`. */
const sqlstate = (b: Buffer): string | undefined =>
  b[0] === 0x45 ? /C([0-9A-Z]{5})\0/.exec(b.toString('latin1', 5))?.[1] : undefined;

describe.skipIf(!haveServerBinaries)('plb proxy front door on a local cluster', () => {
  let cluster: ProxyTestCluster;
  let bin: string;
  const proxies: ProxyHandle[] = [];
  const logs: string[] = [];

  async function proxy(over: Partial<ProxyOptions>): Promise<{ port: number; p: ProxyHandle }> {
    const port = nextPort++;
    const p = await startTestProxy({
      ...cluster.proxyBase,
      ports: { premium: port },
      log: (l) => logs.push(l),
      ...over,
    });
    proxies.push(p);
    return { port, p };
  }

  const psql = (port: number, conninfo = '') => runPsql(bin, cluster.creds, port, 'select 1', conninfo);

  beforeAll(async () => {
    bin = findBinDir();
    cluster = await upProxyCluster({ name: NAME, replicas: 1, basePort: BASE_PORT });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.stop(500)));
    await cluster?.down();
  }, 60_000);

  describe.each(['native', 'js'] as const)('relay %s', (relay) => {
    const relayOpt = relay === 'js' ? ({ kind: 'js' } as const) : ({ kind: 'native', threads: 2 } as const);

    it('over --max-client-conn: psql (sslmode=prefer, disable) prints "too many clients"', async () => {
      const { port, p } = await proxy({ relay: relayOpt, maxClientConn: 1 });
      expect(p.relay.startsWith(relay)).toBe(true);
      const holder = raw(port, Buffer.alloc(0)); // a client before its packet holds the one place
      await until(() => p.sessionCount() === 1);
      for (const conninfo of ['', 'sslmode=disable']) {
        const r = await psql(port, conninfo);
        expect(r.code).not.toBe(0);
        expect(r.err).toMatch(/sorry, too many clients already/);
        expect(r.err).not.toMatch(/SSL/);
      }
      // On the wire (whatever libpq's version makes of an error in the SSL exchange): 'N', then 53300.
      const ssl = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
      const over = raw(port, ssl);
      await until(() => over.got().length > 0);
      expect(over.got().toString('latin1', 0, 1)).toBe('N');
      over.socket.write(startupPacket({ user: cluster.creds.user, database: cluster.creds.database }));
      expect(sqlstate((await over.closed).subarray(1))).toBe('53300');
      holder.socket.destroy();
    }, 30_000);

    it('the admission wait timed out, and no replica: psql prints the reason', async () => {
      const { port, p } = await proxy({
        relay: relayOpt,
        admission: { limit: 1, reserve: 0, queue: 10, timeoutMs: 300, premiumReserve: 0 },
      });
      const held = new pg.Client(cluster.pgConfig(port));
      await held.connect();
      try {
        const waited = await psql(port);
        expect(waited.code).not.toBe(0);
        expect(waited.err).toMatch(/no replica slot for a premium session within/);
      } finally {
        await held.end();
      }
      // No admission limits: a replica down is no replica at once.
      const bare = await proxy({ relay: relayOpt });
      bare.p.router.markDown('r1', Date.now());
      expect(p.relay.startsWith(relay)).toBe(true);
      const none = await psql(bare.port);
      expect(none.code).not.toBe(0);
      expect(none.err).toMatch(/no replica available for class premium/);
    }, 30_000);

    it('a Terminate (or a close) instead of the startup packet: closed without a word', async () => {
      const { port, p } = await proxy({ relay: relayOpt });
      const terminate = Buffer.from([0x58, 0, 0, 0, 4]);
      const ssl = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
      expect((await raw(port, terminate).closed).length).toBe(0);
      expect((await raw(port, Buffer.concat([ssl, terminate])).closed).toString()).toBe('N');
      // Connected and closed at once, and half a packet then a close: nothing to tell, nothing logged.
      const early = raw(port, Buffer.alloc(0));
      early.socket.on('connect', () => early.socket.end());
      expect((await early.closed).length).toBe(0);
      const half = raw(port, Buffer.from([0, 0, 0]));
      half.socket.on('connect', () => half.socket.end());
      expect((await half.closed).length).toBe(0);
      await until(() => p.sessionCount() === 0);
      expect(logs.filter((l) => /invalid startup packet/.test(l))).toEqual([]);
    }, 30_000);

    it('--startup-timeout: a session that never authenticates holds its class slot until then (57014), then gives it back', async () => {
      const { p } = await proxy({
        relay: relayOpt,
        ports: { freemium: nextPort++ },
        startupTimeoutMs: 1500,
        admission: { limit: 2, reserve: 0, queue: 10, timeoutMs: 20_000, premiumReserve: 0 },
      });
      const fport = p.ports.freemium as number;
      const packet = startupPacket({ user: cluster.creds.user, database: cluster.creds.database });
      // Two startups that never answer the password request (nor close when told): the replica's
      // two slots, freemium's.
      const silent = [raw(fport, packet, true), raw(fport, packet, true)];
      await until(() => silent.every((s) => s.got()[0] === 0x52)); // 'R': asked for a password
      const held = (): number => p.router.snapshot().reduce((n, s) => n + s.sessions.freemium, 0);
      expect(held()).toBe(2);
      // A third waits for a slot: one is free once the first two time out.
      const third = new pg.Client(cluster.pgConfig(fport));
      third.on('error', () => undefined);
      const connected = third.connect();
      for (const s of silent) {
        const told = await s.closed;
        const rest = told.subarray(told.indexOf(0x45)); // after the password request
        expect(sqlstate(rest)).toBe('57014');
        expect(rest.toString('latin1')).toMatch(/canceling authentication due to timeout/);
      }
      // Their slots went back with their backends, while they are still open.
      await connected;
      expect(silent.every((s) => !s.socket.destroyed)).toBe(true);
      expect((await third.query<{ x: number }>('select 1 as x')).rows[0]!.x).toBe(1);
      expect(held()).toBe(1);
      for (const s of silent) s.socket.destroy();
      await third.end();
      await until(() => held() === 0);
      expect(p.stats.startupTimeouts).toBe(2);
    }, 40_000);
  });

  it('with --tls-cert: psql sslmode=require and prefer print the reason after the handshake', async () => {
    const { cert, key } = selfSignedCert(cluster.stateDir, 'front');
    const { port, p } = await proxy({ tls: loadTls(cert, key), maxClientConn: 1 });
    expect(p.relay).toBe('js');
    const holder = raw(port, Buffer.alloc(0));
    await until(() => p.sessionCount() === 1);
    for (const conninfo of ['sslmode=require', '']) {
      const r = await psql(port, conninfo);
      expect(r.code).not.toBe(0);
      expect(r.err).toMatch(/sorry, too many clients already/);
      expect(r.err).not.toMatch(/SSL/);
    }
    holder.socket.destroy();
    await until(() => p.sessionCount() === 0);
    // Under the limit the same proxy serves sslmode=require.
    expect(await psql(port, 'sslmode=require')).toMatchObject({ code: 0, out: '1' });
  }, 30_000);
});
