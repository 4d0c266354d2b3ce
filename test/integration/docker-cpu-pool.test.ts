/**
 * `plb cluster up --cpu-pool` on the Docker driver against a real engine: the replicas share one
 * CFS quota of replicas x cpus in a parent cgroup of plb's, have none of their own, their CPU is
 * still read, and `down` removes the pool. (What the pool does to latency is measured, not tested:
 * benchmarks/fig6-mechanisms.ts on a pooled cluster.) Skips when no Docker engine answers, except
 * with CI=true, where that is a failure.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDockerDriver, dockerAvailable, type DockerDriver } from '../../src/cluster/docker/driver.js';
import { poolParent } from '../../src/cluster/docker/cpu-pool.js';
import { bringUp, clusterSpec } from '../../src/cluster/select.js';
import { isPlbError } from '../../src/core/errors.js';

const NAME = 'plbtest-cpupool';
const BASE_PORT = 29600; // primary; r1, r2 on 29601, 29602 (below the ephemeral range)
const ci = process.env.CI === 'true';
const available = await dockerAvailable(3000);

/** The pool's quota in cores, from whichever cgroup layout this host has. */
function poolCores(parent: string): number {
  const v1 = join('/sys/fs/cgroup/cpu', parent);
  if (existsSync(v1)) {
    const quota = Number(readFileSync(join(v1, 'cpu.cfs_quota_us'), 'utf8'));
    return quota / Number(readFileSync(join(v1, 'cpu.cfs_period_us'), 'utf8'));
  }
  const [quota, period] = readFileSync(join('/sys/fs/cgroup', parent, 'cpu.max'), 'utf8')
    .trim()
    .split(' ');
  return Number(quota) / Number(period);
}

describe.skipIf(!available && !ci)('docker cluster with --cpu-pool', () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'plb-cpupool-test-'));
  const docker = new Docker();
  let driver: DockerDriver;
  let parent: string;

  beforeAll(async () => {
    if (!available) throw new Error('CI=true and no Docker engine answers: the Docker tests must run in CI');
    driver = createDockerDriver({
      name: NAME,
      replicas: 2,
      basePort: BASE_PORT,
      cpus: 0.25,
      primaryCpus: 0.5,
      memoryMb: 256,
      maxConnections: 50,
      stateDir,
      id: 'c0ffee123456',
      cpuPool: true,
    });
    parent = poolParent(driver.spec) as string;
    await driver.down(); // leftovers of a crashed run
    await driver.up();
  }, 240_000);

  afterAll(async () => {
    if (available) await driver?.down();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('puts the replicas, and only them, under one quota of replicas x cpus', async () => {
    expect(parent).toBe(`/plb-pool-${NAME}-c0ffee123456`);
    expect(poolCores(parent)).toBeCloseTo(0.5, 5);
    const list = await docker.listContainers({ all: true, filters: { label: [`plb.cluster=${NAME}`] } });
    expect(list).toHaveLength(3);
    for (const c of list) {
      const info = await docker.getContainer(c.Id).inspect();
      if (info.Config.Labels['plb.server'] === 'primary') {
        expect(info.HostConfig.CgroupParent ?? '').toBe('');
        expect(info.HostConfig.NanoCpus).toBe(0.5e9);
      } else {
        expect(info.HostConfig.CgroupParent).toBe(parent);
        // No quota of its own: bounded only by the pool's.
        expect(info.HostConfig.NanoCpus ?? 0).toBe(0);
      }
    }
  });

  it("still reads every server's CPU (the replicas' counters live under the pool)", async () => {
    const cpu = await driver.cpuSeconds();
    expect(Object.keys(cpu).sort()).toEqual(['primary', 'r1', 'r2']);
    for (const v of Object.values(cpu)) expect(v).toBeGreaterThan(0);
  });

  it('down removes the containers and the pool', async () => {
    await driver.down();
    expect(await docker.listContainers({ all: true, filters: { label: [`plb.cluster=${NAME}`] } })).toEqual(
      [],
    );
    expect(existsSync(join('/sys/fs/cgroup/cpu', parent))).toBe(false);
    expect(existsSync(join('/sys/fs/cgroup', parent))).toBe(false);
  });
});

describe('--cpu-pool on another driver', () => {
  it('is refused by name before anything starts', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'plb-cpupool-local-'));
    try {
      const spec = clusterSpec({ name: 'plbtest-cpupool-local', basePort: 29610, stateDir, cpuPool: true });
      const err = await bringUp({ driver: 'local', spec }).catch((e: unknown) => e);
      expect(isPlbError(err) && err.code === 'BAD_INPUT').toBe(true);
      expect((err as Error).message).toMatch(/^--cpu-pool: only the docker driver/);
      expect(existsSync(join(stateDir, 'plbtest-cpupool-local'))).toBe(false);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
