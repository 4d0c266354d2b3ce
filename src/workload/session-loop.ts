import { isPlbError } from '../errors.js';
import type { ServiceClass } from '../router/types.js';
import type { Recorder } from '../metrics/types.js';
import { asError, type DataSource } from './data-source.js';
import { makeQuery } from './queries.js';
import type { Rng } from './rng.js';
import type { WorkloadSpec } from './spec.js';

export interface SessionContext {
  ds: DataSource;
  recorder: Recorder;
  spec: WorkloadSpec;
  now: () => number;
  /** True once the run should wind down: sessions stop after their current query. */
  stopping: () => boolean;
}

export type SessionOutcome = 'finished' | 'failed' | 'no-replica' | 'connect-failed' | 'stopped';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * One session: admission (the router picks the replica), then its queries with think time, then
 * close. A query error ends the session as failed (the in-flight query is an error, not goodput).
 * Open model (`scheduledMs` given): the first query's latency counts from the session's scheduled
 * start, so a late schedule or a slow connect is not hidden (coordinated omission).
 */
export async function runSession(
  ctx: SessionContext,
  cls: ServiceClass,
  rng: Rng,
  scheduledMs?: number,
): Promise<SessionOutcome> {
  const { recorder, spec, now } = ctx;
  let conn;
  try {
    conn = await ctx.ds.getConnection({ class: cls });
  } catch (err) {
    const reason = isPlbError(err) ? err.code : asError(err).message;
    recorder.admissionFailed(cls, now(), reason);
    return isPlbError(err, 'NO_REPLICA') ? 'no-replica' : 'connect-failed';
  }
  const opened = conn.openedMs;
  recorder.sessionOpened(cls, conn.replica, opened);
  const w = spec.classes[cls];
  const n = Math.max(
    1,
    rng.int(Math.ceil(w.queriesPerSession / 2), Math.floor((w.queriesPerSession * 3) / 2)),
  );
  let outcome: SessionOutcome = 'finished';
  for (let i = 0; i < n; i++) {
    if (ctx.stopping()) {
      outcome = 'stopped';
      break;
    }
    if (i > 0 && w.thinkTimeMs > 0) await sleep(rng.exp(w.thinkTimeMs));
    const q = makeQuery(rng.weighted(w.queryWeights), spec.datasetRows, rng);
    const start = i === 0 && scheduledMs !== undefined ? scheduledMs : now();
    try {
      await conn.query(q.text, q.values);
      const end = now();
      recorder.queryDone(cls, conn.replica, end, end - start);
    } catch (err) {
      recorder.queryFailed(cls, conn.replica, now(), asError(err).message);
      outcome = 'failed';
      break;
    }
  }
  const failed = outcome === 'failed' || conn.isBroken;
  await conn.close();
  recorder.sessionClosed(cls, conn.replica, opened, now(), failed);
  return failed ? 'failed' : outcome;
}

/** Closed model: one client runs sessions back to back until the run stops. */
export async function runClient(
  ctx: SessionContext,
  cls: ServiceClass,
  rng: Rng,
  joinAtMs: number,
): Promise<void> {
  const wait = joinAtMs - ctx.now();
  if (wait > 0) await sleep(wait);
  while (!ctx.stopping()) {
    const outcome = await runSession(ctx, cls, rng);
    // Back off briefly after a failure so a dead replica is not hammered in a tight loop.
    if (outcome === 'no-replica') await sleep(250);
    else if (outcome === 'connect-failed' || outcome === 'failed') await sleep(50);
  }
}
