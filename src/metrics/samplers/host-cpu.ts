/**
 * The host's own CPU, from the kernel's counters (`/proc/stat`): how busy all of its cores were
 * and how much time the hypervisor took away (steal). The replicas' quotas are only a ceiling: on
 * a host whose cores are all busy (the primary, kernel threads, the harness, anything else) a
 * replica gets less than its quota, and no model of the cluster alone can say so. Linux only;
 * elsewhere (or without a readable /proc/stat) nothing is sampled.
 */
import { readFileSync } from 'node:fs';

interface Ticks {
  busy: number;
  steal: number;
  total: number;
}

/** The first line of /proc/stat: the sum over all cores, in clock ticks. */
export function parseProcStat(text: string): Ticks | undefined {
  const line = text.slice(0, text.indexOf('\n'));
  const f = line.split(/\s+/);
  if (f[0] !== 'cpu' || f.length < 9) return undefined;
  // user nice system idle iowait irq softirq steal (guest time is already inside user and nice).
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f.slice(1, 9).map(Number) as number[];
  const busy = (user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0);
  const total = busy + (idle ?? 0) + (iowait ?? 0) + (steal ?? 0);
  return Number.isFinite(total) ? { busy, steal: steal ?? 0, total } : undefined;
}

export class HostCpu {
  private last: Ticks | undefined;
  private at: number;

  constructor(
    private readonly now: () => number,
    private readonly read: () => string = () => readFileSync('/proc/stat', 'utf8'),
  ) {
    this.at = now();
    this.last = this.ticks();
  }

  private ticks(): Ticks | undefined {
    try {
      return parseProcStat(this.read());
    } catch {
      return undefined;
    }
  }

  /**
   * Since the last sample: busy and stolen time as fractions of all the host's cores (0..1),
   * stamped at the interval's middle; undefined when the counters cannot be read.
   */
  sample(): { midMs: number; busy: number; steal: number } | undefined {
    const t = this.now();
    const cur = this.ticks();
    const prev = this.last;
    const midMs = (this.at + t) / 2;
    this.last = cur;
    this.at = t;
    if (!cur || !prev || cur.total <= prev.total) return undefined;
    const total = cur.total - prev.total;
    return { midMs, busy: (cur.busy - prev.busy) / total, steal: (cur.steal - prev.steal) / total };
  }
}
