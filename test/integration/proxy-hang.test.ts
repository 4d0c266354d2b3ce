/**
 * The proxy's hang path against real postgres processes (local driver, 3 standbys), through both
 * front doors: a replica blackholed (every packet to and from its port dropped on lo: its server
 * and its kernel answer nothing, as behind a partition) does not keep its clients waiting. A
 * client idle in its session and one in a running query both get FATAL 08006 and their connection
 * closed, each way on its own: by the replica connections' keepalive and TCP_USER_TIMEOUT
 * (--hang-timeout; the checks' own hang made too long to matter), and by the health checks taking
 * the silent replica for down (the connections' timeouts off). New sessions go to the other
 * replicas, the others' sessions go on, and no rule of the test's is left. Bounds are generous
 * (5 times hang + check interval): it must pass beside a CPU-heavy job. Needs root and iptables
 * (skipped without them, a failure in CI).
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ProxyHandle } from '../../src/proxy/proxy-server.js';
import { haveServerBinaries } from '../helpers/fixtures.js';
import { Blackhole, haveIptables, serverPort, Watched } from '../helpers/hang-rig.js';
import { relay } from '../helpers/native-front.js';
import {
  failInCiWithout,
  startTestProxy,
  upProxyCluster,
  type ProxyTestCluster,
} from '../helpers/proxy-setup.js';

const BASE_PORT = 23600;
const PROXY_PORT = 23620;
const HANG_MS = 2000;
const INTERVAL_MS = 500;
/** Far past the test's end: the checks' own hang does not end anything in the sockets' case. */
const NEVER_MS = 120_000;
/** Generous: 5 times what it should take. */
const BOUND_MS = 5 * (HANG_MS + INTERVAL_MS);

const canRun = haveServerBinaries && haveIptables();
failInCiWithout(canRun, 'the proxy hang tests (PostgreSQL server binaries, root and iptables)');

const fronts = [
  ...(relay ? [{ front: 'native', relay: undefined }] : []),
  { front: 'js', relay: { kind: 'js' as const } },
];
const ways = [
  {
    way: "the replica connections' keepalive and TCP_USER_TIMEOUT",
    serverHangMs: HANG_MS,
    checkHangMs: NEVER_MS,
    said: /replica r1 went away: nothing acknowledged within the hang timeout/,
  },
  {
    way: 'the health checks (connection timeouts off)',
    serverHangMs: 0,
    checkHangMs: HANG_MS,
    said: /replica r1 went away: unreachable: no answer for/,
  },
];

describe.skipIf(!canRun)('plb proxy: a blackholed replica (local cluster, iptables)', () => {
  let cluster: ProxyTestCluster;
  let proxy: ProxyHandle | undefined;
  const hole = new Blackhole();
  const clients: pg.Client[] = [];

  const portOf = (id: string): number => cluster.replicas.find((r) => r.id === id)!.port;

  async function client(): Promise<pg.Client> {
    const c = new pg.Client(cluster.pgConfig(PROXY_PORT));
    c.on('error', () => undefined);
    clients.push(c);
    await c.connect();
    return c;
  }

  beforeAll(async () => {
    cluster = await upProxyCluster({ name: 'plbtest-hang', replicas: 3, basePort: BASE_PORT });
  }, 180_000);

  afterEach(async () => {
    await hole.heal();
    for (const c of clients.splice(0)) await c.end().catch(() => undefined);
    await proxy?.stop(500);
    proxy = undefined;
    // What the blackholed server still holds of the ended sessions (its side never heard the close).
    await terminateOthers(cluster, portOf('r1'));
  }, 60_000);

  afterAll(async () => {
    await hole.heal();
    await cluster?.down();
    expect(hole.leftovers()).toEqual([]);
  }, 60_000);

  describe.each(fronts)('front door $front', ({ front, relay: relayChoice }) => {
    it.each(ways)(
      'idle and running clients on it get 08006 and are closed, by $way; new sessions go elsewhere',
      async ({ serverHangMs, checkHangMs, said }) => {
        const logs: string[] = [];
        proxy = await startTestProxy({
          ...cluster.proxyBase,
          ports: { premium: PROXY_PORT },
          strategy: 'rr',
          health: { intervalMs: INTERVAL_MS, timeoutMs: INTERVAL_MS, fall: 2, rise: 2, hangMs: checkHangMs },
          serverHangMs,
          ...(relayChoice ? { relay: relayChoice } : {}),
          log: (l) => logs.push(l),
        });
        expect(proxy.relay.split(',')[0]).toBe(front);
        // Round robin over r1..r3: two sessions on r1 (one to stay idle, one to run a query), the rest elsewhere.
        const onR1: pg.Client[] = [];
        const others: pg.Client[] = [];
        while (onR1.length < 2) {
          const c = await client();
          ((await serverPort(c)) === portOf('r1') ? onR1 : others).push(c);
        }
        const [idle, running] = onR1.map((c) => new Watched(c)) as [Watched, Watched];
        running.runLong(60);
        await new Promise((r) => setTimeout(r, 200)); // the query is in
        expect(idle.endedAt ?? running.endedAt).toBeUndefined(); // nothing ended before the blackhole
        await idle.client.query('select 1'); // alive, and quiet from here

        const t0 = Date.now();
        await hole.apply('r1', portOf('r1'));
        expect(hole.leftovers().length).toBeGreaterThan(0);
        const ends = await Promise.all([idle.ended, running.ended]);
        for (const e of ends) {
          expect(e, JSON.stringify(logs)).toMatchObject({
            code: '08006',
            message: expect.stringMatching(said),
          });
          expect(e.at - t0).toBeLessThan(BOUND_MS);
        }

        // Down by the checks or by the sessions' own reports; new sessions go to r2 and r3.
        await vi.waitFor(
          () => expect(proxy!.router.snapshot().find((r) => r.id === 'r1')!.healthy).toBe(false),
          {
            timeout: BOUND_MS,
          },
        );
        for (let i = 0; i < 4; i++) expect(await serverPort(await client())).not.toBe(portOf('r1'));
        // The other replicas' sessions go on.
        for (const c of others) expect((await c.query('select 1 as x')).rows[0]).toEqual({ x: 1 });
        await hole.heal();
        expect(hole.leftovers()).toEqual([]);
      },
      60_000,
    );
  });
});

/** Ends every other client session on the replica at port (the blackhole's orphans). */
async function terminateOthers(cluster: ProxyTestCluster, port: number): Promise<void> {
  const c = new pg.Client(cluster.pgConfig(port));
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.query(
      "select pg_terminate_backend(pid) from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()",
    );
  } catch {
    // A replica that does not answer yet: its orphans go with the cluster.
  } finally {
    await c.end().catch(() => undefined);
  }
}
