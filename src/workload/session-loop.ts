import type { Clock, TimerTask } from '../clock/index.js';
import { asError, errorText, isPlbError } from '../core/errors.js';
import type { ServiceClass } from '../core/service-class.js';
import type { Recorder } from '../metrics/types.js';
import type { DataSource, PinnedConnection } from './data-source.js';
import type { StatementWaiter } from '../cluster/connector.js';
import type { Rng } from '../core/rng.js';
import type { WorkloadSpec } from '../run-format/config.js';
import { drawStatement } from '../cluster/templates.js';
import { classTemplates } from './statements.js';

export interface SessionContext {
  ds: DataSource;
  recorder: Recorder;
  spec: WorkloadSpec;
  clock: Clock;
  /** True once the run should wind down: sessions stop after their current query. */
  stopping: () => boolean;
  /** With zones: a replica's zone, so a session landing outside its client's zone is counted. */
  zoneOf?: (replica: string) => string | undefined;
  /** Where a template that writes runs (the primary); absent: a read-only workload. */
  primary?: { query(text: string, values: unknown[]): Promise<number> };
  /** Per-template latencies (metrics/summary/template-stats.ts). */
  templates?: {
    done(cls: ServiceClass, template: string, endMs: number, latencyMs: number): void;
    failed(cls: ServiceClass, template: string, endMs: number): void;
  };
}

export type SessionOutcome = 'finished' | 'failed' | 'no-replica' | 'connect-failed' | 'stopped';

/** Retry backoff of a closed-model client after a failed session or connect. */
const MIN_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 4000;

/**
 * One session: admission (the router picks the replica), then its queries with think time, then
 * close. A query error ends the session as failed (the in-flight query is an error, not goodput).
 * Open model (`scheduledMs` given): the first query's latency includes how late the harness
 * started the session, so a late schedule is not hidden (coordinated omission); the connect itself
 * is its own metric (sessionOpened's connectMs).
 */
export async function runSession(
  ctx: SessionContext,
  cls: ServiceClass,
  rng: Rng,
  scheduledMs?: number,
  zone?: string,
): Promise<SessionOutcome> {
  const { recorder, spec, clock } = ctx;
  // Open model: how late the harness started this session (coordinated omission: it counts).
  const scheduleLag = scheduledMs === undefined ? 0 : Math.max(0, clock.now() - scheduledMs);
  let conn;
  try {
    conn = await ctx.ds.getConnection(zone === undefined ? { class: cls } : { class: cls, zone });
  } catch (err) {
    const reason = isPlbError(err) ? err.code : errorText(err);
    recorder.admissionFailed(cls, clock.now(), reason);
    return isPlbError(err, 'NO_REPLICA') ? 'no-replica' : 'connect-failed';
  }
  const opened = conn.openedMs;
  if (ctx.ds.queueing) recorder.sessionQueued?.(cls, opened, conn.queueMs);
  const crossZone = zone !== undefined && ctx.zoneOf ? ctx.zoneOf(conn.replica) !== zone : undefined;
  recorder.sessionOpened(cls, conn.replica, opened, conn.connectMs, crossZone);
  const w = spec.classes[cls];
  const n = Math.max(
    1,
    rng.int(Math.ceil(w.queriesPerSession / 2), Math.floor((w.queriesPerSession * 3) / 2)),
  );
  const open = conn;
  const ended = await new Promise<SessionOutcome>((resolve, reject) => {
    new SessionQueries(ctx, cls, rng, open, n, scheduleLag, resolve, reject).next();
  });
  const failed = ended === 'failed' || conn.isBroken;
  await conn.close();
  recorder.sessionClosed(
    cls,
    conn.replica,
    opened,
    clock.now(),
    failed ? 'failed' : ended === 'stopped' ? 'cut' : 'finished',
  );
  return failed ? 'failed' : ended;
}

/**
 * An open session's queries, each after its think time, driven by the clock's timer and the
 * connection's callback: no promise per query (a simulated run makes millions of them).
 */
class SessionQueries implements TimerTask, StatementWaiter {
  readonly cancelled = false;
  private readonly w: WorkloadSpec['classes'][ServiceClass];
  private readonly templates: ReturnType<typeof classTemplates>;
  private i = 0;
  private startMs = 0;
  private template = '';

  constructor(
    private readonly ctx: SessionContext,
    private readonly cls: ServiceClass,
    private readonly rng: Rng,
    private readonly conn: PinnedConnection,
    private readonly n: number,
    private readonly scheduleLag: number,
    private readonly resolve: (o: SessionOutcome) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.w = ctx.spec.classes[cls];
    this.templates = classTemplates(ctx.spec, cls);
  }

  /** The top of the loop: stop, end, think, or the next statement. */
  next(): void {
    const { ctx } = this;
    if (this.i >= this.n) return this.resolve('finished');
    if (ctx.stopping()) return this.resolve('stopped');
    // A pool's max lifetime: the session ends (and reconnects, rebalancing) with queries left.
    const life = ctx.spec.maxSessionLifetimeMs;
    if (life !== undefined && ctx.clock.now() - this.conn.openedMs >= life) return this.resolve('finished');
    if (this.i > 0 && this.w.thinkTimeMs > 0) ctx.clock.after(this.rng.exp(this.w.thinkTimeMs), this);
    else this.issue();
  }

  /** The think time is over. Stopped while thinking: no new query (it would carry into the next run). */
  onTimer(): void {
    if (this.ctx.stopping()) this.resolve('stopped');
    else this.issue();
  }

  private issue(): void {
    const { ctx } = this;
    try {
      const q = drawStatement(this.templates, ctx.spec.datasetRows, this.rng);
      // Connect time is measured apart; a late schedule is charged to the first query.
      const now = ctx.clock.now();
      this.startMs = this.i === 0 ? now - this.scheduleLag : now;
      this.template = q.template.name;
      // A write goes to the primary; the session stays pinned to its replica for its reads.
      if (q.template.writes && ctx.primary)
        ctx.primary.query(q.text, q.values).then(
          () => this.statementDone(undefined),
          (err: unknown) => this.statementDone(asError(err)),
        );
      else this.conn.run(q.text, q.values, this);
    } catch (err) {
      this.reject(err);
    }
  }

  statementDone(err: Error | undefined): void {
    const { ctx, cls } = this;
    try {
      const end = ctx.clock.now();
      if (err !== undefined) {
        ctx.recorder.queryFailed(cls, this.conn.replica, end, errorText(err));
        ctx.templates?.failed(cls, this.template, end);
        this.resolve('failed');
        return;
      }
      ctx.recorder.queryDone(cls, this.conn.replica, end, end - this.startMs);
      ctx.templates?.done(cls, this.template, end, end - this.startMs);
      this.i++;
      this.next();
    } catch (e) {
      this.reject(e);
    }
  }
}

/** Closed model: one client runs sessions back to back until the run stops. */
export async function runClient(
  ctx: SessionContext,
  cls: ServiceClass,
  rng: Rng,
  joinAtMs: number,
  zone?: string,
): Promise<void> {
  await ctx.clock.sleep(joinAtMs - ctx.clock.now());
  let backoffMs = 0;
  while (!ctx.stopping()) {
    const outcome = await runSession(ctx, cls, rng, undefined, zone);
    if (outcome === 'finished' || outcome === 'stopped') {
      backoffMs = 0;
      continue;
    }
    // --on-failure leave: a user who gave up after an error does not come back (the population
    // shrinks at a fault instead of being conserved by retries).
    if (ctx.spec.onFailure === 'leave') return;
    // Back off after a failure, doubling up to a cap with jitter, as a pooled client would: a
    // tight retry loop against a busy replica forks backends whose clients already gave up, and
    // that storm, not the workload, would then set the replica's load.
    backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs === 0 ? MIN_BACKOFF_MS : backoffMs * 2);
    await ctx.clock.sleep(backoffMs / 2 + rng.next() * (backoffMs / 2));
  }
}
