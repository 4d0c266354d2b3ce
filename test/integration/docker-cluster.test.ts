/**
 * The Docker driver against a real engine: a primary and five streaming standbys on 127.0.0.1.
 * Skips when no Docker engine answers, except with CI=true, where that is a failure.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Credentials, Endpoint } from '../../src/core/endpoint.js';
import { createDockerDriver, dockerAvailable, type DockerDriver } from '../../src/cluster/docker/driver.js';
import { currentWalLsn, waitCaughtUp, withClient } from '../../src/cluster/pg-util.js';
import { isPlbError } from '../../src/core/errors.js';
import { portFree } from '../../src/cluster/ports.js';

const NAME = 'plbtest-docker';
// Below the ephemeral range (32768-60999): a client source port must not hold a replica's port.
const BASE_PORT = 26432;
const REPLICAS = 5;
const ci = process.env.CI === 'true';
const available = await dockerAvailable(3000);

async function queryOne<T>(
  ep: Endpoint,
  creds: Credentials,
  sql: string,
  params: unknown[] = [],
): Promise<T> {
  return withClient(ep, creds, async (c) => (await c.query(sql, params)).rows[0] as T, {
    timeoutMs: 5000,
    queryTimeoutMs: 60_000,
  });
}

describe.skipIf(!available && !ci)('docker cluster driver', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'plb-docker-test-'));
  const docker = new Docker();
  let driver: DockerDriver;
  let creds: Credentials;
  const ep = (id: string): Endpoint => {
    const e = driver.endpoints().find((x) => x.id === id);
    if (!e) throw new Error(`no endpoint ${id}`);
    return e;
  };

  beforeAll(async () => {
    if (!available) throw new Error('CI=true and no Docker engine answers: the Docker tests must run in CI');
    driver = createDockerDriver({
      name: NAME,
      replicas: REPLICAS,
      basePort: BASE_PORT,
      cpus: 0.25,
      primaryCpus: 0.5,
      memoryMb: 256,
      maxConnections: 100,
      stateDir,
    });
    await driver.down(); // leftovers of a crashed run
    const t0 = Date.now();
    await driver.up((line) => console.log(`[up] ${line}`));
    console.log(`[figure] cluster up took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    creds = await driver.credentials();
  });

  afterAll(async () => {
    if (available) await driver?.down();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('labels every container and runs it on the host network with quotas', async () => {
    const list = await docker.listContainers({ all: true, filters: { label: [`plb.cluster=${NAME}`] } });
    const names = list.map((c) => c.Names[0]).sort();
    expect(names).toEqual(['primary', 'r1', 'r2', 'r3', 'r4', 'r5'].map((id) => `/plb-${NAME}-${id}`).sort());
    for (const c of list) {
      const info = await docker.getContainer(c.Id).inspect();
      expect(info.Config.Labels['plb.version']).toMatch(/^\d+\.\d+\.\d+/);
      expect(info.HostConfig.NetworkMode).toBe('host');
      expect(info.HostConfig.Memory).toBe(256 * 1024 * 1024);
      const server = info.Config.Labels['plb.server'];
      expect(info.HostConfig.NanoCpus).toBe(server === 'primary' ? 0.5e9 : 0.25e9);
      // The password is in no command line nor environment.
      const visible = JSON.stringify([info.Config.Cmd, info.Config.Entrypoint, info.Config.Env, info.Args]);
      expect(visible).not.toContain(creds.password);
    }
    const status = await driver.status();
    expect(status.map((s) => [s.id, s.up])).toEqual(driver.endpoints().map((e) => [e.id, true]));
    expect(status.filter((s) => s.kind === 'replica').every((s) => s.replication === 'streaming')).toBe(true);
  });

  it('reads a row written on the primary on all five standbys', async () => {
    await queryOne(ep('primary'), creds, 'create table if not exists t (id int primary key, note text)');
    await queryOne(ep('primary'), creds, "insert into t values (1, 'one')");
    const lsn = await currentWalLsn(ep('primary'), creds);
    const replicas = driver.endpoints().filter((e) => e.kind === 'replica');
    expect(replicas).toHaveLength(5);
    for (const r of replicas) {
      await waitCaughtUp(r, creds, lsn, 30_000);
      const row = await queryOne<{ note: string }>(r, creds, 'select note from t where id = 1');
      expect(row.note).toBe('one');
    }
  });

  it('a killed standby shows down, then rejoins and catches up from WAL', async () => {
    await driver.kill('r2');
    const down = (await driver.status()).find((s) => s.id === 'r2');
    expect(down?.up).toBe(false);
    expect(await portFree(ep('r2').port)).toBe(true);

    await queryOne(ep('primary'), creds, "insert into t values (2, 'while r2 was down')");
    const lsn = await currentWalLsn(ep('primary'), creds);
    const t0 = Date.now();
    await driver.start('r2');
    const ready = Date.now() - t0;
    await waitCaughtUp(ep('r2'), creds, lsn, 30_000);
    console.log(`[figure] killed standby: ready ${ready} ms, caught up ${Date.now() - t0} ms after start`);
    const row = await queryOne<{ note: string }>(ep('r2'), creds, 'select note from t where id = 2');
    expect(row.note).toBe('while r2 was down');
    const up = (await driver.status()).find((s) => s.id === 'r2');
    expect(up).toMatchObject({ up: true, replication: 'streaming' });
  }, 120_000);

  it('pause freezes a standby and unpause brings it back', async () => {
    await driver.pause('r3');
    const paused = (await driver.status()).find((s) => s.id === 'r3');
    expect(paused).toMatchObject({ paused: true, up: false });
    await expect(
      withClient(ep('r3'), creds, (c) => c.query('select 1'), { timeoutMs: 1000, queryTimeoutMs: 1000 }),
    ).rejects.toThrow();
    await driver.unpause('r3');
    await driver.waitReady('r3', 30_000);
    const row = await queryOne<{ one: number }>(ep('r3'), creds, 'select 1 as one');
    expect(row.one).toBe(1);
    expect((await driver.status()).find((s) => s.id === 'r3')).toMatchObject({ paused: false, up: true });
  }, 60_000);

  it('the CPU quota shows: a throttled standby runs a CPU-heavy query clearly slower', async () => {
    await driver.setCpus('r4', 0.05);
    await driver.setCpus('r5', 1);
    const heavy = 'select count(*) as n from generate_series(1, 2000000) g where g % 7 = 3';
    const timed = async (id: string) => {
      const cpu0 = (await driver.cpuSeconds())[id] ?? 0;
      const t0 = Date.now();
      await queryOne(ep(id), creds, heavy);
      const wall = (Date.now() - t0) / 1000;
      const cpu = ((await driver.cpuSeconds())[id] ?? 0) - cpu0;
      return { wall, cpu };
    };
    const fast = await timed('r5');
    const slow = await timed('r4');
    console.log(
      `[figure] heavy query: 1 core ${fast.wall.toFixed(2)} s, 0.05 core ${slow.wall.toFixed(2)} s`,
    );
    expect(slow.wall).toBeGreaterThan(2 * fast.wall);
    // The throttled server never used more than its quota (with slack for period boundaries).
    expect(slow.cpu / slow.wall).toBeLessThan(0.05 * 2);
    expect(slow.cpu).toBeGreaterThan(0);
    expect((await driver.status()).find((s) => s.id === 'r4')?.cpus).toBeCloseTo(0.05);
    await driver.setCpus('r4', 0.25);
    await driver.setCpus('r5', 0.25);
  }, 120_000);

  it('down leaves no container or listening port; twice is fine', async () => {
    await driver.down();
    await driver.down();
    const list = await docker.listContainers({ all: true, filters: { label: [`plb.cluster=${NAME}`] } });
    expect(list).toHaveLength(0);
    for (const e of driver.endpoints()) expect(await portFree(e.port)).toBe(true);
  });

  it('up fails with CLUSTER_UP_FAILED on a busy port and leaves nothing behind', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen({ port: BASE_PORT + 3, host: '127.0.0.1' }, r));
    try {
      const err = await driver.up().catch((e: unknown) => e);
      expect(isPlbError(err, 'CLUSTER_UP_FAILED')).toBe(true);
      expect(String((err as Error).message)).toContain(String(BASE_PORT + 3));
    } finally {
      await new Promise<void>((r) => blocker.close(() => r()));
    }
    const list = await docker.listContainers({ all: true, filters: { label: [`plb.cluster=${NAME}`] } });
    expect(list).toHaveLength(0);
  });
});
