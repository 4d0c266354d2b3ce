/**
 * `plb proxy --cluster-file` in front of servers it did not make (a local cluster's, written into
 * a cluster file as a user would): both classes served; `--check` on the same file; SIGHUP after
 * the file drops a replica keeps that replica's open session working (it drains) while new
 * sessions avoid it, and re-adding it brings it back; a reload of a broken file changes nothing;
 * `--lag-weights` reads a standby's lag from its own replay position (no slot names) and drains
 * it while its replay is paused. Skips without the server binaries, except with CI=true.
 */
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkProxy, executeProxy, type ProxySummary } from '../../src/proxy/run.js';
import { haveServerBinaries } from '../helpers/fixtures.js';
import { logLine, openClient, proxyFlagsWith, serverPort, writeFleetFile } from '../helpers/fleet-rig.js';
import { failInCiWithout, sleep, upProxyCluster, type ProxyTestCluster } from '../helpers/proxy-setup.js';

const BASE_PORT = 16100;
const PREMIUM_PORT = 16110;
const FREEMIUM_PORT = 16111;
const NAME = 'plbtest-fleet';

failInCiWithout(haveServerBinaries, 'the proxy fleet tests (no PostgreSQL server binaries)');

describe.skipIf(!haveServerBinaries)('plb proxy --cluster-file on a fleet (local cluster)', () => {
  let cluster: ProxyTestCluster;
  let dir: string, fleetFile: string;
  const signals = new EventEmitter();
  const logs: string[] = [];
  let running: Promise<ProxySummary>;
  const clients: pg.Client[] = [];

  const portOf = (id: string): number => cluster.replicas.find((r) => r.id === id)!.port;
  /** The cluster file, with the replicas given (their ids as the local cluster names them). */
  const writeFleet = (ids: string[], extra = ''): void =>
    writeFleetFile(fleetFile, { cluster, name: NAME, primaryPort: BASE_PORT }, ids, extra ? [extra] : []);

  const open = (port: number): Promise<pg.Client> => openClient(cluster, clients, port);

  const waitLog = (re: RegExp, from = 0, ms = 20_000): Promise<string> => logLine(logs, re, from, ms);

  beforeAll(async () => {
    cluster = await upProxyCluster({ name: NAME, replicas: 2, basePort: BASE_PORT, record: true });
    dir = mkdtempSync(join(tmpdir(), 'plb-fleet-'));
    fleetFile = join(dir, 'fleet.yaml');
    writeFleet(['r1', 'r2']);
    running = executeProxy(
      proxyFlagsWith({
        'cluster-file': fleetFile,
        'premium-port': PREMIUM_PORT,
        'freemium-port': FREEMIUM_PORT,
        strategy: 'lc',
        'health-interval': '300ms',
        'stats-every': 0,
        'stop-timeout': '5s',
        'lag-weights': '200ms:800ms:10%',
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

  it('serves both classes; the listening line shows no password file; --check says what it would front', async () => {
    for (const port of [PREMIUM_PORT, FREEMIUM_PORT]) {
      const c = await open(port);
      expect([portOf('r1'), portOf('r2')]).toContain(await serverPort(c));
      await c.end();
    }
    const listening = logs.filter((l) => / listening on /.test(l));
    expect(listening).toHaveLength(2);
    for (const l of listening) expect(l).not.toContain('PGPASSWORD');
    const check = await checkProxy(proxyFlagsWith({ 'cluster-file': fleetFile }));
    expect(check.summary).toContain(`r1 127.0.0.1:${portOf('r1')}`);
    expect(check.summary).toContain(`primary 127.0.0.1:${BASE_PORT}`);
  });

  it('SIGHUP: a dropped replica drains (its session goes on, new ones avoid it); re-added, it is back', async () => {
    // A session on r2: lc sends one there within a few (whatever the earlier sessions' releases).
    const held: pg.Client[] = [];
    let onR2: pg.Client | undefined;
    for (let i = 0; i < 10 && !onR2; i += 1) {
      const c = await open(i % 2 === 0 ? PREMIUM_PORT : FREEMIUM_PORT);
      held.push(c);
      if ((await serverPort(c)) === portOf('r2')) onR2 = c;
    }
    if (!onR2) throw new Error('no session landed on r2');
    const from = logs.length;
    writeFleet(['r1']);
    signals.emit('SIGHUP');
    expect(await waitLog(/^reload: /, from)).toMatch(/r2 removed \(draining [1-9]\d* session/);
    // The draining session works; every new one goes to r1.
    expect(await serverPort(onR2)).toBe(portOf('r2'));
    for (let i = 0; i < 4; i += 1) {
      const c = await open(i % 2 === 0 ? PREMIUM_PORT : FREEMIUM_PORT);
      expect(await serverPort(c)).toBe(portOf('r1'));
      held.push(c);
    }
    expect(await serverPort(onR2)).toBe(portOf('r2'));
    await onR2.end();
    // Back: r2 has at most the one just ended, r1 at least four; lc sends the next one to r2.
    const back = logs.length;
    writeFleet(['r1', 'r2']);
    signals.emit('SIGHUP');
    expect(await waitLog(/^reload: /, back)).toMatch(/r2 back/);
    const next = await open(FREEMIUM_PORT);
    expect(await serverPort(next)).toBe(portOf('r2'));
    await Promise.all([...held.filter((c) => c !== onR2), next].map((c) => c.end()));
  }, 60_000);

  it('SIGHUP with a broken file: one line, nothing changed', async () => {
    const from = logs.length;
    writeFleet(['r1', 'r2'], 'colour: blue');
    signals.emit('SIGHUP');
    const line = await waitLog(/^reload: /, from);
    expect(line).toMatch(/^reload: nothing changed: .*fleet\.yaml:\d+: .*colour/);
    writeFleet(['r1', 'r2']);
    // Both replicas still take sessions: lc reaches r2 within a few held ones.
    const seen = new Set<number>();
    for (let i = 0; i < 12 && seen.size < 2; i += 1) seen.add(await serverPort(await open(PREMIUM_PORT)));
    expect(seen).toEqual(new Set([portOf('r1'), portOf('r2')]));
    expect(logs.slice(from).filter((l) => /^reload: /.test(l))).toHaveLength(1);
  });

  it('--lag-weights: a standby whose replay is paused falls behind the primary and takes no new sessions', async () => {
    const r2 = await open(portOf('r2'));
    const primary = await open(BASE_PORT);
    await primary.query('create table if not exists plb_fleet_lag (n int)');
    const from = logs.length;
    await r2.query('select pg_wal_replay_pause()');
    try {
      const writing = (async () => {
        for (
          let i = 0;
          i < 100 && !logs.slice(from).some((l) => /^r2 weight .*no new sessions/.test(l));
          i += 1
        ) {
          await primary.query('insert into plb_fleet_lag values ($1)', [i]);
          await sleep(200);
        }
      })();
      await waitLog(/^r2 weight .*no new sessions/, from, 25_000);
      await writing;
    } finally {
      await r2.query('select pg_wal_replay_resume()');
    }
    // Caught up again: back to full weight.
    expect(await waitLog(/^r2 weight 1 /, from, 25_000)).toContain('replication lag');
  }, 60_000);
});
