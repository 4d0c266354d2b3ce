/**
 * Cumulative CPU seconds of containers. Sampled every second during benchmarks, so it reads the
 * container's cgroup counter straight from /sys/fs/cgroup when the engine is local (well under a
 * millisecond per container) and falls back to the one-shot stats API otherwise.
 */
import { readFile } from 'node:fs/promises';
import type Docker from 'dockerode';
import { pooledCpuFiles } from './cpu-pool.js';

/** cgroup files that may hold a container's CPU usage, with the unit of their number. */
function candidates(id: string, pool: string | undefined): { path: string; kind: 'ns' | 'stat' }[] {
  return [
    // the replicas of a --cpu-pool cluster (the primary stays under the engine's own parent)
    ...(pool !== undefined ? pooledCpuFiles(pool, id) : []),
    // cgroup v1, cgroupfs and systemd drivers
    { path: `/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`, kind: 'ns' },
    { path: `/sys/fs/cgroup/cpu,cpuacct/docker/${id}/cpuacct.usage`, kind: 'ns' },
    { path: `/sys/fs/cgroup/cpuacct/system.slice/docker-${id}.scope/cpuacct.usage`, kind: 'ns' },
    { path: `/sys/fs/cgroup/cpu,cpuacct/system.slice/docker-${id}.scope/cpuacct.usage`, kind: 'ns' },
    // cgroup v2
    { path: `/sys/fs/cgroup/system.slice/docker-${id}.scope/cpu.stat`, kind: 'stat' },
    { path: `/sys/fs/cgroup/docker/${id}/cpu.stat`, kind: 'stat' },
  ];
}

async function readCgroup(path: string, kind: 'ns' | 'stat'): Promise<number> {
  const text = await readFile(path, 'utf8');
  if (kind === 'ns') return Number(text.trim()) / 1e9;
  const m = /^usage_usec (\d+)$/m.exec(text);
  if (!m?.[1]) throw new Error(`no usage_usec in ${path}`);
  return Number(m[1]) / 1e6;
}

/** True when DOCKER_HOST is unset or a unix socket, i.e. the containers' cgroups are on this host. */
export function engineIsLocal(env: NodeJS.ProcessEnv = process.env): boolean {
  const h = env.DOCKER_HOST;
  return h === undefined || h === '' || h.startsWith('unix://');
}

export class CpuReader {
  /** Which cgroup file worked, per container id. */
  private readonly paths = new Map<string, { path: string; kind: 'ns' | 'stat' }>();
  /** null: not probed yet; false: use the stats API. */
  private cgroups: boolean | null;

  constructor(
    private readonly docker: Docker,
    useCgroups = engineIsLocal(),
    /** The --cpu-pool parent cgroup, when the cluster has one. */
    private readonly pool?: string,
  ) {
    this.cgroups = useCgroups ? null : false;
  }

  /** CPU seconds used by the container since it (re)started, or null when it is not running. */
  async read(containerId: string): Promise<number | null> {
    if (this.cgroups !== false) {
      const known = this.paths.get(containerId);
      if (known) {
        try {
          return await readCgroup(known.path, known.kind);
        } catch {
          // the cgroup goes away when the container stops; it may come back on start
          this.paths.delete(containerId);
          return null;
        }
      }
      for (const c of candidates(containerId, this.pool)) {
        try {
          const v = await readCgroup(c.path, c.kind);
          this.paths.set(containerId, c);
          this.cgroups = true;
          return v;
        } catch {
          // try the next layout
        }
      }
      // A known layout and no file: the container is not running.
      if (this.cgroups === true) return null;
      // Layout not known yet: if the API sees a running container whose cgroup we could not
      // find, this engine keeps cgroups elsewhere; use the API from now on.
      const v = await this.readStats(containerId);
      if (v !== null) this.cgroups = false;
      return v;
    }
    return this.readStats(containerId);
  }

  private async readStats(containerId: string): Promise<number | null> {
    try {
      const s = await this.docker.getContainer(containerId).stats({ stream: false, 'one-shot': true });
      const ns = s.cpu_stats?.cpu_usage?.total_usage;
      // A stopped container reports zeros / no cpu_stats.
      return typeof ns === 'number' && ns > 0 ? ns / 1e9 : null;
    } catch {
      return null;
    }
  }
}
