/**
 * `plb proxy` against real postgres processes (local driver, 1 primary + 5 standbys): psql and
 * node-postgres through both class ports, class from the startup packet, SSLRequest, cancel,
 * premium placement at full capacity, pgbench -C through the proxy while a replica is killed
 * (only the sessions on it fail), a dying backend seen as an ErrorResponse, no replica (57P03),
 * and a graceful stop. Skips without the server binaries, except with CI=true (a failure there).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Credentials, Endpoint } from '../../src/core/endpoint.js';
import { findBinDir } from '../../src/cluster/local/binaries.js';
import type { LocalDriver } from '../../src/cluster/local/index.js';
import type { ProxyHandle } from '../../src/proxy/proxy-server.js';
import type { ServiceClass } from '../../src/core/service-class.js';
import { spawnProxy } from '../helpers/proxy-command.js';
import { haveServerBinaries } from '../helpers/fixtures.js';
import {
  failInCiWithout,
  runPsql,
  sleep,
  startTestProxy,
  until,
  untilRunning,
  upProxyCluster,
  type ProxyTestCluster,
} from '../helpers/proxy-setup.js';

const BASE_PORT = 24632;
const PREMIUM_PORT = 24660;
const FREEMIUM_PORT = 24661;

failInCiWithout(haveServerBinaries, 'the proxy tests (no PostgreSQL server binaries)');

describe.skipIf(!haveServerBinaries)('plb proxy on a local cluster', () => {
  let cluster: ProxyTestCluster;
  let driver: LocalDriver, creds: Credentials, replicas: Endpoint[];
  let proxy: ProxyHandle, bin: string;
  const logs: string[] = [];
  const clients: pg.Client[] = [];

  const portOf = (id: string): number => replicas.find((r) => r.id === id)!.port;
  const idOfPort = (port: number): string => replicas.find((r) => r.port === port)!.id;
  const roleOf = (id: string): string => proxy.router.snapshot().find((r) => r.id === id)!.role;
  const env = () => ({ ...process.env, PGPASSWORD: creds.password, PGCONNECT_TIMEOUT: '10' });

  async function client(port: number, extra: Partial<pg.ClientConfig> = {}): Promise<pg.Client> {
    const c = new pg.Client(cluster.pgConfig(port, extra));
    c.on('error', () => undefined);
    clients.push(c);
    await c.connect();
    return c;
  }

  async function serverPort(c: pg.Client): Promise<number> {
    const r = await c.query<{ p: number }>('select inet_server_port() as p');
    return Number(r.rows[0]!.p);
  }

  /** psql, asynchronously (the proxy runs in this process); the password is the cluster's unless given. */
  const psql = (port: number, sql: string, conninfo = '', password?: string) =>
    runPsql(bin, creds, port, sql, conninfo, password);

  beforeAll(async () => {
    bin = findBinDir();
    cluster = await upProxyCluster({ name: 'plbtest-proxy', replicas: 5, basePort: BASE_PORT, record: true });
    ({ driver, creds, replicas } = cluster);
    proxy = await startTestProxy({
      ...cluster.proxyBase,
      ports: { premium: PREMIUM_PORT, freemium: FREEMIUM_PORT },
      classFrom: 'option',
      partition: { premium: 3, freemium: 2 },
      slowStartMs: 10_000,
      borrowing: {
        premium: { pressureRatio: 1.5, returnRatio: 1 },
        freemium: { pressureRatio: 2, returnRatio: 0.625 },
      },
      health: { intervalMs: 300, timeoutMs: 300, fall: 2, rise: 2, hangMs: 3000 },
      log: (l) => logs.push(l),
    });
  });

  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => undefined);
    await proxy?.stop(1000);
    await cluster?.down();
  });

  it('node-postgres through both ports: premium only on premium/mixed replicas, freemium on freemium/mixed', async () => {
    const snapshot = proxy.router.snapshot();
    expect(snapshot.map((r) => r.role)).toEqual(['premium', 'premium', 'mixed', 'freemium', 'freemium']);
    const held: { cls: ServiceClass; c: pg.Client }[] = [];
    // Below the borrowing threshold (4 sessions a replica): full capacity, no pressure.
    for (let i = 0; i < 6; i++) held.push({ cls: 'premium', c: await client(PREMIUM_PORT) });
    for (let i = 0; i < 6; i++) held.push({ cls: 'freemium', c: await client(FREEMIUM_PORT) });
    const landed: Record<ServiceClass, Set<string>> = { premium: new Set(), freemium: new Set() };
    for (const h of held) {
      const id = idOfPort(await serverPort(h.c));
      landed[h.cls].add(id);
      expect(h.cls === 'premium' ? ['premium', 'mixed'] : ['freemium', 'mixed']).toContain(roleOf(id));
    }
    expect([...landed.premium].sort()).toEqual(['r1', 'r2', 'r3']);
    expect(landed.freemium.has('r4') && landed.freemium.has('r5')).toBe(true);
    const live = proxy.router.snapshot().reduce((n, r) => n + r.sessions.premium + r.sessions.freemium, 0);
    expect(live).toBe(12);
    // Every session is the native front door's where it is built (CI: test/unit/native-*.test.ts).
    expect(proxy.stats.relayed).toBe(proxy.relay === 'js' ? 0 : 12);
    for (const h of held) expect((await h.c.query('select 2 as x')).rows[0]).toEqual({ x: 2 });
    for (const h of held) expect((await h.c.query('select 3 as x')).rows[0]).toEqual({ x: 3 });
    for (const h of held) await h.c.end();
    // The proxy hears each client's Terminate after end() resolves: every slot given back, eventually.
    const idle = (): boolean =>
      proxy.router.snapshot().every((r) => r.sessions.premium + r.sessions.freemium === 0);
    await until(idle);
    expect(idle()).toBe(true);
  });

  it('psql through both ports; the class from options=-c plb.class=...; SSL refused with N', async () => {
    for (let i = 0; i < 3; i++) {
      const p = await psql(PREMIUM_PORT, 'select inet_server_port()');
      expect(p.code, p.err).toBe(0);
      expect(['premium', 'mixed']).toContain(roleOf(idOfPort(Number(p.out))));
      const f = await psql(FREEMIUM_PORT, 'select inet_server_port()');
      expect(f.code, f.err).toBe(0);
      expect(['freemium', 'mixed']).toContain(roleOf(idOfPort(Number(f.out))));
    }
    const opt = await psql(
      FREEMIUM_PORT,
      "select inet_server_port() || ' ' || current_setting('plb.class')",
      "options='-c plb.class=premium'",
    );
    expect(opt.code, opt.err).toBe(0);
    const [port, cls] = opt.out.split(' ');
    expect(cls).toBe('premium');
    expect(['premium', 'mixed']).toContain(roleOf(idOfPort(Number(port))));
    const bad = await psql(PREMIUM_PORT, 'select 1', "options='-c plb.class=gold'");
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/plb\.class must be premium or freemium/);
    // sslmode=prefer (psql's default) sent an SSLRequest above and went on in plain text after 'N'.
    const ssl = await psql(PREMIUM_PORT, 'select 1', 'sslmode=require');
    expect(ssl.code).not.toBe(0);
    expect(ssl.err).toMatch(/does not support SSL/);
    const wrong = await psql(PREMIUM_PORT, 'select 1', '', 'wrong');
    expect(wrong.err).toMatch(/password authentication failed/);
  });

  /** A CancelRequest on the premium port; resolves when the proxy closes it. */
  const sendCancel = (pid: number, secret: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port: PREMIUM_PORT });
      s.on('error', () => resolve());
      s.on('connect', () => s.write(serialize.cancel(pid, secret)));
      s.on('close', () => resolve());
    });

  it('a CancelRequest reaches the backend of that session (through the proxy key)', async () => {
    const c = await client(PREMIUM_PORT);
    const port = await serverPort(c);
    const { processID, secretKey } = c as unknown as { processID: number; secretKey: number };
    // Settled at once into a value: the error may arrive before the cancel connection closes.
    const q = c.query('select pg_sleep(20)').then(
      () => undefined,
      (e: unknown) => e,
    );
    // Sent once the backend runs the sleep (a cancel before it would cancel nothing).
    await untilRunning(cluster, 'select pg_sleep(20)', [port]);
    await sendCancel(processID, secretKey);
    // 57014, not the sleep's end: the cancel reached that backend.
    expect(await q).toMatchObject({ code: '57014' });
    // A wrong key cancels nothing.
    const q2 = c.query('select pg_sleep(0.5) as x');
    await sendCancel(processID, secretKey + 1);
    await expect(q2).resolves.toMatchObject({ rowCount: 1 });
    await c.end();
  });

  it('pgbench -n -C through the proxy, a replica killed mid-run: only the sessions on it fail', async () => {
    // In the suite's temporary folder, removed with it.
    const script = join(cluster.stateDir, 'select.sql');
    writeFileSync(script, 'SELECT inet_server_port();\nSELECT pg_sleep(0.2);\n');
    // An idle node-postgres session on the replica about to die: it must get an ErrorResponse.
    let idle: pg.Client | undefined;
    for (let i = 0; i < 6 && !idle; i++) {
      const c = await client(PREMIUM_PORT);
      if (idOfPort(await serverPort(c)) === 'r1') idle = c;
      // A second query: an idle session that has run one.
      await idle?.query('select 1');
    }
    expect(idle).toBeDefined();
    const idleError = new Promise<Error & { code?: string }>((resolve) => idle!.on('error', resolve));
    const before = { ...proxy.stats.classes.premium };
    const r1Before = { ...proxy.stats.replica('r1') };
    const child = spawn(
      join(bin, 'pgbench'),
      [
        ...'-n -C -c 8 -j 2 -T 8 -h 127.0.0.1'.split(' '),
        ...['-f', script, '-p', String(PREMIUM_PORT), '-U', creds.user, creds.database],
      ],
      { env: env(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    await sleep(3000);
    await driver.kill('r1');
    const e = await idleError;
    // The proxy's FATAL 08006, or the backend's own FATAL when it saw its postmaster die first.
    expect(['08006', '57P01']).toContain(e.code);
    expect(e.message).toMatch(/replica r1 went away|unexpected postmaster exit/);
    const code = await exited;
    const processed = Number(/actually processed: (\d+)/.exec(out)?.[1] ?? 0);
    const aborted = (err.match(/client \d+ (?:script \d+ )?aborted/g) ?? []).length;
    console.log(`pgbench exit ${code}: ${processed} transactions, ${aborted} client(s) aborted`);
    console.log(proxy.statsLine());
    console.log(
      err
        .split('\n')
        .filter((l) => /abort|error|FATAL/i.test(l))
        .join('\n'),
    );
    // How many depends on the host's speed: only that pgbench was served is checked.
    expect(processed).toBeGreaterThan(0);
    // Every session that failed was on r1: lost mid-session (the idle client among them), or
    // cut off while authenticating; none on another replica.
    const r1 = proxy.stats.replica('r1');
    const lost = r1.lost - r1Before.lost;
    const failed = r1.failed - r1Before.failed;
    expect(lost).toBeGreaterThanOrEqual(1);
    expect(proxy.stats.classes.premium.lost - before.lost).toBe(lost);
    expect(proxy.stats.classes.premium.startupFailed - before.startupFailed).toBe(failed);
    for (const id of ['r2', 'r3', 'r4', 'r5']) {
      expect(proxy.stats.replica(id).lost).toBe(0);
      expect(proxy.stats.replica(id).failed).toBe(0);
    }
    // pgbench's aborted clients are among them (a session lost just after its last result is not
    // seen by pgbench); a refused connect to the dead replica was retried on another one.
    expect(aborted).toBeLessThanOrEqual(lost - 1 + failed);
    // Told: cut mid-query aborts the client; cut between commands, libpq prints the FATAL. Which
    // of pgbench's sessions were on r1 at the kill is the race's (the idle client is one of `lost`,
    // and a connect cut while authenticating is retried): only what pgbench saw is checked. As for
    // the idle client, a backend that saw its postmaster die first says its own FATAL.
    if (aborted > 0)
      expect(err).toMatch(/replica r1 went away|server closed the connection|unexpected postmaster exit/);
    expect(code).toBe(aborted > 0 ? 2 : 0);
    // The health checker saw it (a probe, a refused connect: whichever came first): r1 is down and
    // the roles were repaired for four survivors.
    await until(() => !proxy.router.snapshot().find((r) => r.id === 'r1')!.healthy);
    const snap = proxy.router.snapshot();
    expect(snap.find((r) => r.id === 'r1')!.healthy).toBe(false);
    expect(
      snap
        .filter((r) => r.healthy)
        .map((r) => r.role)
        .sort(),
    ).toEqual(['freemium', 'freemium', 'premium', 'premium']); // the default (paper) readings: 2:0:2
    const after = await psql(PREMIUM_PORT, 'select inet_server_port()');
    expect(after.code, after.err).toBe(0);
    expect(idOfPort(Number(after.out))).not.toBe('r1');
  });

  it('a paused replica: its sessions get FATAL 08006 once the health checker takes it for dead', async () => {
    const c = await client(FREEMIUM_PORT);
    const id = idOfPort(await serverPort(c));
    // A second query: a session that has run one (its endings are the relay's where it is built).
    await c.query('select 1');
    await driver.pause(id);
    try {
      const q = c.query('select 1').then(
        () => undefined,
        (e: unknown) => e as Error & { code?: string },
      );
      // Told, not left hanging (hangMs 3 s plus a check or two; the test's timeout bounds it).
      const e = await q;
      expect(e).toMatchObject({
        code: '08006',
        message: new RegExp(`replica ${id} went away: unreachable: no answer`),
      });
      expect(proxy.router.snapshot().find((r) => r.id === id)!.healthy).toBe(false);
      expect(proxy.stats.replica(id).lost).toBeGreaterThanOrEqual(1);
    } finally {
      await driver.unpause(id);
    }
    // Back up after `rise` answered checks.
    await until(() => proxy.router.snapshot().find((r) => r.id === id)!.healthy);
    expect(proxy.router.snapshot().find((r) => r.id === id)!.healthy).toBe(true);
  });

  it('no replica for the class: FATAL 57P03 at startup', async () => {
    for (const r of replicas) proxy.router.markDown(r.id, 0);
    try {
      await expect(client(PREMIUM_PORT)).rejects.toMatchObject({
        code: '57P03',
        message: 'no replica available for class premium',
      });
      expect((await psql(FREEMIUM_PORT, 'select 1')).err).toMatch(/no replica available for class freemium/);
    } finally {
      for (const r of replicas) if (r.id !== 'r1') proxy.router.markUp(r.id, 0);
    }
    expect(proxy.stats.classes.premium.refused).toBeGreaterThanOrEqual(1);
  });

  it('stops gracefully: sessions get the grace time, then FATAL 57P01', async () => {
    const c = await client(FREEMIUM_PORT);
    for (const q of ['select 1', 'select 2']) await c.query(q);
    const gotError = new Promise<Error & { code?: string }>((resolve) => c.on('error', resolve));
    const t0 = Date.now();
    await proxy.stop(500);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(450);
    expect((await gotError).code).toBe('57P01');
    expect(proxy.sessionCount()).toBe(0);
    // The listeners are closed.
    await expect(client(PREMIUM_PORT)).rejects.toThrow(/ECONNREFUSED/);
    expect(portOf('r2')).toBe(BASE_PORT + 2);
  });

  it('the command (plb proxy --json): serves both ports, class from application_name, stops on SIGTERM', async () => {
    const child = spawnProxy('plbtest-proxy', cluster.stateDir, [
      '--premium-port',
      String(PREMIUM_PORT),
      '--freemium-port',
      String(FREEMIUM_PORT),
      '--class-from',
      'application_name',
      '--strategy',
      'rr',
      '--health-interval',
      '500ms',
      '--stats-every',
      '1',
      '--stop-timeout',
      '10s',
      '--json',
    ]);
    // Up to a minute: a start under sanitizers, beside a busy job, is slow (nothing timed here).
    await child.logged(`freemium: listening on 127.0.0.1:${FREEMIUM_PORT}`);
    // With --json, the log goes to stderr and stdout keeps the JSON alone.
    expect(child.err).toContain(`premium: listening on 127.0.0.1:${PREMIUM_PORT}`);
    const f = await psql(FREEMIUM_PORT, 'select inet_server_port()');
    expect(f.code, f.err).toBe(0);
    // application_name=premium on the freemium port: a premium session (rr: any healthy replica).
    const p = await psql(
      FREEMIUM_PORT,
      "select current_setting('application_name')",
      'application_name=premium',
    );
    expect(p.out).toBe('premium');
    // A session open at SIGTERM finishes its query within the stop timeout: SIGTERM once its
    // query runs (or is over already, on a host slower than the sleep).
    let slowDone = false;
    const slow = psql(PREMIUM_PORT, "select pg_sleep(2), 'done'").finally(() => (slowDone = true));
    await untilRunning(
      cluster,
      'select pg_sleep(2)',
      replicas.map((r) => r.port),
      () => slowDone,
    );
    child.child.kill('SIGTERM');
    expect((await slow).out).toBe('|done');
    expect(await child.exited).toBe(0);
    expect(child.err).toMatch(/premium live \d+ opened [1-9]/);
    expect(child.err).toMatch(/SIGTERM: stopping gracefully/);
    const summary = JSON.parse(child.out) as {
      strategy: string;
      classes: Record<string, { opened: number; ready: number }>;
      replicas: { id: string; opened: number }[];
      relay: string;
      relayed: number;
    };
    expect(summary.strategy).toBe('rr');
    // The command's relay is this suite's (the compiled one finds the same native/build/relay.node).
    expect(summary.relay.split(',')[0]).toBe(proxy.relay.split(',')[0]);
    expect(typeof summary.relayed).toBe('number');
    expect(summary.classes.premium).toMatchObject({ opened: 2, ready: 2 });
    expect(summary.classes.freemium).toMatchObject({ opened: 1, ready: 1 });
    expect(summary.replicas.reduce((n, r) => n + r.opened, 0)).toBe(3);
  }, 120_000);
});
