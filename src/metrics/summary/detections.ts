// What a run's events say about its faults: when the router noticed each one, detections no fault
// explains, and faults the injector could not apply (their phases are marked invalid).
import { replicaStateAfter } from '../../faults/actions.js';
import { round } from '../math.js';
import type { RunEvent } from '../types.js';
import type { DetectionCounts, DetectionRecord, PhaseSummary } from '../../run-format/summary.js';

/**
 * A detection of the first router (the run's only one, or instance 0 of --routers N): the tables
 * speak of one router's detection; the others' carry `router` and count in summary.routers.
 */
export function firstRouterDetect(e: RunEvent): boolean {
  return e.type === 'detect' && e['router'] === undefined;
}

/**
 * One record per fault that the router should notice (throttle is not one): the first 'detect'
 * of the expected state for that replica at or after the fault and before the next such fault on
 * the same replica (so a missed detection is not credited with a later one).
 */
export function detectionRecords(events: readonly RunEvent[]): DetectionRecord[] {
  // Network faults stack: a cut-off replica cut again, or a heal of a loss alone, changes nothing
  // the router could notice, so only a change of the replica's state is one.
  const state = new Map<unknown, 'up' | 'down'>();
  const faults = events.filter((e) => {
    const after = e.type === 'fault' && e.replica !== undefined ? replicaStateAfter(String(e.action)) : null;
    if (after === null) return false;
    const before = state.get(e.replica) ?? 'up';
    state.set(e.replica, after);
    return after !== before;
  });
  const detects = events.filter((e) => firstRouterDetect(e) && e.replica !== undefined);
  return faults.map((f, i) => {
    const expected = replicaStateAfter(String(f.action));
    const next = faults.slice(i + 1).find((g) => g.replica === f.replica);
    const until = next?.tMs ?? Number.POSITIVE_INFINITY;
    const hit = detects
      .filter((d) => d.replica === f.replica && d['state'] === expected && d.tMs >= f.tMs && d.tMs < until)
      .sort((a, b) => a.tMs - b.tMs)[0];
    return {
      replica: f.replica as string,
      action: String(f.action),
      injectedMs: f.tMs,
      detectedMs: hit?.tMs ?? null,
      delayMs: hit ? hit.tMs - f.tMs : null,
    };
  });
}

/**
 * Counts every 'detect' event, and those that no injected fault explains: each fault the router
 * should notice explains one detection (the one detectionRecords credits it with); every other
 * detection is false (an overload taken for a death, a flap, the up that ends a false down).
 */
export function detectionCounts(events: readonly RunEvent[]): DetectionCounts {
  const detects = events.filter(firstRouterDetect);
  const down = detects.filter((e) => e['state'] === 'down').length;
  const up = detects.filter((e) => e['state'] === 'up').length;
  const explained = detectionRecords(events).filter((r) => r.detectedMs !== null).length;
  return { down, up, unexplained: down + up - explained };
}

/**
 * The 'down' detections no fault explains (detectionRecords credits each fault with one): a slow
 * or overloaded replica taken for a dead one, or a flap.
 */
export function falseDownDetections(events: readonly RunEvent[]): { replica: string; tMs: number }[] {
  const credited = new Set(
    detectionRecords(events)
      .filter((r) => r.detectedMs !== null && replicaStateAfter(r.action) === 'down')
      .map((r) => `${r.replica}@${r.detectedMs}`),
  );
  return events
    .filter((e) => firstRouterDetect(e) && e.replica !== undefined && e['state'] === 'down')
    .filter((e) => !credited.has(`${e.replica}@${e.tMs}`))
    .map((e) => ({ replica: e.replica as string, tMs: e.tMs }));
}

/**
 * One line per fault the injector could not apply: a 'fault' event carrying an error (the action
 * threw), or a 'fault-not-taken' note (it returned, but the status showed it did not take).
 */
function failedFaults(events: readonly RunEvent[]): { event: RunEvent; reason: string }[] {
  return events
    .filter(
      (e) =>
        (e.type === 'fault' && e['error'] !== undefined) ||
        (e.type === 'note' && e['what'] === 'fault-not-taken'),
    )
    .map((e) => ({
      event: e,
      reason: `${String(e.action)} ${String(e.replica)} at ${round(e.tMs / 1000, 3)} s failed: ${String(e['error'])}`,
    }));
}

/**
 * A fault that failed leaves its replica in an unknown state from its boundary until the next
 * fault on that replica: every phase overlapping that span is not the measurement it is named
 * after, and gets `invalid` (the reason). Returns the reasons (they make the run incomplete).
 */
export function markInvalidPhases(phases: PhaseSummary[], events: readonly RunEvent[]): string[] {
  const failed = failedFaults(events);
  const faults = events.filter((e) => e.type === 'fault');
  for (const { event: f, reason } of failed) {
    // Rounded as the phase bounds are (ms), or a fault at 1.0036 s would overlap a ref ending at 1.004.
    const fromS = round(f.tMs / 1000, 3) ?? 0;
    const next = faults.find((g) => g.replica === f.replica && g.tMs > f.tMs);
    const untilS = next === undefined ? Number.POSITIVE_INFINITY : (round(next.tMs / 1000, 3) ?? 0);
    for (const p of phases) {
      if (p.startS < untilS && p.endS > fromS) p.invalid = p.invalid ? `${p.invalid}; ${reason}` : reason;
    }
  }
  return failed.map((f) => f.reason);
}
