// The hang path of each fault that made a replica unreachable (DESIGN.md, Failure knowledge): how
// long until it was marked down (by the checker, by what the sessions met), the sessions that were
// on it when it went and how long each waited, and the queries and connects it failed.
import { replicaStateAfter } from '../../faults/actions.js';
import { faultActionSpec } from '../../run-format/fault-actions.js';
import type { HangFault, HangPath } from '../../run-format/summary.js';
import { nearestRank, round } from '../math.js';
import { ENDING_CODE, FAILURE_CODE, VIA_CODE, type MetricsStore } from '../store/store.js';
import type { RunEvent, SessionEnding } from '../types.js';
import { falseDownDetections, firstRouterDetect } from './detections.js';

/** What the run recorded of one replica that the hang path reads (times in ms since the start). */
export interface ReplicaRecords {
  /** When each session on it opened. */
  opened: number[];
  closed: { openedMs: number; closedMs: number; ending: SessionEnding }[];
  /** Failures a session's query or a connect met on it (the passive signals). */
  heard: number[];
  /** Failed queries on it; timeout: failed by the client's query timeout. */
  queryErrors: { atMs: number; timeout: boolean }[];
  /** Failed connects to it. */
  connectsFailed: number[];
}

/** A fault that made its replica unreachable, and the span until its replica's state changed again. */
export interface UnreachableSpan {
  replica: string;
  action: string;
  injectedMs: number;
  untilMs: number;
}

/**
 * The faults that made a replica unreachable (a spec with survivors -1: down, stop, pause,
 * partition, reset) and applied, each until the next fault that changed its replica's state
 * (stacked network faults change nothing) or the end of the run.
 */
export function unreachableSpans(events: readonly RunEvent[], endMs: number): UnreachableSpan[] {
  const state = new Map<string, 'up' | 'down'>();
  const changes: { replica: string; action: string; tMs: number; to: 'up' | 'down' }[] = [];
  for (const e of events) {
    if (e.type !== 'fault' || e.replica === undefined || e['error'] !== undefined) continue;
    const to = replicaStateAfter(String(e.action));
    if (to === null || to === (state.get(e.replica) ?? 'up')) continue;
    state.set(e.replica, to);
    changes.push({ replica: e.replica, action: String(e.action), tMs: e.tMs, to });
  }
  return changes.flatMap((c, i) => {
    if (c.to !== 'down' || faultActionSpec(c.action)?.survivors !== -1) return [];
    const next = changes.slice(i + 1).find((d) => d.replica === c.replica);
    return [{ replica: c.replica, action: c.action, injectedMs: c.tMs, untilMs: next?.tMs ?? endMs }];
  });
}

const within = (t: number, s: UnreachableSpan): boolean => t >= s.injectedMs && t < s.untilMs;
const delay = (t: number | undefined, s: UnreachableSpan): number | null =>
  t === undefined ? null : round(t - s.injectedMs, 3);

/** One fault's record from its replica's records and the run's events. */
export function hangFault(s: UnreachableSpan, events: readonly RunEvent[], r: ReplicaRecords): HangFault {
  const downs = events
    .filter(
      (e) => firstRouterDetect(e) && e.replica === s.replica && e['state'] === 'down' && within(e.tMs, s),
    )
    .sort((a, b) => a.tMs - b.tMs);
  const first = downs[0];
  const checker = downs.find((e) => e['via'] === 'health');
  const heard = r.heard.filter((t) => within(t, s)).sort((a, b) => a - b)[0];
  // On it at injection: opened at or before it and not closed by then.
  const on = r.closed.filter((c) => c.openedMs <= s.injectedMs && c.closedMs > s.injectedMs);
  const closedBefore = r.closed.filter((c) => c.openedMs <= s.injectedMs && c.closedMs <= s.injectedMs);
  const openedBefore = r.opened.filter((t) => t <= s.injectedMs).length;
  // Opened before it and never closed (the run ended first): on it for the whole span.
  const neverClosed = Math.max(0, openedBefore - closedBefore.length - on.length);
  const left = on.filter((c) => c.closedMs < s.untilMs);
  const span = s.untilMs - s.injectedMs;
  const waits = [
    ...left.map((c) => c.closedMs - s.injectedMs),
    ...Array<number>(on.length - left.length + neverClosed).fill(span),
  ].sort((a, b) => a - b);
  const count = (ending: SessionEnding): number => left.filter((c) => c.ending === ending).length;
  const errors = r.queryErrors.filter((q) => within(q.atMs, s));
  const shut = events.filter(
    (e) =>
      e.type === 'note' && e['what'] === 'shutdown-sessions' && e.replica === s.replica && within(e.tMs, s),
  );
  const sum = (field: string): number =>
    shut.reduce((n, e) => n + (typeof e[field] === 'number' ? (e[field] as number) : 0), 0);
  return {
    replica: s.replica,
    action: s.action,
    injectedMs: round(s.injectedMs, 3) ?? 0,
    untilMs: round(s.untilMs, 3) ?? 0,
    downMs: delay(first?.tMs, s),
    downVia: first === undefined ? null : String(first['via'] ?? 'unknown'),
    checkerMs: delay(checker?.tMs, s),
    passiveMs: delay(heard, s),
    sessions: waits.length,
    waitP50Ms: round(nearestRank(waits, 50), 3),
    waitMaxMs: round(waits[waits.length - 1] ?? null, 3),
    failed: count('failed'),
    finished: count('finished'),
    cut: count('cut'),
    open: waits.length - left.length,
    shutdown: sum('sessions'),
    connectsShut: sum('connects'),
    queryErrors: errors.length,
    queryTimeouts: errors.filter((q) => q.timeout).length,
    connectsFailed: r.connectsFailed.filter((t) => within(t, s)).length,
  };
}

const NO_RECORDS: ReplicaRecords = { opened: [], closed: [], heard: [], queryErrors: [], connectsFailed: [] };

/**
 * The hang path of a run: one record per unreachable span, and the down detections no fault
 * explains. `records` gives what the run recorded of a replica (only those cut off are asked).
 */
export function hangPath(
  events: readonly RunEvent[],
  endMs: number,
  records: (replicas: ReadonlySet<string>) => ReadonlyMap<string, ReplicaRecords>,
): HangPath {
  const spans = unreachableSpans(events, endMs);
  const of = records(new Set(spans.map((s) => s.replica)));
  return {
    faults: spans.map((s) => hangFault(s, events, of.get(s.replica) ?? NO_RECORDS)),
    falseDowns: falseDownDetections(events).length,
  };
}

const ENDINGS = Object.fromEntries(Object.entries(ENDING_CODE).map(([k, v]) => [v, k])) as Record<
  number,
  SessionEnding
>;

/** What the store's columns hold of the replicas asked for, one pass over each column. */
export function storeRecords(store: MetricsStore, ids: ReadonlySet<string>): Map<string, ReplicaRecords> {
  const out = new Map<string, ReplicaRecords>();
  const byIndex = new Map<number, ReplicaRecords>();
  for (const id of ids) {
    const r: ReplicaRecords = { opened: [], closed: [], heard: [], queryErrors: [], connectsFailed: [] };
    out.set(id, r);
    byIndex.set(store.replicaIndex(id), r);
  }
  if (byIndex.size === 0) return out;
  for (const log of Object.values(store.logs)) {
    for (let i = 0; i < log.openAt.length; i++)
      byIndex.get(log.openReplica.get(i))?.opened.push(log.openAt.get(i));
    for (let i = 0; i < log.closeAt.length; i++) {
      const closedMs = log.closeAt.get(i);
      byIndex.get(log.closeReplica.get(i))?.closed.push({
        openedMs: closedMs - log.closeLifetimeMs.get(i),
        closedMs,
        ending: ENDINGS[log.closeEnding.get(i)] ?? 'failed',
      });
    }
    for (let i = 0; i < log.errorEnd.length; i++)
      byIndex.get(log.errorReplica.get(i))?.queryErrors.push({
        atMs: log.errorEnd.get(i),
        timeout: log.errorCause.get(i) === FAILURE_CODE.slow,
      });
  }
  const fl = store.failureLog;
  for (let i = 0; i < fl.at.length; i++) {
    const r = byIndex.get(fl.replica.get(i));
    const via = fl.via.get(i);
    if (r === undefined || via === VIA_CODE.health) continue;
    r.heard.push(fl.at.get(i));
    if (via === VIA_CODE.connect) r.connectsFailed.push(fl.at.get(i));
  }
  return out;
}
