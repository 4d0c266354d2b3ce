// Per phase, each replica's share of the sessions opened next to its weight's share: a slow replica
// (delay, loss, a throttle) should lose new sessions under the load-aware strategies, and never be
// taken for a dead one (its false down detections are counted beside).
import { faultActionSpec } from '../../run-format/fault-actions.js';
import type { PhaseSummary, SessionShare } from '../../run-format/summary.js';
import { round } from '../math.js';
import type { RunEvent } from '../types.js';
import { falseDownDetections } from './detections.js';

/** A fault time and a phase start (rounded to the ms) are one boundary within this. */
const SAME_BOUNDARY_MS = 1;

/** A throttle to at least the quota the replica began the run with (the bench records it). */
function restoresQuota(e: RunEvent): boolean {
  const { cpus, runCpus } = e;
  return typeof cpus === 'number' && typeof runCpus === 'number' && cpus >= runCpus;
}

/**
 * The faults that keep K+ (a spec whose phase is degraded: delay, loss, bandwidth, a replication
 * cut, throttle, pause-replay) in force at tMs, by replica: a heal ends the network ones (the kind
 * its `what` names, or every one), resume-replay a pause-replay, a throttle back to the run's quota
 * a throttle (another throttle replaces it).
 */
export function degradedAt(events: readonly RunEvent[], tMs: number): { replica: string; action: string }[] {
  const on = new Map<string, string[]>();
  for (const e of events) {
    if (e.type !== 'fault' || e.replica === undefined || e['error'] !== undefined) continue;
    if (e.tMs > tMs + SAME_BOUNDARY_MS) continue;
    const action = String(e.action);
    const spec = faultActionSpec(action);
    const now = on.get(e.replica) ?? [];
    let next = now;
    if (action === 'throttle' && restoresQuota(e)) next = now.filter((a) => a !== action);
    else if (spec?.phase === 'degraded') next = [...now.filter((a) => a !== action), action];
    else if (action === 'heal') {
      const what = typeof e['what'] === 'string' ? e['what'] : undefined;
      next = now.filter((a) =>
        what === undefined
          ? !(faultActionSpec(a)?.network ?? false)
          : a !== what && !(what === 'partition' && a === 'partition-replication'),
      );
    } else if (action === 'resume-replay') next = now.filter((a) => a !== 'pause-replay');
    on.set(e.replica, next);
  }
  return [...on.entries()].flatMap(([replica, actions]) => actions.map((action) => ({ replica, action })));
}

/** Per phase: every replica's share of the new sessions, its weight's share over those up, false downs. */
export function sessionShares(phases: readonly PhaseSummary[], events: readonly RunEvent[]): SessionShare[] {
  const falseDowns = falseDownDetections(events);
  return phases.map((p) => {
    const startMs = p.startS * 1000;
    const endMs = p.endS * 1000;
    const reps = Object.entries(p.replicas);
    const sessions = reps.reduce((n, [, r]) => n + r.sessionsOpened, 0);
    const weightOf = (r: (typeof reps)[number][1]): number => Math.max(0, r.weight ?? 1);
    const weights = reps.reduce((n, [, r]) => n + (r.up ? weightOf(r) : 0), 0);
    const replicas: SessionShare['replicas'] = {};
    for (const [id, r] of reps) {
      replicas[id] = {
        share: sessions > 0 ? round(r.sessionsOpened / sessions, 4) : null,
        weightShare: r.up && weights > 0 ? round(weightOf(r) / weights, 4) : null,
        falseDowns: falseDowns.filter((d) => d.replica === id && d.tMs >= startMs && d.tMs < endMs).length,
      };
    }
    return { phase: p.name, sessions, degraded: degradedAt(events, startMs), replicas };
  });
}
