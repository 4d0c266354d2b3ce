/**
 * A session's end is not a replica's failure (issue 50, item 6), against real postgres processes
 * (local driver, 1 primary + 2 standbys: r1 premium, r2 freemium), through both front doors:
 * sessions ended by pg_terminate_backend (57P01), by idle_in_transaction_session_timeout (25P03)
 * and a statement_timeout (57014) leave their replica up and the next client served; a replica
 * killed for real is still marked down, by the probe its sessions' ends asked for or by a failed
 * connect. Nothing here depends on when a check lands: the replica must never be marked down in
 * the first tests (the log is read after at least `fall` checks), and must be in the last.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyHandle } from '../../src/proxy/proxy-server.js';
import { haveServerBinaries } from '../helpers/fixtures.js';
import { relay } from '../helpers/native-front.js';
import {
  failInCiWithout,
  sleep,
  startTestProxy,
  upProxyCluster,
  type ProxyTestCluster,
} from '../helpers/proxy-setup.js';

const BASE_PORT = 12632;
const HEALTH = { intervalMs: 200, timeoutMs: 1000, fall: 2, rise: 2, hangMs: 3000 };

const fronts = [
  ...(relay ? [{ front: 'native', over: {}, ports: [12660, 12661] }] : []),
  { front: 'js', over: { relay: { kind: 'js' as const } }, ports: [12670, 12671] },
];

failInCiWithout(haveServerBinaries, 'the session-end tests (no PostgreSQL server binaries)');

describe.skipIf(!haveServerBinaries)('a session ended by its server is not its replica failing', () => {
  let cluster: ProxyTestCluster;

  beforeAll(async () => {
    cluster = await upProxyCluster({ name: 'plbtest-sessend', replicas: 2, basePort: BASE_PORT });
  }, 120_000);

  afterAll(async () => {
    await cluster?.down();
  }, 60_000);

  describe.each(fronts)('front door $front', ({ over, ports }) => {
    let proxy: ProxyHandle;
    const logs: string[] = [];
    const clients: pg.Client[] = [];
    const [premiumPort, freemiumPort] = ports as [number, number];

    async function client(): Promise<pg.Client> {
      const c = new pg.Client(cluster.pgConfig(premiumPort));
      c.on('error', () => undefined);
      clients.push(c);
      await c.connect();
      return c;
    }

    const healthy = (id: string): boolean => proxy.router.snapshot().find((r) => r.id === id)!.healthy;
    const lost = (): number => proxy.stats.replica('r1').lost;

    /** Until cond holds, at most `ms` (a deadline for a busy host, not a figure asserted). */
    async function until(cond: () => boolean, ms = 20_000): Promise<void> {
      for (const t0 = Date.now(); !cond() && Date.now() - t0 < ms; ) await sleep(50);
    }

    /**
     * The proxy has seen the `n` sessions on r1 end (unless their clients closed first: then it
     * heard nothing to judge), and `fall` checks more have run: time for a wrong verdict to show.
     */
    async function settled(n: number): Promise<void> {
      await until(() => lost() >= n, 3000);
      await sleep(HEALTH.intervalMs * (HEALTH.fall + 2));
    }

    /** r1 was never marked down, and a new premium client is served there. */
    async function stillServed(): Promise<void> {
      expect(logs.filter((l) => l.startsWith('r1 down'))).toEqual([]);
      expect(healthy('r1')).toBe(true);
      const c = await client();
      const r = await c.query<{ p: number }>('select inet_server_port() as p');
      expect(Number(r.rows[0]!.p)).toBe(BASE_PORT + 1);
      await c.end();
    }

    beforeAll(async () => {
      proxy = await startTestProxy({
        ...cluster.proxyBase,
        ...over,
        ports: { premium: premiumPort, freemium: freemiumPort },
        health: HEALTH,
        log: (l) => logs.push(l),
      });
      expect(proxy.router.snapshot().map((r) => r.role)).toEqual(['premium', 'freemium']);
    });

    afterAll(async () => {
      for (const c of clients) await c.end().catch(() => undefined);
      await proxy?.stop(1000);
    });

    it('two sessions ended by pg_terminate_backend get 57P01; r1 stays up and serves the next client', async () => {
      const before = lost();
      for (let i = 0; i < 2; i++) {
        const c = await client();
        await expect(c.query('select pg_terminate_backend(pg_backend_pid())')).rejects.toMatchObject({
          code: '57P01',
        });
      }
      await settled(before + 2);
      await stillServed();
    });

    it('statement_timeout (57014) leaves the session usable; idle_in_transaction_session_timeout ends it (25P03): r1 stays up', async () => {
      const c = await client();
      await c.query('set statement_timeout = 50');
      for (let i = 0; i < 2; i++)
        await expect(c.query('select pg_sleep(5)')).rejects.toMatchObject({ code: '57014' });
      expect((await c.query('select 1 as x')).rows).toEqual([{ x: 1 }]);
      const before = lost();
      for (let i = 0; i < 2; i++) {
        const idle = await client();
        const ended = new Promise<Error & { code?: string }>((r) => idle.on('error', r));
        await idle.query('set idle_in_transaction_session_timeout = 100');
        await idle.query('begin');
        await idle.query('select 1');
        expect(await ended).toMatchObject({ code: '25P03' });
      }
      await settled(before + 2);
      await stillServed();
      expect((await c.query('select 2 as x')).rows).toEqual([{ x: 2 }]);
    });
  });

  // Last: r1 does not come back for the suite.
  it('a replica killed for real is still marked down', async () => {
    const logs: string[] = [];
    const proxy = await startTestProxy({
      ...cluster.proxyBase,
      ports: { premium: 12680, freemium: 12681 },
      health: HEALTH,
      log: (l) => logs.push(l),
    });
    const held: pg.Client[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const c = new pg.Client(cluster.pgConfig(12680));
        c.on('error', () => undefined);
        held.push(c);
        await c.connect();
        await c.query('select 1');
      }
      const ended = held.map((c) => new Promise<unknown>((r) => c.on('error', r)));
      await cluster.driver.kill('r1');
      await Promise.all(ended);
      const down = (): boolean => !proxy.router.snapshot().find((r) => r.id === 'r1')!.healthy;
      for (const t0 = Date.now(); !down() && Date.now() - t0 < 20_000; ) await sleep(50);
      expect(down()).toBe(true);
      expect(proxy.health.isHealthy('r1')).toBe(false);
      // By a probe (its sessions' ends asked for one, or the checks' own) or a refused connect.
      expect(logs.find((l) => l.startsWith('r1 down'))).toMatch(/^r1 down \((health|connect): unreachable: /);
    } finally {
      for (const c of held) await c.end().catch(() => undefined);
      await proxy.stop(1000);
    }
  });
});
