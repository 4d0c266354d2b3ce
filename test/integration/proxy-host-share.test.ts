/**
 * Fairness between client hosts on a local cluster, on both relays (native and js): premium's
 * slots held by startups from 127.0.0.2 that never answer the password request (and more of them
 * waiting, up to a full queue), a real client from 127.0.0.1 is served: the flood host's oldest
 * session yields its slot (57014, --startup-yield), a flood waiter gives its place when the queue
 * is full (53300), and the admission queue gives the waiting host its turn. The same
 * flood from the client's own host: nothing tells them apart, nothing yields. What is asserted is
 * who is served and who is cut, never how fast. Skips without the server binaries, except with
 * CI=true.
 */
import { createConnection, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyHandle, ProxyOptions } from '../../src/proxy/proxy-server.js';
import { haveServerBinaries } from '../helpers/fixtures.js';
import { startupPacket } from '../helpers/startup-packet.js';
import {
  failInCiWithout,
  sleep,
  startTestProxy,
  until,
  upProxyCluster,
  type ProxyTestCluster,
} from '../helpers/proxy-setup.js';

const NAME = 'plbtest-host-share';
const BASE_PORT = 22040;
let nextPort = 22100;
const LIMIT = 4;

failInCiWithout(haveServerBinaries, 'the proxy host share test (no PostgreSQL server binaries)');

/** A startup from `from` that never answers the password request (nor closes when told). */
function silent(port: number, from: string, packet: Buffer): { socket: Socket; got: () => Buffer } {
  const socket = createConnection({ host: '127.0.0.1', port, localAddress: from, allowHalfOpen: true });
  const chunks: Buffer[] = [];
  socket.on('error', () => undefined);
  socket.on('connect', () => socket.write(packet));
  socket.on('data', (d: Buffer) => chunks.push(d));
  return { socket, got: () => Buffer.concat(chunks) };
}

/** Told 57014 after the password request, with the words of the yield. */
const yielded = (b: Buffer): boolean => {
  const at = b.indexOf(0x45); // 'E' after the 'R' (the password request)
  return (
    at > 0 &&
    /C57014\0/.test(b.toString('latin1', at)) &&
    /another client host is waiting/.test(b.toString('latin1', at))
  );
};

describe.skipIf(!haveServerBinaries)(
  'plb proxy: client hosts share a class’s slots (--startup-yield)',
  () => {
    let cluster: ProxyTestCluster;
    const proxies: ProxyHandle[] = [];
    const sockets: Socket[] = [];

    async function proxy(over: Partial<ProxyOptions>): Promise<{ port: number; p: ProxyHandle }> {
      const port = nextPort++;
      const p = await startTestProxy({
        ...cluster.proxyBase,
        ports: { premium: port },
        log: () => undefined,
        // The startup timeout never comes in these tests: any cut is a yield.
        startupTimeoutMs: 60_000,
        admission: { limit: LIMIT, reserve: 0, queue: 100, timeoutMs: 60_000, premiumReserve: 0 },
        ...over,
      });
      proxies.push(p);
      return { port, p };
    }

    /** LIMIT startups from `from` holding every slot (asked for a password), and `waiting` more queued. */
    async function flood(port: number, p: ProxyHandle, from: string, waiting: number) {
      const packet = startupPacket({ user: cluster.creds.user, database: cluster.creds.database });
      const held = Array.from({ length: LIMIT }, () => silent(port, from, packet));
      sockets.push(...held.map((s) => s.socket));
      await until(() => held.every((s) => s.got()[0] === 0x52), 15_000); // 'R': asked for a password
      const queued = Array.from({ length: waiting }, () => silent(port, from, packet));
      sockets.push(...queued.map((s) => s.socket));
      await until(() => p.gate.queued('premium') === waiting, 15_000);
      return [...held, ...queued];
    }

    /** A real client from 127.0.0.1: connects, runs `select 1`, ends (served, however long it waits). */
    async function selectOne(port: number): Promise<void> {
      const client = new pg.Client(cluster.pgConfig(port, { connectionTimeoutMillis: 30_000 }));
      client.on('error', () => undefined);
      try {
        await client.connect();
        expect((await client.query<{ x: number }>('select 1 as x')).rows[0]!.x).toBe(1);
      } finally {
        await client.end().catch(() => undefined);
      }
    }

    beforeAll(async () => {
      cluster = await upProxyCluster({ name: NAME, replicas: 1, basePort: BASE_PORT });
    }, 120_000);

    afterAll(async () => {
      for (const s of sockets) s.destroy();
      await Promise.all(proxies.map((p) => p.stop(500)));
      await cluster?.down();
    }, 60_000);

    describe.each(['native', 'js'] as const)('relay %s', (relay) => {
      const relayOpt = relay === 'js' ? ({ kind: 'js' } as const) : ({ kind: 'native', threads: 2 } as const);

      it('a flood from 127.0.0.2 holding every premium slot: a client from 127.0.0.1 is served, a flood session yields (57014)', async () => {
        const { port, p } = await proxy({ relay: relayOpt });
        expect(p.relay.startsWith(relay)).toBe(true);
        const all = await flood(port, p, '127.0.0.2', 3);
        await selectOne(port);
        // A flood session was told why (its socket still open: the backend is what was dropped).
        await until(() => all.some((s) => yielded(s.got())), 15_000);
        expect(p.stats.startupYields).toBeGreaterThanOrEqual(1);
        expect(p.stats.startupTimeouts).toBe(0);
      }, 45_000);

      it('the queue full of the flood’s waiters too: a flood waiter gives its place (53300), a flood slot yields, the client is served', async () => {
        const { port, p } = await proxy({
          relay: relayOpt,
          admission: { limit: LIMIT, reserve: 0, queue: 3, timeoutMs: 60_000, premiumReserve: 0 },
        });
        const all = await flood(port, p, '127.0.0.2', 3);
        await selectOne(port);
        await until(() => all.some((s) => yielded(s.got())), 15_000);
        await until(() => all.some((s) => /C53300\0/.test(s.got().toString('latin1'))), 15_000);
        expect(p.gate.counters.premium.queueFull).toBeGreaterThanOrEqual(1);
      }, 45_000);

      it('the same flood from the client’s own host: nothing yields (the client waits its turn)', async () => {
        const { port, p } = await proxy({ relay: relayOpt });
        const all = await flood(port, p, '127.0.0.1', 0);
        const client = new pg.Client(cluster.pgConfig(port, { connectionTimeoutMillis: 30_000 }));
        client.on('error', () => undefined);
        const connecting = client.connect().then(
          () => 'connected',
          () => 'failed',
        );
        await until(() => p.gate.queued('premium') === 1, 15_000);
        // Well past --startup-yield (500ms): still waiting, no flood session cut.
        await sleep(1500);
        expect(p.gate.queued('premium')).toBe(1);
        expect(all.some((s) => yielded(s.got()))).toBe(false);
        expect(p.stats.startupYields).toBe(0);
        // A flood session leaving gives the client its slot.
        all[0]!.socket.destroy();
        expect(await connecting).toBe('connected');
        expect((await client.query<{ x: number }>('select 1 as x')).rows[0]!.x).toBe(1);
        await client.end();
      }, 45_000);
    });
  },
);
