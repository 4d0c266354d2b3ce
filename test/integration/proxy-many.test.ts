/**
 * Two `plb proxy` processes in front of one local cluster (2 standbys) with the replica view and
 * a small admission limit: a freemium flood through both, pg_stat_activity sampled on each
 * replica meanwhile. What must hold wherever the races land: the proxies' sessions on a replica
 * never exceed the limit plus the documented bound for two proxies ((2 - 1) x the unseen cap), the
 * sessions carry their class and their client's name in application_name, and a premium client
 * through either proxy is served. Also: the default limit read from max_connections. Skips
 * without the server binaries, except with CI=true (a failure there).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnProxy, type ProxyCommand } from '../helpers/proxy-command.js';
import { haveServerBinaries, listening } from '../helpers/fixtures.js';
import {
  failInCiWithout,
  sleep,
  startTestProxy,
  upProxyCluster,
  type ProxyTestCluster,
} from '../helpers/proxy-setup.js';
import { unseenCap } from '../../src/proxy/admission/default-limit.js';
import { readConnectionSettings } from '../../src/cluster/server-limits.js';

const BASE_PORT = 29200;
const PORTS = [
  { premium: 29250, freemium: 29251 },
  { premium: 29252, freemium: 29253 },
];
const IN_PROCESS_PORT = 29254;
const LIMIT = 6;
const FLOOD_PER_PROXY = 8;

failInCiWithout(haveServerBinaries, 'the two-proxy test (no PostgreSQL server binaries)');

describe.skipIf(!haveServerBinaries)('two plb proxy instances sharing the replicas’ limits', () => {
  let cluster: ProxyTestCluster;
  const proxies: ProxyCommand[] = [];

  const startProxyProcess = (ports: { premium: number; freemium: number }): ProxyCommand =>
    spawnProxy('plbtest-mproxy', cluster.stateDir, [
      '--premium-port',
      String(ports.premium),
      '--freemium-port',
      String(ports.freemium),
      '--strategy',
      'lc',
      '--router-view',
      'replica',
      '--view-interval',
      '100ms',
      '--admission-limit',
      String(LIMIT),
      '--admission-timeout',
      '60s',
      '--health-interval',
      '500ms',
      '--stats-every',
      '0',
      '--stop-timeout',
      '5s',
      '--json',
    ]);

  beforeAll(async () => {
    cluster = await upProxyCluster({
      name: 'plbtest-mproxy',
      replicas: 2,
      basePort: BASE_PORT,
      record: true,
    });
    for (const p of PORTS) proxies.push(startProxyProcess(p));
    for (const p of PORTS) for (let i = 0; i < 240 && !(await listening(p.freemium)); i++) await sleep(250);
  }, 120_000);

  afterAll(async () => {
    for (const p of proxies) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await cluster?.down();
  }, 60_000);

  it('a freemium flood through both: never over the limit plus the bound; premium served through either', async () => {
    for (const p of proxies) expect(p.child.exitCode, p.err).toBeNull();
    let stop = false;
    const errors: string[] = [];
    let done = 0;
    const flood = async (port: number): Promise<void> => {
      while (!stop) {
        const c = new pg.Client(cluster.pgConfig(port, { application_name: 'flood' }));
        c.on('error', () => undefined);
        try {
          await c.connect();
          await c.query('select pg_sleep(0.2)');
          done += 1;
        } catch (err) {
          errors.push(err instanceof Error ? err.message : String(err));
          await sleep(50);
        } finally {
          await c.end().catch(() => undefined);
        }
      }
    };
    // Each replica's proxied sessions, read from the replica itself while the flood runs.
    const peak: Record<string, number> = {};
    const names = new Set<string>();
    const samplers = cluster.replicas.map((r) => {
      const c = new pg.Client({ ...cluster.pgConfig(r.port), application_name: 'sampler' });
      c.on('error', () => undefined);
      return { id: r.id, c };
    });
    for (const s of samplers) await s.c.connect();
    const sample = async (): Promise<void> => {
      while (!stop) {
        for (const s of samplers) {
          const res = await s.c.query<{ application_name: string }>(
            "select application_name from pg_stat_activity where split_part(application_name, ':', 1) in ('plb-premium', 'plb-freemium')",
          );
          peak[s.id] = Math.max(peak[s.id] ?? 0, res.rows.length);
          for (const row of res.rows) names.add(row.application_name);
        }
        await sleep(20);
      }
    };
    const floods = PORTS.flatMap((p) => Array.from({ length: FLOOD_PER_PROXY }, () => flood(p.freemium)));
    const sampling = sample();
    // Premium through each proxy while the flood goes on: served (it may wait for a slot).
    const premium: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const p of PORTS) {
        await sleep(500);
        const c = new pg.Client(cluster.pgConfig(p.premium, { application_name: 'vip' }));
        c.on('error', () => undefined);
        await c.connect();
        const r = await c.query<{ n: number }>('select 1 as n');
        premium.push(r.rows[0]!.n);
        await c.end();
      }
    }
    stop = true;
    await Promise.all(floods);
    await sampling;
    for (const s of samplers) await s.c.end();

    expect(premium).toEqual([1, 1, 1, 1, 1, 1]);
    expect(done).toBeGreaterThan(0);
    // The bound of docs/proxy.md for two proxies: the limit plus one proxy's unseen sessions.
    const bound = LIMIT + (PORTS.length - 1) * unseenCap(LIMIT);
    console.log(
      `peak proxied sessions per replica ${JSON.stringify(peak)} (limit ${LIMIT}, bound ${bound}); ${done} flood sessions, ${errors.length} refused`,
    );
    for (const r of cluster.replicas) expect(peak[r.id] ?? 0).toBeLessThanOrEqual(bound);
    // Marked with the class, the client's own name kept after it.
    expect(names.has('plb-freemium:flood')).toBe(true);
    for (const n of names) expect(n).toMatch(/^plb-(premium:vip|freemium:flood)$/);

    // Stopped: each reports the limits it kept.
    for (const p of proxies) p.child.kill('SIGTERM');
    for (const p of proxies) {
      expect(await p.exited, p.err).toBe(0);
      const summary = JSON.parse(p.out) as { limits: Record<string, number>; relay: string };
      expect(Object.keys(summary.limits).sort()).toEqual(['r1', 'r2']);
      for (const v of Object.values(summary.limits)) expect(v).toBeLessThanOrEqual(LIMIT);
      expect(p.err).toMatch(/native relay: not used \(--router-view replica marks the class/);
    }
  }, 90_000);

  it('--admission-limit auto: each replica’s limit is its max_connections less the reserves', async () => {
    const lines: string[] = [];
    const proxy = await startTestProxy({
      ...cluster.proxyBase,
      ports: { premium: IN_PROCESS_PORT },
      log: (l) => void lines.push(l),
      admission: { limit: 'auto', reserve: 6, queue: 10, timeoutMs: 1000 },
      settingsOf: (id) =>
        readConnectionSettings(cluster.replicas.find((r) => r.id === id)!, cluster.creds, 5000),
    });
    try {
      // upProxyCluster: max_connections 100, superuser_reserved_connections 3 (PostgreSQL's default).
      expect(proxy.limits()).toEqual({ r1: 91, r2: 91 });
      expect(lines.join('\n')).toMatch(/r1: admission limit 91 \(max_connections 100 - reserved 3 - 6/);
    } finally {
      await proxy.stop(1000);
    }
  });
});
