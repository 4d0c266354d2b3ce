/**
 * The per-replica session limits of `plb proxy`, in one place: each replica's own limit (the
 * --admission-limit number, or the default read from its max_connections: default-limit.ts), and
 * with `--router-view replica` the replica's own count of every proxy's sessions, read from
 * pg_stat_activity every interval (cluster/session-counts.ts: the class is the marked
 * application_name's). The admission router then counts a replica's sessions as the last read
 * showed them plus this proxy's sessions that read could not see (admitted since it was sent, or
 * not yet authenticated then: PostgreSQL shows a backend only once it is), and admits while that
 * count is under the limit and this proxy has fewer than unseenCap(limit) sessions there unseen.
 * Each other proxy can so be ahead of a read by at most that many: P proxies exceed a replica's
 * limit by at most (P - 1) x unseenCap between reads (docs/proxy.md).
 */
import type { Cancel, Clock } from '../../clock/index.js';
import type { SessionCountReader, ClassCounts } from '../../cluster/session-counts.js';
import type { AdmittingRouter } from '../../router/admission/admission.js';
import { DEFAULT_PREMIUM_RESERVE } from '../../router/admission/admission-defaults.js';
import type { AdmissionOptions } from '../../router/admission/admission-types.js';
import type { ServiceClass } from '../../core/service-class.js';
import {
  DEFAULT_ADMISSION_RESERVE,
  DEFAULT_FREEMIUM_RESERVE,
  defaultAdmissionLimit,
  UNREAD_SETTINGS,
  unseenCap,
} from './default-limit.js';
import type { ConnectionSettings } from '../../cluster/server-limits.js';

export interface ReplicaViewOptions {
  reader: SessionCountReader;
  intervalMs: number;
}

/** This proxy's own sessions on one replica, as the view needs them. */
interface Own {
  /** Admitted and not released. */
  held: ClassCounts;
  /** Of held: those past ReadyForQuery (a read sent after that shows them). */
  ready: ClassCounts;
  /** Ready sessions released, ever (a read compares its value at sending with now). */
  readyReleased: ClassCounts;
  /** Of held: those the last applied read saw (at most). */
  visible: ClassCounts;
  /** The last applied read's sessions of both classes (every proxy's), less own seen ones released since. */
  seen: number | undefined;
}

/** What a read remembers from its sending. */
interface Sent {
  ready: ClassCounts;
  readyReleased: ClassCounts;
}

const zero = (): ClassCounts => ({ premium: 0, freemium: 0 });

export class ReplicaLimits {
  private readonly base = new Map<string, number>();
  private readonly own = new Map<string, Own>();
  private readonly inFlight = new Set<string>();
  private cancel: Cancel | undefined;
  private stopped = false;
  /** Reads applied, and reads that failed (a replica down keeps its last count). */
  reads = 0;
  failedReads = 0;

  private readonly ids: string[];

  constructor(
    private readonly router: AdmittingRouter<object>,
    ids: readonly string[],
    private readonly initial: number,
    private readonly clock: Clock,
    /** Capacity may have appeared: hand slots to waiters. */
    private readonly pump: () => void,
    readonly view?: ReplicaViewOptions,
  ) {
    this.ids = [...ids];
    for (const id of ids) {
      this.base.set(id, initial);
      if (view)
        this.own.set(id, {
          held: zero(),
          ready: zero(),
          readyReleased: zero(),
          visible: zero(),
          seen: undefined,
        });
    }
    for (const id of ids) this.apply(id);
  }

  /**
   * A replica added at run time (the router knows it already): the limit every replica starts with,
   * until its max_connections is read (readLimit, when its checks pass). Not with the replica view:
   * its reader was made for the replicas the proxy started with.
   */
  add(replica: string): void {
    if (this.base.has(replica) || this.view) return;
    this.ids.push(replica);
    this.base.set(replica, this.initial);
    this.apply(replica);
  }

  /** Replica's own limit (its max_connections read, or the flag's). */
  setBase(replica: string, limit: number): void {
    if (!this.base.has(replica)) return;
    this.base.set(replica, limit);
    this.apply(replica);
  }

  /** The limit in force per replica now. */
  limits(): Record<string, number> {
    return Object.fromEntries(this.ids.map((id) => [id, this.effective(id)]));
  }

  admitted(replica: string, cls: ServiceClass): void {
    const o = this.own.get(replica);
    if (o) o.held[cls] += 1;
  }

  established(replica: string, cls: ServiceClass): void {
    const o = this.own.get(replica);
    if (o) o.ready[cls] += 1;
  }

  released(replica: string, cls: ServiceClass, established: boolean): void {
    const o = this.own.get(replica);
    if (!o) return;
    o.held[cls] = Math.max(0, o.held[cls] - 1);
    if (!established) return;
    o.ready[cls] = Math.max(0, o.ready[cls] - 1);
    o.readyReleased[cls] += 1;
    // Taken for one the last read saw (if it saw any still held): its slot is free for everyone.
    if (o.visible[cls] > 0 && o.seen !== undefined) {
      o.visible[cls] -= 1;
      o.seen = Math.max(0, o.seen - 1);
      this.apply(replica);
    }
  }

  /** Reads every replica once (before the listeners open); a replica not read keeps no view yet. */
  async readAll(): Promise<void> {
    await Promise.all(this.ids.map((id) => this.poll(id)));
  }

  /** Reads every interval until stop(). */
  start(): void {
    const view = this.view;
    if (!view) return;
    const tick = (): void => {
      if (this.stopped) return;
      for (const id of this.ids) void this.poll(id);
      this.cancel = this.clock.timer(view.intervalMs, tick);
    };
    this.cancel = this.clock.timer(view.intervalMs, tick);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancel?.();
    await this.view?.reader.close();
  }

  /** One replica's read; one at a time per replica (a paused server's is not doubled). */
  private async poll(id: string): Promise<void> {
    const o = this.own.get(id);
    if (!this.view || !o || this.inFlight.has(id)) return;
    this.inFlight.add(id);
    const sent: Sent = { ready: { ...o.ready }, readyReleased: { ...o.readyReleased } };
    try {
      const counts = await this.view.reader.read(id);
      if (!this.stopped) this.observed(id, o, counts, sent);
    } catch {
      this.failedReads += 1;
    } finally {
      this.inFlight.delete(id);
    }
  }

  private observed(id: string, o: Own, counts: ClassCounts, sent: Sent): void {
    this.reads += 1;
    const total: ClassCounts = zero();
    for (const cls of ['premium', 'freemium'] as const) {
      // Ready at sending and not released since (released ones may have been others: fewer, safer).
      const visible = Math.max(0, sent.ready[cls] - (o.readyReleased[cls] - sent.readyReleased[cls]));
      o.visible[cls] = Math.min(visible, o.held[cls]);
      total[cls] = counts[cls] + (o.held[cls] - o.visible[cls]);
    }
    o.seen = counts.premium + counts.freemium;
    this.router.observeSessions(id, total, this.clock.now());
    this.apply(id);
    this.pump();
  }

  /**
   * The replica's limit now: its own, and with the view at most what was seen plus the unseen cap
   * (a replica never read yet: as if it held nothing of the others').
   */
  private effective(id: string): number {
    const base = this.base.get(id) ?? 1;
    const o = this.own.get(id);
    return o === undefined ? base : Math.max(1, Math.min(base, (o.seen ?? 0) + unseenCap(base)));
  }

  private apply(id: string): void {
    this.router.setLimit(id, this.effective(id));
  }
}

export interface AdmissionSettings {
  limit: number | 'auto';
  /** With 'auto': the slots kept for connections that are not sessions (default-limit.ts). */
  reserve?: number;
  queue: number;
  timeoutMs: number;
  premiumReserve?: number;
  freemiumReserve?: number;
}

/**
 * The admission router's options for the proxy's settings: its limits, each class its own queue
 * places (a flood of one class never refuses the other's sessions), and both reserves (premium's
 * against freemium, freemium's floor against premium), by default 10 % each.
 */
export function proxyAdmission(a: AdmissionSettings): Omit<AdmissionOptions, 'slowStartMs'> {
  return {
    limits: { mode: 'fixed', limit: initialLimit(a) },
    queue: { capacity: a.queue, timeoutMs: a.timeoutMs, perClass: true },
    premiumReserve: a.premiumReserve ?? DEFAULT_PREMIUM_RESERVE,
    freemiumReserve: a.freemiumReserve ?? DEFAULT_FREEMIUM_RESERVE,
  };
}

/** The limit a replica has before its settings are read (and the one a number gives every replica). */
export function initialLimit(a: AdmissionSettings | undefined): number {
  if (!a) return 1;
  return a.limit === 'auto'
    ? defaultAdmissionLimit(UNREAD_SETTINGS, a.reserve ?? DEFAULT_ADMISSION_RESERVE)
    : a.limit;
}

/** With --admission-limit auto: the replica's limit from its own settings (unread: kept as it was). */
export async function readLimit(
  replica: string,
  limits: ReplicaLimits,
  opts: {
    admission?: AdmissionSettings | undefined;
    settingsOf?: ((replica: string) => Promise<ConnectionSettings>) | undefined;
  },
  log: (l: string) => void,
): Promise<void> {
  const a = opts.admission;
  if (a?.limit !== 'auto' || !opts.settingsOf) return;
  try {
    const s = await opts.settingsOf(replica);
    const limit = defaultAdmissionLimit(s, a.reserve ?? DEFAULT_ADMISSION_RESERVE);
    limits.setBase(replica, limit);
    log(
      `${replica}: admission limit ${limit} (max_connections ${s.maxConnections} - reserved ${s.superuserReserved + s.reserved} - ${a.reserve ?? DEFAULT_ADMISSION_RESERVE} for checks and operators)`,
    );
  } catch (err) {
    log(
      `${replica}: max_connections not read (${err instanceof Error ? err.message : String(err)}); limit stays ${limits.limits()[replica]}`,
    );
  }
}
