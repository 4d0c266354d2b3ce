import { PlbError } from '../../core/errors.js';

/**
 * Per-replica session limits: how many concurrent sessions (both classes) a replica may hold.
 * `fixed`: the configured limit. `gradient`: adapted from the replica's observed query latency the
 * way Netflix's concurrency-limits Gradient2 does: each interval, gradient = clamp(tolerance * long
 * / short, 0.5, 1) where short is this interval's mean latency and long a slow moving average;
 * the limit moves toward limit * gradient + sqrt(limit) (the headroom a queue needs to probe), and
 * grows only while the replica uses most of it (an idle replica says nothing about its capacity).
 * Pure: time is passed in.
 */
export interface SessionLimitOptions {
  mode: 'fixed' | 'gradient';
  /** Sessions per replica of weight 1 (fixed), or the starting limit (gradient). */
  limit: number;
  /** gradient: the limit stays in [min, max] (default 1 and 4 x limit). */
  min?: number;
  max?: number;
  /** gradient: how much slower than its long average a replica may get before the limit drops (default 1.5). */
  tolerance?: number;
  /** gradient: how often the limit moves, ms (default 1000). */
  intervalMs?: number;
  /** gradient: how far the limit moves toward its new value each interval (default 0.2). */
  smoothing?: number;
}

/** The long average's weight per interval (about a minute of intervals). */
const LONG_ALPHA = 1 / 60;

interface ReplicaLimit {
  limit: number;
  sum: number;
  n: number;
  long: number | undefined;
}

export class SessionLimits {
  private readonly state = new Map<string, ReplicaLimit>();
  private readonly min: number;
  private readonly max: number;
  private readonly tolerance: number;
  private readonly intervalMs: number;
  private readonly smoothing: number;
  private nextMs: number | undefined;

  constructor(
    ids: readonly string[],
    readonly opts: SessionLimitOptions,
  ) {
    validateLimit(opts.limit, 'limit');
    this.min = opts.min ?? 1;
    this.max = opts.max ?? Math.max(opts.limit * 4, opts.limit + 1);
    this.tolerance = opts.tolerance ?? 1.5;
    this.intervalMs = opts.intervalMs ?? 1000;
    this.smoothing = opts.smoothing ?? 0.2;
    if (!(this.min >= 1) || !(this.max >= this.min))
      throw new PlbError('BAD_INPUT', `session limits: need 1 <= min <= max (got ${this.min}, ${this.max})`);
    if (!(this.tolerance >= 1)) throw new PlbError('BAD_INPUT', 'session limits: tolerance must be >= 1');
    for (const id of ids) this.state.set(id, { limit: opts.limit, sum: 0, n: 0, long: undefined });
  }

  /** A replica added at run time: the configured limit, as every replica starts with. */
  add(replica: string): void {
    if (!this.state.has(replica))
      this.state.set(replica, { limit: this.opts.limit, sum: 0, n: 0, long: undefined });
  }

  /**
   * Sets one replica's limit (fixed mode): the proxy's limits read from each replica's own
   * max_connections, and the replica view's bound on sessions not yet seen there.
   */
  setBase(replica: string, limit: number): void {
    validateLimit(limit, `limit of ${replica}`);
    const s = this.state.get(replica);
    if (s) s.limit = limit;
  }

  /** The limit of a replica before weight and slow start (fractional under gradient). */
  base(replica: string): number {
    return this.state.get(replica)?.limit ?? this.opts.limit;
  }

  /**
   * The sessions a replica may hold now: its limit times its weight and slow-start ramp, at least 1
   * (a rejoining replica takes sessions from its first moment, few at first).
   */
  effective(replica: string, weight: number, ramp: number): number {
    return Math.max(1, Math.floor(this.base(replica) * weight * ramp));
  }

  /** A query on replica completed in latencyMs (gradient input; fixed ignores it). */
  observe(replica: string, latencyMs: number): void {
    if (this.opts.mode !== 'gradient') return;
    const s = this.state.get(replica);
    if (!s || !(latencyMs >= 0)) return;
    s.sum += latencyMs;
    s.n++;
  }

  /**
   * Moves the gradient limits once per interval; sessionsOf gives a replica's open sessions. Whether
   * this call moved them (an interval had passed), so callers that cache a limit know to refresh.
   */
  update(nowMs: number, sessionsOf: (replica: string) => number): boolean {
    if (this.opts.mode !== 'gradient') return false;
    if (this.nextMs === undefined) this.nextMs = nowMs + this.intervalMs;
    if (nowMs < this.nextMs) return false;
    this.nextMs = nowMs + this.intervalMs;
    for (const [id, s] of this.state) {
      if (s.n === 0) continue;
      const short = s.sum / s.n;
      s.sum = 0;
      s.n = 0;
      s.long = s.long === undefined ? short : s.long + LONG_ALPHA * (short - s.long);
      // A long average that drifted far above now (overload ended) follows it down at once.
      if (s.long > short * 2) s.long = short;
      const gradient = Math.min(1, Math.max(0.5, (this.tolerance * s.long) / Math.max(short, 1e-6)));
      const busy = sessionsOf(id) >= 0.9 * s.limit;
      const target = s.limit * gradient + (busy || gradient < 1 ? Math.sqrt(s.limit) : 0);
      const next = gradient < 1 || busy ? s.limit + this.smoothing * (target - s.limit) : s.limit;
      s.limit = Math.min(this.max, Math.max(this.min, next));
    }
    return true;
  }
}

/** A session limit must be a finite number >= 1 (a limit of 0 admits nobody). */
function validateLimit(limit: number, what: string): void {
  if (!Number.isFinite(limit) || !(limit >= 1))
    throw new PlbError('BAD_INPUT', `${what} must be a number >= 1 (got ${String(limit)})`);
}
