/**
 * What the proxy process holds: open file descriptors, their limit, resident memory; and the
 * client limit derived from the descriptor limit. Linux reads /proc; elsewhere the figures are
 * undefined and the limit falls back to the common default of 1024 descriptors.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Descriptors kept for everything that is not a session: listeners, health checks, stdio, logs. */
const RESERVED_FDS = 64;
const FALLBACK_FD_LIMIT = 1024;

/** The soft limit on open files (RLIMIT_NOFILE), from /proc/self/limits. */
export function fdLimit(limitsText?: string): number {
  let text = limitsText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return FALLBACK_FD_LIMIT;
    }
  }
  const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(text);
  if (!m) return FALLBACK_FD_LIMIT;
  return m[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(m[1]);
}

/**
 * The default --max-client-conn: every client may hold two descriptors (its own socket and its
 * replica's), after RESERVED_FDS for the rest: floor((fd limit - 64) / 2), at least 1.
 */
export function defaultMaxClientConn(limit = fdLimit()): number {
  return Math.max(1, Math.floor((Math.min(limit, 1 << 24) - RESERVED_FDS) / 2));
}

/** Open descriptors of this process (undefined where /proc is absent). */
function openFds(): number | undefined {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return undefined;
  }
}

export interface ProcessUsage {
  rssMiB: number;
  fds: number | undefined;
  fdLimit: number;
  /** The highest values seen by the sampler (every second while the proxy runs). */
  peakRssMiB: number;
  peakFds: number | undefined;
  peakClients: number;
}

/** Samples RSS and descriptors once a second and keeps the peaks; `now()` also samples. */
export class UsageSampler {
  private peakRss = 0;
  private peakFds: number | undefined;
  private peakClients = 0;
  private readonly timer: NodeJS.Timeout;
  private readonly limit = fdLimit();

  constructor(private readonly clients: () => number) {
    this.timer = setInterval(() => this.sample(), 1000);
    this.timer.unref();
  }

  /** A client arrived: the client peak is exact, memory and descriptors are sampled. */
  noteClients(n: number): void {
    if (n > this.peakClients) this.peakClients = n;
  }

  now(): ProcessUsage {
    const { rss, fds } = this.sample();
    return {
      rssMiB: round1(rss),
      fds,
      fdLimit: this.limit,
      peakRssMiB: round1(this.peakRss),
      peakFds: this.peakFds,
      peakClients: this.peakClients,
    };
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private sample(): { rss: number; fds: number | undefined } {
    const rss = process.memoryUsage.rss() / (1024 * 1024);
    const fds = openFds();
    this.peakRss = Math.max(this.peakRss, rss);
    if (fds !== undefined) this.peakFds = Math.max(this.peakFds ?? 0, fds);
    this.noteClients(this.clients());
    return { rss, fds };
  }
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}
