import type { Clock } from '../clock/index.js';
import { errorText, isPlbError } from '../core/errors.js';
import type { ServiceClass } from '../core/service-class.js';
import type { Recorder } from '../metrics/types.js';
import type { DataSource } from './data-source.js';
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
  /** Per-template latencies (metrics/template-stats.ts). */
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
  const now = (): number => clock.now();
  // Open model: how late the harness started this session (coordinated omission: it counts).
  const scheduleLag = scheduledMs === undefined ? 0 : Math.max(0, now() - scheduledMs);
  let conn;
  try {
    conn = await ctx.ds.getConnection(zone === undefined ? { class: cls } : { class: cls, zone });
  } catch (err) {
    const reason = isPlbError(err) ? err.code : errorText(err);
    recorder.admissionFailed(cls, now(), reason);
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
  const templates = classTemplates(spec, cls);
  let outcome: SessionOutcome = 'finished';
  for (let i = 0; i < n; i++) {
    if (ctx.stopping()) {
      outcome = 'stopped';
      break;
    }
    // A pool's max lifetime: the session ends (and reconnects, rebalancing) with queries left.
    if (spec.maxSessionLifetimeMs !== undefined && now() - opened >= spec.maxSessionLifetimeMs) break;
    if (i > 0 && w.thinkTimeMs > 0) {
      await clock.sleep(rng.exp(w.thinkTimeMs));
      // Stopped while thinking: no new query (a long think would carry it into the next run).
      if (ctx.stopping()) {
        outcome = 'stopped';
        break;
      }
    }
    const q = drawStatement(templates, spec.datasetRows, rng);
    // Connect time is measured apart; a late schedule is charged to the first query.
    const start = i === 0 ? now() - scheduleLag : now();
    try {
      // A write goes to the primary; the session stays pinned to its replica for its reads.
      if (q.template.writes && ctx.primary) await ctx.primary.query(q.text, q.values);
      else await conn.query(q.text, q.values);
      const end = now();
      recorder.queryDone(cls, conn.replica, end, end - start);
      ctx.templates?.done(cls, q.template.name, end, end - start);
    } catch (err) {
      recorder.queryFailed(cls, conn.replica, now(), errorText(err));
      ctx.templates?.failed(cls, q.template.name, now());
      outcome = 'failed';
      break;
    }
  }
  const failed = outcome === 'failed' || conn.isBroken;
  await conn.close();
  recorder.sessionClosed(
    cls,
    conn.replica,
    opened,
    now(),
    failed ? 'failed' : outcome === 'stopped' ? 'cut' : 'finished',
  );
  return failed ? 'failed' : outcome;
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
    // Back off after a failure, doubling up to a cap with jitter, as a pooled client would: a
    // tight retry loop against a busy replica forks backends whose clients already gave up, and
    // that storm, not the workload, would then set the replica's load.
    backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs === 0 ? MIN_BACKOFF_MS : backoffMs * 2);
    await ctx.clock.sleep(backoffMs / 2 + rng.next() * (backoffMs / 2));
  }
}
