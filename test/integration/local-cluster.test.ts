/**
 * Local-process driver against real postgres binaries: five streaming standbys, kill/start,
 * pause/unpause, and a clean down. Skips only when the server binaries are not installed.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { haveServerBinaries, listening } from '../helpers/fixtures.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterSpec } from '../../src/run-format/cluster-record.js';
import type { Credentials, Endpoint } from '../../src/core/endpoint.js';
import { createLocalDriver, type LocalDriver } from '../../src/cluster/local/index.js';
import { postmasterPid, processTree, readStat } from '../../src/cluster/local/procfs.js';
import { connect, currentWalLsn, waitCaughtUp, withClient } from '../../src/cluster/pg-util.js';
import { bringUp, clusterSpec, openCluster } from '../../src/cluster/select.js';
import { readClusterRecord } from '../../src/cluster/state.js';

describe.skipIf(!haveServerBinaries)('local driver: 1 primary + 5 standbys', () => {
  let stateDir: string;
  // 27432 is taken by the Docker suite on this machine; keep the two apart.
  let spec: ClusterSpec;
  let driver: LocalDriver;
  let creds: Credentials;
  let primary: Endpoint;
  let replicas: Endpoint[];

  async function writeRow(note: string): Promise<string> {
    await withClient(primary, creds, (c) => c.query('insert into plb_it(note) values ($1)', [note]));
    return currentWalLsn(primary, creds);
  }

  async function readRow(ep: Endpoint, note: string): Promise<number> {
    return withClient(ep, creds, async (c) => {
      const r = await c.query<{ n: string }>('select count(*) as n from plb_it where note = $1', [note]);
      return Number(r.rows[0]?.n);
    });
  }

  beforeAll(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'plb-local-it-'));
    spec = clusterSpec({ name: 'plbtest-local', replicas: 5, basePort: 28432, stateDir });
    driver = createLocalDriver(spec);
    await driver.down(); // leftovers of an earlier crashed run
    const t0 = Date.now();
    await driver.up();
    console.log(`local cluster up (5 standbys): ${Date.now() - t0} ms`);
    creds = await driver.credentials();
    const eps = driver.endpoints();
    primary = eps[0]!;
    replicas = eps.slice(1);
    await withClient(primary, creds, (c) =>
      c.query('create table plb_it (id serial primary key, note text)'),
    );
  });

  afterAll(async () => {
    await driver?.down();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('records the cluster and reopens it by name', async () => {
    expect(readClusterRecord(stateDir, spec.name)?.driver).toBe('local');
    const again = await openCluster(spec.name, stateDir);
    expect(again.kind).toBe('local');
    expect(again.endpoints()).toEqual(driver.endpoints());
  });

  it('streams a row written on the primary to all five standbys', async () => {
    const lsn = await writeRow('first');
    for (const r of replicas) {
      await waitCaughtUp(r, creds, lsn, 30_000);
      expect(await readRow(r, 'first')).toBe(1);
    }
    const st = await driver.status();
    expect(st.filter((s) => s.kind === 'replica').map((s) => s.replication)).toEqual(
      Array(5).fill('streaming'),
    );
    expect(st.every((s) => s.up && !s.paused)).toBe(true);
  });

  it('a standby is read-only and reports CPU seconds', async () => {
    await expect(
      withClient(replicas[0]!, creds, (c) => c.query("insert into plb_it(note) values ('x')")),
    ).rejects.toThrow(/read-only/);
    const cpu = await driver.cpuSeconds();
    expect(Object.keys(cpu).sort()).toEqual(['primary', 'r1', 'r2', 'r3', 'r4', 'r5']);
    expect(Object.values(cpu).every((v) => v > 0)).toBe(true);
  });

  it('kill shows the standby down; after start it catches up with a row written meanwhile', async () => {
    await driver.kill('r3');
    const st = await driver.status();
    expect(st.find((s) => s.id === 'r3')?.up).toBe(false);
    expect(st.filter((s) => s.id !== 'r3').every((s) => s.up)).toBe(true);
    expect(await listening(replicas[2]!.port)).toBe(false);

    const lsn = await writeRow('while-down');
    const t0 = Date.now();
    await driver.start('r3');
    await waitCaughtUp(replicas[2]!, creds, lsn, 60_000);
    console.log(`killed standby ready and caught up after start: ${Date.now() - t0} ms`);
    expect(await readRow(replicas[2]!, 'while-down')).toBe(1);
    expect((await driver.status()).find((s) => s.id === 'r3')).toMatchObject({
      up: true,
      replication: 'streaming',
    });
  });

  it('a paused standby does not answer; after unpause it does', async () => {
    const r2 = replicas[1]!;
    // A session opened before the pause; its queries give up after 1 s.
    const held = await connect(r2, creds, { queryTimeoutMs: 1000 });
    try {
      await driver.pause('r2');
      expect((await driver.status()).find((s) => s.id === 'r2')?.paused).toBe(true);
      await expect(connect(r2, creds, { timeoutMs: 1000 })).rejects.toThrow();
      await expect(held.query('select 1')).rejects.toThrow(/timeout/i);
      await driver.unpause('r2');
      expect(await readRow(r2, 'first')).toBe(1);
      expect((await driver.status()).find((s) => s.id === 'r2')).toMatchObject({ paused: false, up: true });
    } finally {
      await driver.unpause('r2');
      await held.end().catch(() => undefined);
    }
  });

  it('setCpus shows in status and, with cgroups, throttles: a CPU-heavy query runs clearly slower', async () => {
    await driver.setCpus('r1', 0.5);
    expect((await driver.status()).find((s) => s.id === 'r1')?.cpus).toBe(0.5);
    // CI runs as root on a machine with a writable cgroup filesystem: quotas must be enforced there.
    if (process.env.CI === 'true') expect(driver.cpusEnforced).toBe(true);
    if (!driver.cpusEnforced) return;
    await driver.setCpus('r4', 0.05);
    await driver.setCpus('r5', 1);
    const heavy = 'select count(*) as n from generate_series(1, 2000000) g where g % 7 = 3';
    const timed = async (ep: Endpoint): Promise<number> => {
      const t0 = Date.now();
      await withClient(ep, creds, (c) => c.query(heavy), { queryTimeoutMs: 120_000 });
      return (Date.now() - t0) / 1000;
    };
    const fast = await timed(replicas[4]!);
    const slow = await timed(replicas[3]!);
    console.log(`[figure] heavy query: 1 core ${fast.toFixed(2)} s, 0.05 core ${slow.toFixed(2)} s`);
    expect(slow).toBeGreaterThan(2 * fast);
    await driver.setCpus('r4', spec.cpus);
    await driver.setCpus('r5', spec.cpus);
  }, 120_000);

  it('up of the existing cluster starts a killed standby and keeps the driver', async () => {
    await driver.kill('r4');
    const lines: string[] = [];
    const { driver: again } = await bringUp({ driver: 'auto', spec, log: (l) => lines.push(l) });
    expect(again.kind).toBe('local');
    expect(lines.join('\n')).toMatch(/existing cluster/);
    expect((await driver.status()).find((s) => s.id === 'r4')).toMatchObject({
      up: true,
      replication: 'streaming',
    });
  });

  it('down leaves no process or listening port, and is idempotent', async () => {
    const before = driver
      .endpoints()
      .map((ep) => postmasterPid(join(stateDir, spec.name, 'data', ep.id)))
      .flatMap((pid) => (pid === null ? [] : processTree(pid).map((p) => p.pid)));
    expect(before.length).toBeGreaterThanOrEqual(6);
    const t0 = Date.now();
    await driver.down();
    console.log(`local cluster down: ${Date.now() - t0} ms`);
    await driver.down();
    for (const ep of driver.endpoints()) expect(await listening(ep.port)).toBe(false);
    const alive = before.filter((pid) => {
      const st = readStat(pid);
      return st !== null && st.state !== 'Z';
    });
    expect(alive).toEqual([]);
    expect(readClusterRecord(stateDir, spec.name)).toBeNull();
  });
});

describe.skipIf(!haveServerBinaries)('local driver: a failed up', () => {
  it('refuses a taken port with CLUSTER_UP_FAILED and leaves nothing behind', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'plb-local-fail-'));
    const spec = clusterSpec({ name: 'plbtest-local-fail', replicas: 2, basePort: 28452, stateDir });
    const blocker = createServer().listen({ host: '127.0.0.1', port: 28454 });
    await once(blocker, 'listening');
    try {
      const d = createLocalDriver(spec);
      await expect(d.up()).rejects.toMatchObject({ code: 'CLUSTER_UP_FAILED', message: /28454/ });
      expect(readClusterRecord(stateDir, spec.name)).toBeNull();
      expect(existsSync(join(stateDir, spec.name, 'data'))).toBe(false);
      expect(await listening(28452)).toBe(false);
    } finally {
      blocker.close();
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
