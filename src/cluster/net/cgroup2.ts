/**
 * The cgroup v2 hierarchy, for telling a server's packets apart (`-m cgroup --path`): a socket
 * belongs to the v2 cgroup of the process that made it, fixed when it is made. Mounted at
 * /sys/fs/cgroup/unified on a hybrid (v1 + v2) machine, at /sys/fs/cgroup on a pure v2 one.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where the v2 hierarchy is mounted, or null. */
export function cgroup2Root(base = '/sys/fs/cgroup'): string | null {
  for (const dir of [join(base, 'unified'), base])
    if (existsSync(join(dir, 'cgroup.controllers'))) return dir;
  return null;
}

/** A process's v2 cgroup (`/plb-c-r1`, from its `0::` line), or null. */
export function cgroupOf(pid: number | 'self'): string | null {
  try {
    const line = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('0::'));
    return line === undefined ? null : line.slice(3);
  } catch {
    return null;
  }
}

/** The iptables match of the packets of sockets made in a v2 cgroup (its path, from the root). */
export function cgroupMatch(path: string): string[] {
  return ['-m', 'cgroup', '--path', path];
}
