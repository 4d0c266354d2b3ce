/**
 * CPU quotas for local servers through the kernel's CFS bandwidth control, the mechanism Docker's
 * --cpus uses: one cgroup per server (`plb-<cluster>-<id>`), the postmaster and its children moved
 * into it (backends it forks later inherit it). Needs root and a writable cgroup filesystem (v1 cpu
 * controller, or v2 with the cpu controller); elsewhere quotas are recorded but not enforced.
 * ServerGroups (below): each server's cgroup v2 group, which the network faults match its packets by.
 */
import { constants, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hasAccess } from './binaries.js';
import { cgroup2Root, cgroupMatch, cgroupOf } from '../net/cgroup2.js';

const PERIOD_US = 100_000;

interface CgroupFs {
  version: 1 | 2;
  /** Folder under which the per-server groups are made. */
  root: string;
}

const writable = (path: string): boolean => hasAccess(path, constants.W_OK);

/** Where CPU quotas can be set on this machine, or null. */
export function detectCgroupFs(base = '/sys/fs/cgroup'): CgroupFs | null {
  const v1 = join(base, 'cpu');
  if (existsSync(join(v1, 'cpu.cfs_quota_us')) && writable(v1)) return { version: 1, root: v1 };
  const controllers = join(base, 'cgroup.controllers');
  if (
    existsSync(controllers) &&
    readFileSync(controllers, 'utf8').split(/\s+/).includes('cpu') &&
    writable(base)
  ) {
    try {
      // Children get the cpu controller only when the parent delegates it.
      writeFileSync(join(base, 'cgroup.subtree_control'), '+cpu');
      return { version: 2, root: base };
    } catch {
      return null;
    }
  }
  return null;
}

export class CpuLimiter {
  private fs: CgroupFs | null | undefined;

  constructor(
    private readonly cluster: string,
    private readonly base = '/sys/fs/cgroup',
  ) {}

  private get cgroups(): CgroupFs | null {
    if (this.fs === undefined) this.fs = detectCgroupFs(this.base);
    return this.fs;
  }

  /** True when quotas are enforced on this machine. */
  get enforced(): boolean {
    return this.cgroups !== null;
  }

  private dir(id: string): string | null {
    const fs = this.cgroups;
    return fs ? join(fs.root, `plb-${this.cluster}-${id}`) : null;
  }

  /** Puts the processes in the server's group with the quota; false when not enforced or it failed. */
  limit(id: string, pids: readonly number[], cpus: number): boolean {
    const dir = this.dir(id);
    if (!dir) return false;
    try {
      mkdirSync(dir, { recursive: true });
      this.setQuota(id, cpus);
      for (const pid of pids) {
        try {
          writeFileSync(join(dir, 'cgroup.procs'), String(pid));
        } catch {
          // the process ended between the snapshot and the move
        }
      }
      return true;
    } catch {
      return false;
    }
  }

  setQuota(id: string, cpus: number): boolean {
    const dir = this.dir(id);
    const fs = this.cgroups;
    if (!dir || !fs || !existsSync(dir)) return false;
    const quota = Math.max(1000, Math.round(cpus * PERIOD_US));
    try {
      if (fs.version === 1) {
        writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
        writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quota));
      } else {
        writeFileSync(join(dir, 'cpu.max'), `${quota} ${PERIOD_US}`);
      }
      return true;
    } catch {
      return false;
    }
  }

  /** Removes the server's group (the kernel refuses while processes remain; then it stays). */
  remove(id: string): void {
    const dir = this.dir(id);
    if (!dir || !existsSync(dir)) return;
    try {
      rmdirSync(dir);
    } catch {
      // still has processes: they are being killed; a later down retries
    }
  }
}

/**
 * Each server's own cgroup v2 group (`plb-<cluster>-<id>`; on a pure v2 machine the same folder as
 * its CPU quota's), so the network faults can tell its packets apart: a socket belongs to the group
 * of the process that made it, fixed when it is made. Servers are started inside it (spawnInside),
 * so the walreceiver's connection to the primary is made there from the first.
 */
export class ServerGroups {
  constructor(
    private readonly cluster: string,
    private readonly base = '/sys/fs/cgroup',
  ) {}

  private name(id: string): string {
    return `plb-${this.cluster}-${id}`;
  }

  /**
   * Runs `spawn`, which must start its process before it returns (child_process does), with plb in
   * the server's group, so the process and all it starts are born there; plb is back in its own
   * group before anything else runs (no socket of plb's is made meanwhile). Without a writable v2
   * hierarchy, or when plb could not go back, it only spawns.
   */
  spawnInside<T>(id: string, spawn: () => T): T {
    const root = cgroup2Root(this.base);
    const home = cgroupOf('self');
    if (root === null || home === null) return spawn();
    const dir = join(root, this.name(id));
    const homeProcs = join(root, home, 'cgroup.procs');
    if (!writable(homeProcs)) return spawn();
    try {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'cgroup.procs'), String(process.pid));
    } catch {
      return spawn();
    }
    try {
      return spawn();
    } finally {
      writeFileSync(homeProcs, String(process.pid));
    }
  }

  /** The iptables match of the server's packets, or why there is none (process `pid` is its postmaster). */
  match(id: string, pid: number | null): { ownPackets: string[] } | { why: string } {
    const root = cgroup2Root(this.base);
    if (root === null) return { why: 'no cgroup v2 hierarchy on this machine' };
    if (pid === null) return { why: `${id} is not running` };
    const path = `/${this.name(id)}`;
    const now = cgroupOf(pid);
    if (now !== path)
      return {
        why: `${id} runs in cgroup ${now ?? '?'}, not ${path}: it was started before plb started servers in their groups; restart it (\`plb cluster down\`, then up)`,
      };
    return { ownPackets: cgroupMatch(path) };
  }

  /** Removes the server's group (kept while processes remain; a later down retries). */
  remove(id: string): void {
    const root = cgroup2Root(this.base);
    const dir = root === null ? null : join(root, this.name(id));
    if (dir === null || !existsSync(dir)) return;
    try {
      rmdirSync(dir);
    } catch {
      // still has processes, or is the CPU quota's folder too (removed there)
    }
  }
}
