/**
 * SIGHUP adds a replica: a local cluster with two standbys, the proxy's cluster file listing only
 * r1 at first. After r2 is written into the file and the proxy reloaded, r2 is health-checked,
 * its max_connections read for its admission limit, the admin view lists it, and new sessions
 * reach it (plb: it enters as a rejoin, then repair gives each class a replica of its own), while
 * a session opened on r1 before the reload goes on on the same backend. Skips without the server
 * binaries, except with CI=true.
 */
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeProxy, type ProxySummary } from '../../src/proxy/run.js';
import { haveServerBinaries } from '../helpers/fixtures.js';
import { logLine, openClient, proxyFlagsWith, serverPort, writeFleetFile } from '../helpers/fleet-rig.js';
import { failInCiWithout, sleep, upProxyCluster, type ProxyTestCluster } from '../helpers/proxy-setup.js';

const BASE_PORT = 19000;
const PREMIUM_PORT = 19010;
const FREEMIUM_PORT = 19011;
const METRICS_PORT = 19012;
const NAME = 'plbtest-addrep';
const MAX_CONNECTIONS = 40;

failInCiWithout(haveServerBinaries, 'the proxy add-replica test (no PostgreSQL server binaries)');

interface AdminReplicaRow {
  id: string;
  role: string;
  state: string;
  limit: number | null;
}

describe.skipIf(!haveServerBinaries)('plb proxy: SIGHUP adds a replica (local cluster)', () => {
  let cluster: ProxyTestCluster;
  let dir: string, fleetFile: string;
  const signals = new EventEmitter();
  const logs: string[] = [];
  let running: Promise<ProxySummary> | undefined;
  const clients: pg.Client[] = [];

  const portOf = (id: string): number => cluster.replicas.find((r) => r.id === id)!.port;
  const writeFleet = (ids: string[], extra: string[] = []): void =>
    writeFleetFile(fleetFile, { cluster, name: NAME, primaryPort: BASE_PORT }, ids, extra);

  const open = (port: number): Promise<pg.Client> => openClient(cluster, clients, port);
  const backendPid = async (c: pg.Client): Promise<number> =>
    Number((await c.query<{ p: number }>('select pg_backend_pid() as p')).rows[0]!.p);

  const waitLog = (re: RegExp, from = 0, ms = 20_000): Promise<string> => logLine(logs, re, from, ms);

  const adminReplicas = async (): Promise<AdminReplicaRow[]> => {
    const res = await fetch(`http://127.0.0.1:${METRICS_PORT}/admin`);
    return ((await res.json()) as { replicas: AdminReplicaRow[] }).replicas;
  };

  beforeAll(async () => {
    cluster = await upProxyCluster({
      name: NAME,
      replicas: 2,
      basePort: BASE_PORT,
      maxConnections: MAX_CONNECTIONS,
      record: true,
    });
    dir = mkdtempSync(join(tmpdir(), 'plb-addrep-'));
    fleetFile = join(dir, 'fleet.yaml');
    writeFleet(['r1']);
    running = executeProxy(
      proxyFlagsWith({
        'cluster-file': fleetFile,
        'premium-port': PREMIUM_PORT,
        'freemium-port': FREEMIUM_PORT,
        'metrics-port': METRICS_PORT,
        strategy: 'plb',
        'slow-start': '2s',
        'health-interval': '300ms',
        'stats-every': 0,
        'stop-timeout': '5s',
      }),
      { log: (l) => logs.push(l), warn: (l) => logs.push(l) },
      { target: signals as unknown as NodeJS.Process, exit: () => undefined },
    );
    await waitLog(/^freemium: listening/);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    signals.emit('SIGINT');
    await running?.catch(() => undefined);
    await cluster?.down();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('r2 written into the file: checked, its limit read, listed, then new sessions reach it; r1 session untouched', async () => {
    // A session on r1 (the only replica), open across the reload.
    const kept = await open(FREEMIUM_PORT);
    expect(await serverPort(kept)).toBe(portOf('r1'));
    const pid = await backendPid(kept);
    await kept.query("select set_config('addrep.kept', 'yes', false)");
    await kept.query('begin');
    expect((await adminReplicas()).map((r) => r.id)).toEqual(['r1']);

    const from = logs.length;
    writeFleet(['r1', 'r2']);
    signals.emit('SIGHUP');
    expect(await waitLog(/^reload: /, from)).toMatch(
      new RegExp(`r2 127\\.0\\.0\\.1:${portOf('r2')} added \\(serves once its checks pass\\)`),
    );
    // Checked until it passes, then brought in (plb: as a rejoin), its max_connections read.
    await waitLog(/^r2 up \(health: answered\)/, from);
    await waitLog(/^role r2: down -> mixed \(rejoin\)/, from);
    const limitLine = await waitLog(/^r2: admission limit \d+ \(max_connections/, from);
    expect(limitLine).toContain(`max_connections ${MAX_CONNECTIONS}`);
    const limit = Number(/admission limit (\d+)/.exec(limitLine)![1]);
    const listed = await adminReplicas();
    expect(listed.map((r) => r.id)).toEqual(['r1', 'r2']);
    expect(listed[1]).toMatchObject({ id: 'r2', state: 'up', limit });
    // Repair gave each class its own replica (K=2: 1:0:1), so one of the classes now goes to r2.
    expect(new Set(listed.map((r) => r.role))).toEqual(new Set(['premium', 'freemium']));

    // New sessions reach r2: at once, or once its slow start has made it cheaper than what its
    // class borrowed meanwhile (bounded; how soon is not asserted).
    let reached = false;
    for (let t = 0; t < 30_000 && !reached; t += 200) {
      for (const port of [PREMIUM_PORT, FREEMIUM_PORT]) {
        const c = await open(port);
        if ((await serverPort(c)) === portOf('r2')) reached = true;
        await c.end();
      }
      if (!reached) await sleep(200);
    }
    expect(reached).toBe(true);

    // The session opened before the reload is where it was, in its transaction.
    expect(await backendPid(kept)).toBe(pid);
    const setting = await kept.query<{ v: string }>("select current_setting('addrep.kept') as v");
    expect(setting.rows[0]!.v).toBe('yes');
    await kept.query('commit');
    expect(await serverPort(kept)).toBe(portOf('r1'));
    expect(logs.filter((l) => /\blost\b|r1 down/.test(l))).toEqual([]);
  }, 60_000);

  it('a replica the running proxy cannot add (a host name, with the native front door): one line, nothing changed', async () => {
    const native = logs.some((l) => /; relay native/.test(l));
    const from = logs.length;
    writeFleet(['r1', 'r2'], [`  r3: { host: localhost, port: ${portOf('r2')} }`]);
    signals.emit('SIGHUP');
    const line = await waitLog(/^reload: /, from);
    if (native) {
      expect(line).toMatch(
        /^reload: nothing changed: .*fleet\.yaml: r3 localhost:\d+: localhost is not a numeric address/,
      );
      expect((await adminReplicas()).map((r) => r.id)).toEqual(['r1', 'r2']);
    } else expect(line).toMatch(/r3 localhost:\d+ added/);
    writeFleet(['r1', 'r2']);
  });
});
