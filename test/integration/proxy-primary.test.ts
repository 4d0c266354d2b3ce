/**
 * `plb proxy --primary-port` on a local cluster (1 primary, 2 standbys), run as the command: writes
 * through the primary listener land on the primary; the switchover test (the primary stopped, r1
 * promoted: new primary sessions write on r1); and split brain (the old primary started again
 * beside the promoted r1, both accept writes: new primary sessions refused with 57P03 until one
 * remains). Waits are for a state, never a time; every bound is generous. Skips without the
 * server binaries, except with CI=true (a failure there).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveServerBinaries, listening } from '../helpers/fixtures.js';
import { spawnProxy, type ProxyCommand } from '../helpers/proxy-command.js';
import { failInCiWithout, sleep, upProxyCluster, type ProxyTestCluster } from '../helpers/proxy-setup.js';

const NAME = 'plbtest-primary';
const BASE_PORT = 17432;
const PREMIUM = 17450;
const FREEMIUM = 17451;
const PRIMARY = 17452;
const PRIMARY_FREEMIUM = 17453;

failInCiWithout(haveServerBinaries, 'the primary listener test (no PostgreSQL server binaries)');

/** One session through port: its server's port, after `sql` ran (an error: its code and message). */
async function session(
  cluster: ProxyTestCluster,
  port: number,
  sql: string,
): Promise<{ port: number } | { code: string; message: string }> {
  const c = new pg.Client(cluster.pgConfig(port, { connectionTimeoutMillis: 5000 }));
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.query(sql);
    const r = await c.query<{ port: number }>('select inet_server_port() as port');
    return { port: Number(r.rows[0]?.port) };
  } catch (err) {
    const e = err as { code?: string; message?: string };
    return { code: e.code ?? '?', message: e.message ?? String(err) };
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** Asks until `ok` holds (each try a new session), at most `tries` times a quarter second apart. */
async function until<T>(ask: () => Promise<T>, ok: (r: T) => boolean, tries = 160): Promise<T> {
  let r = await ask();
  for (let i = 0; i < tries && !ok(r); i++) {
    await sleep(250);
    r = await ask();
  }
  return r;
}

describe.skipIf(!haveServerBinaries)('plb proxy --primary-port', () => {
  let cluster: ProxyTestCluster;
  let proxy: ProxyCommand | undefined;
  /** The proxy's log (stderr with --json) came to say `re` (a pipe's data may trail a client's answer). */
  const logged = (re: RegExp): Promise<string> => proxy!.logged(re);

  beforeAll(async () => {
    cluster = await upProxyCluster({ name: NAME, replicas: 2, basePort: BASE_PORT, record: true });
    proxy = spawnProxy(NAME, cluster.stateDir, [
      '--premium-port',
      String(PREMIUM),
      '--freemium-port',
      String(FREEMIUM),
      '--primary-port',
      String(PRIMARY),
      '--primary-freemium-port',
      String(PRIMARY_FREEMIUM),
      '--health-interval',
      '250ms',
      '--stats-every',
      '0',
      '--stop-timeout',
      '2s',
      '--json',
    ]);
    for (let i = 0; i < 240 && !(await listening(PRIMARY_FREEMIUM)); i++) await sleep(250);
  }, 120_000);

  afterAll(async () => {
    if (proxy && proxy.child.exitCode === null) proxy.child.kill('SIGKILL');
    // down() kills every server of the cluster's data folder by its pid, the promoted r1 too.
    await cluster?.down();
  }, 60_000);

  it('writes through the primary listener land on the primary; the replica ports stay on the replicas', async () => {
    expect(proxy?.child.exitCode, proxy?.err).toBeNull();
    const direct = new pg.Client(cluster.pgConfig(BASE_PORT));
    await direct.connect();
    await direct.query('create table primary_it (id int, via text)');
    await direct.end();
    expect(await session(cluster, PRIMARY, "insert into primary_it values (1, 'premium')")).toEqual({
      port: BASE_PORT,
    });
    expect(await session(cluster, PRIMARY_FREEMIUM, "insert into primary_it values (2, 'freemium')")).toEqual(
      {
        port: BASE_PORT,
      },
    );
    const read = await session(cluster, PRIMARY, 'select count(*) from primary_it');
    expect(read).toEqual({ port: BASE_PORT });
    // Read back on a replica port: replicated, and that session is not on the primary.
    const onReplica = await until(
      () => session(cluster, PREMIUM, 'select 1 from primary_it having count(*) = 2'),
      (r) => 'port' in r,
    );
    expect('port' in onReplica && onReplica.port !== BASE_PORT).toBe(true);
    const started = /primary listener: primary: primary \(accepts writes\)/;
    expect(await logged(started)).toMatch(started);
    const limit = /primary listener: primary: admission limit \d+ \(max_connections/;
    expect(await logged(limit)).toMatch(limit);
  }, 60_000);

  it('the switchover test: the primary stopped and r1 promoted, new primary sessions write on r1', async () => {
    const r1 = cluster.replicas.find((r) => r.id === 'r1')!;
    // A session open on the old primary when it goes: it ends (its next query fails).
    const held = new pg.Client(cluster.pgConfig(PRIMARY));
    held.on('error', () => undefined);
    await held.connect();
    await cluster.driver.stop('primary');
    await expect(held.query('select 1')).rejects.toThrow();
    await held.end().catch(() => undefined);
    const promote = new pg.Client(cluster.pgConfig(r1.port));
    await promote.connect();
    await promote.query('select pg_promote()');
    await promote.end();
    const after = await until(
      () => session(cluster, PRIMARY, "insert into primary_it values (3, 'after the switchover')"),
      (r) => 'port' in r,
    );
    expect(after).toEqual({ port: r1.port });
    expect(
      await session(cluster, PRIMARY_FREEMIUM, "insert into primary_it values (4, 'freemium after')"),
    ).toEqual({ port: r1.port });
    const check = new pg.Client(cluster.pgConfig(r1.port));
    await check.connect();
    const rows = await check.query<{ n: string }>('select count(*) as n from primary_it');
    await check.end();
    expect(Number(rows.rows[0]?.n)).toBe(4);
    expect(await logged(/primary listener: primary: r1 \(accepts writes\)/)).toMatch(/r1 \(accepts writes\)/);
  }, 60_000);

  it('split brain: the old primary back beside r1, new primary sessions refused (57P03) until one remains', async () => {
    const r1 = cluster.replicas.find((r) => r.id === 'r1')!;
    await cluster.driver.start('primary');
    const refused = await until(
      () => session(cluster, PRIMARY, 'select 1'),
      (r) => 'code' in r && r.code === '57P03',
    );
    expect(refused).toMatchObject({ code: '57P03' });
    expect('message' in refused && refused.message).toMatch(/primary, r1 accept writes \(split brain\)/);
    expect(await logged(/\(split brain\)/)).toMatch(
      /primary listener: primary: no primary: primary, r1 accept writes/,
    );
    // The old one stopped again: r1 alone takes writes, and primary sessions go there.
    await cluster.driver.stop('primary');
    const back = await until(
      () => session(cluster, PRIMARY, 'select 1'),
      (r) => 'port' in r,
    );
    expect(back).toEqual({ port: r1.port });
    proxy!.child.kill('SIGTERM');
    await proxy!.exited;
    const summary = JSON.parse(proxy!.out) as {
      primary?: { primary?: string; ports: Record<string, number> };
    };
    expect(summary.primary).toMatchObject({
      primary: 'r1',
      ports: { premium: PRIMARY, freemium: PRIMARY_FREEMIUM },
    });
  }, 60_000);
});
