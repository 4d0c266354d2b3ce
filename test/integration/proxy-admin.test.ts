/**
 * Operating `plb proxy` (the command, on a local cluster): the admin view on --metrics-port
 * (GET /admin: replicas, pools, clients, counters) read while sessions are open, and the drain for
 * rolling restarts (POST /drain, SIGUSR2): the listeners close, open sessions go on, the process
 * exits 0 once they end (or, with --drain-timeout, once it passes). Skips without the server
 * binaries, except with CI=true (a failure there).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminView } from '../../src/proxy/admin/admin-view.js';
import { haveServerBinaries } from '../helpers/fixtures.js';
import { spawnProxy, type ProxyCommand } from '../helpers/proxy-command.js';
import { failInCiWithout, sleep, upProxyCluster, type ProxyTestCluster } from '../helpers/proxy-setup.js';

const NAME = 'plbtest-proxy-admin';
const BASE_PORT = 15000;
const PREMIUM_PORT = 15110;
const FREEMIUM_PORT = 15111;
const METRICS_PORT = 15112;

failInCiWithout(haveServerBinaries, 'the proxy admin test (no PostgreSQL server binaries)');

describe.skipIf(!haveServerBinaries)('plb proxy: admin view and drain on a local cluster', () => {
  let cluster: ProxyTestCluster;
  const children: ProxyCommand[] = [];
  const clients: pg.Client[] = [];

  /** The command, until it says its freemium port listens. */
  async function startCommand(extra: string[]): Promise<ProxyCommand> {
    const r = spawnProxy(NAME, cluster.stateDir, [
      '--premium-port',
      String(PREMIUM_PORT),
      '--freemium-port',
      String(FREEMIUM_PORT),
      '--health-interval',
      '500ms',
      '--stats-every',
      '0',
      ...extra,
    ]);
    children.push(r);
    await r.logged(`freemium: listening on 127.0.0.1:${FREEMIUM_PORT}`);
    return r;
  }

  async function connect(port: number): Promise<pg.Client> {
    const c = new pg.Client(cluster.pgConfig(port));
    c.on('error', () => undefined);
    await c.connect();
    clients.push(c);
    return c;
  }

  async function admin(query = ''): Promise<AdminView> {
    const res = await fetch(`http://127.0.0.1:${METRICS_PORT}/admin${query}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    return (await res.json()) as AdminView;
  }

  beforeAll(async () => {
    cluster = await upProxyCluster({ name: NAME, replicas: 2, basePort: BASE_PORT, record: true });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    for (const r of children) if (r.child.exitCode === null) r.child.kill('SIGKILL');
    await cluster?.down();
  }, 60_000);

  it('GET /admin while sessions are open; POST /drain: refused new clients, the open sessions go on, exit 0 when they end', async () => {
    const run = await startCommand(['--metrics-port', String(METRICS_PORT), '--admission-limit', '20']);
    const premium = await connect(PREMIUM_PORT);
    const freemium = await connect(FREEMIUM_PORT);
    await freemium.query('begin');
    await freemium.query('select 1');

    const v = await admin();
    expect(v.version).toBe(1);
    expect(v.proxy).toMatchObject({ state: 'running', strategy: 'plb', clients: 2 });
    expect(v.proxy.relay).toMatch(/^(native, \d thread\(s\)|js)$/);
    expect(v.proxy.admission).toMatchObject({ queue: 1000 });
    expect(v.replicas.map((r) => r.id).sort()).toEqual(['r1', 'r2']);
    for (const r of v.replicas) {
      expect(r.state).toBe('up');
      expect(['premium', 'mixed', 'freemium']).toContain(r.role);
      expect(r.limit).toBe(20);
    }
    const on = (cls: 'premium' | 'freemium'): number => v.replicas.reduce((n, r) => n + r.sessions[cls], 0);
    expect([on('premium'), on('freemium')]).toEqual([1, 1]);
    expect(v.pools.map((p) => [p.class, p.sessions, p.waiting])).toEqual([
      ['premium', 1, 0],
      ['freemium', 1, 0],
    ]);
    expect(v.pools[0]!.counted).toMatchObject({ opened: 1, ready: 1 });
    expect(v.clients).toMatchObject({
      total: 2,
      byClass: { premium: 1, freemium: 1 },
      byState: { ready: 2 },
      truncated: false,
    });
    expect(v.clients.listed.map((c) => c.class)).toEqual(['premium', 'freemium']);
    for (const c of v.clients.listed) {
      expect(c.state).toBe('ready');
      expect(['r1', 'r2']).toContain(c.replica);
      expect(c.ageS).toBeGreaterThanOrEqual(0);
    }
    expect(v.counters.usage.fdLimit).toBeGreaterThan(0);
    // A bounded list: the oldest first, the rest counted.
    const one = await admin('?clients=1');
    expect(one.clients).toMatchObject({ total: 2, truncated: true });
    expect(one.clients.listed.map((c) => c.class)).toEqual(['premium']);
    expect((await fetch(`http://127.0.0.1:${METRICS_PORT}/admin?clients=x`)).status).toBe(400);
    expect((await fetch(`http://127.0.0.1:${METRICS_PORT}/metrics`)).status).toBe(200);

    const drained = await fetch(`http://127.0.0.1:${METRICS_PORT}/drain`, { method: 'POST' });
    expect(drained.status).toBe(202);
    expect(await drained.json()).toMatchObject({ state: 'draining', started: true, sessions: 2 });
    // The listeners are closed: a new client is refused by the kernel. The native relay closes
    // them on its threads, so a client that connects before a thread has closed its listener
    // waits in the kernel's backlog and is reset by the close; the next one is refused.
    for (const port of [PREMIUM_PORT, FREEMIUM_PORT]) {
      await expect(connect(port)).rejects.toMatchObject({
        code: expect.stringMatching(/^ECONN(REFUSED|RESET)$/),
      });
      await expect(connect(port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    }
    // The open sessions go on, the transaction too.
    expect((await premium.query<{ x: number }>('select 2 as x')).rows[0]!.x).toBe(2);
    expect((await freemium.query<{ x: number }>('select 3 as x')).rows[0]!.x).toBe(3);
    await freemium.query('commit');
    const during = await admin();
    expect(during.proxy.state).toBe('draining');
    expect(during.clients.total).toBe(2);
    const again = await fetch(`http://127.0.0.1:${METRICS_PORT}/drain`, { method: 'POST' });
    expect(await again.json()).toMatchObject({ started: false });
    expect(run.child.exitCode).toBeNull();
    // The process ends when the last session does, with 0.
    await premium.end();
    expect(run.child.exitCode).toBeNull();
    await freemium.end();
    expect(await run.exited).toBe(0);
    expect(run.all).toMatch(
      /draining \(POST \/drain\): listeners closed; waiting for 2 session\(s\) to end \(no time limit\)/,
    );
    expect(run.all).toMatch(/drained: the last session ended/);
  }, 120_000);

  it("SIGUSR2 drains (on Node's front door); --drain-timeout closes what is left when it passes (57P01), then exit 0", async () => {
    // Node's front door here (the first test's is the native one where it is built).
    const run = await startCommand(['--drain-timeout', '1s', '--relay', 'js']);
    const idle = await connect(PREMIUM_PORT);
    const told = new Promise<Error & { code?: string }>((resolve) => idle.on('error', resolve));
    run.child.kill('SIGUSR2');
    for (let i = 0; i < 100 && !run.all.includes('draining (SIGUSR2)'); i++) await sleep(100);
    expect(run.all).toMatch(
      /draining \(SIGUSR2\): listeners closed; waiting for 1 session\(s\) to end \(at most 1 s, --drain-timeout\)/,
    );
    await expect(connect(PREMIUM_PORT)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(await run.exited).toBe(0);
    expect((await told).code).toBe('57P01');
    expect(run.all).toMatch(/--drain-timeout 1 s passed with 1 session\(s\) open; closing them/);
  }, 120_000);
});
