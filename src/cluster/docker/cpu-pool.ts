/**
 * `--cpu-pool`: the replicas' quotas as one budget. The replicas' containers live in one parent
 * cgroup of plb's (named by the cluster's id) whose CFS quota is replicas x cpus, and have no quota
 * of their own, so a dead or idle replica's CPU goes to the survivors: a host without per-replica
 * quotas, the real cluster's side of the simulator's `--sim-cpu pooled`. cgroupfs only (the engine's
 * cgroup driver): under systemd the parent would be a slice that systemd owns.
 */
import { existsSync, mkdirSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PlbError } from '../../core/errors.js';
import type { ClusterSpec } from '../../run-format/cluster-record.js';

const ROOT = '/sys/fs/cgroup';
const PERIOD_US = 100_000;

/** The pool's cgroup path (relative to a hierarchy's root), or undefined without a pool. */
export function poolParent(spec: ClusterSpec): string | undefined {
  if (spec.cpuPool !== true) return undefined;
  return `/plb-pool-${spec.name}${spec.id !== undefined ? `-${spec.id}` : ''}`;
}

/** v1 has a cpu hierarchy of its own; v2 is one tree with cgroup.controllers at its root. */
function cpuDir(parent: string): { dir: string; v2: boolean } {
  if (existsSync(join(ROOT, 'cpu', 'cpu.cfs_quota_us'))) return { dir: join(ROOT, 'cpu', parent), v2: false };
  return { dir: join(ROOT, parent), v2: true };
}

/** Makes the pool's cgroup with the pool's quota, before the containers are created in it. */
export function createPool(spec: ClusterSpec, cgroupDriver: string): void {
  const parent = poolParent(spec);
  if (parent === undefined) return;
  if (cgroupDriver !== 'cgroupfs')
    throw new PlbError(
      'BAD_INPUT',
      `--cpu-pool: the Docker engine's cgroup driver is ${cgroupDriver}; the pool needs cgroupfs`,
    );
  const { dir, v2 } = cpuDir(parent);
  const quotaUs = Math.round(spec.replicas * spec.cpus * PERIOD_US);
  try {
    mkdirSync(dir, { recursive: true });
    if (v2) writeFileSync(join(dir, 'cpu.max'), `${quotaUs} ${PERIOD_US}`);
    else {
      writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
      writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quotaUs));
    }
  } catch (cause) {
    removePool(spec);
    throw new PlbError('BAD_INPUT', `--cpu-pool: cannot make the CPU pool's cgroup ${dir}`, {
      hint: 'the pool needs root and a writable /sys/fs/cgroup on the Docker engine’s host',
      cause,
    });
  }
}

/**
 * Removes the pool's cgroup in every hierarchy where the engine made it (after the containers are
 * gone: a cgroup with members cannot go). Only the pool's own directory, by its name.
 */
export function removePool(spec: ClusterSpec): void {
  const parent = poolParent(spec);
  if (parent === undefined) return;
  const dirs = [join(ROOT, parent)];
  try {
    for (const h of readdirSync(ROOT)) dirs.push(join(ROOT, h, parent));
  } catch {
    return;
  }
  for (const d of dirs) {
    try {
      rmdirSync(d);
    } catch {
      // absent in this hierarchy, or not a hierarchy at all
    }
  }
}

/** Where a pooled container's CPU counter is: under the pool, not under docker/. */
export function pooledCpuFiles(parent: string, id: string): { path: string; kind: 'ns' | 'stat' }[] {
  return [
    { path: join(ROOT, 'cpuacct', parent, id, 'cpuacct.usage'), kind: 'ns' },
    { path: join(ROOT, 'cpu,cpuacct', parent, id, 'cpuacct.usage'), kind: 'ns' },
    { path: join(ROOT, parent, id, 'cpu.stat'), kind: 'stat' },
  ];
}
