// The four balance signals of the replica-load-balancing guide (its "Monitoring and Alerting
// Signals"): query-share spread, CPU-share spread, a silent replica, realised vs configured weight.
// Pure: per phase from the summary's replica stats, per second from timeline rows.
import type { PhaseSignals, SignalName } from '../run-format/summary.js';

/** The thresholds a signal alerts over. */
export interface SignalThresholds {
  /** max/mean of queries per replica up; the guide: "above ~1.4 sustained". */
  queryShareSpread: number;
  /** max/mean of CPU per replica up; the guide: 1.5 ("the one that actually predicts saturation"). */
  cpuShareSpread: number;
  /**
   * A replica up with no new session for this long is silent. The guide alerts on a query rate
   * under 1/s over 10 minutes; a bench phase lasts seconds to minutes, so plb's default is 10 s.
   */
  silentWindowS: number;
  /**
   * Realised share of new sessions / configured weight share, worst |ratio - 1| over the replicas
   * up. The guide gives no number; plb's default is 0.5 (a replica at half or 1.5x its weight).
   */
  weightDeviation: number;
}

export const DEFAULT_SIGNAL_THRESHOLDS: Readonly<SignalThresholds> = Object.freeze({
  queryShareSpread: 1.4,
  cpuShareSpread: 1.5,
  silentWindowS: 10,
  weightDeviation: 0.5,
});

/** One replica over a phase (or a second), as the signals need it. */
export interface SignalInput {
  id: string;
  /** Up (as the plan has it) for the whole span: only replicas up count. */
  up: boolean;
  queries: number;
  sessionsOpened: number;
  cpu: number | null;
  /** Configured weight (router snapshot `weight`; 1 when unknown). */
  weight: number;
  /** Longest stretch without a new session while up, s (undefined: use sessionsOpened over the span). */
  longestQuietS?: number;
}

/** max/mean; null for no values or a zero mean (nothing to spread). */
export function shareSpread(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  let sum = 0;
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) {
    sum += v;
    if (v > max) max = v;
  }
  const mean = sum / values.length;
  return mean > 0 ? max / mean : null;
}

const r4 = (x: number | null): number | null => (x === null ? null : Math.round(x * 10_000) / 10_000);

/**
 * The four signals over one span of `durationS` seconds. Without `longestQuietS` a replica is
 * silent when it opened no session in a span at least silentWindowS long.
 */
export function computeSignals(
  replicas: readonly SignalInput[],
  durationS: number,
  t: SignalThresholds = DEFAULT_SIGNAL_THRESHOLDS,
): PhaseSignals {
  const up = replicas.filter((r) => r.up);
  const queryShareSpread = r4(shareSpread(up.map((r) => r.queries)));
  const cpus = up.map((r) => r.cpu).filter((c): c is number => c !== null && Number.isFinite(c));
  const cpuShareSpread = r4(shareSpread(cpus));
  const silent = up
    .filter((r) =>
      r.longestQuietS !== undefined
        ? r.longestQuietS >= t.silentWindowS
        : r.sessionsOpened === 0 && durationS >= t.silentWindowS,
    )
    .map((r) => r.id);
  const sessions = up.reduce((s, r) => s + r.sessionsOpened, 0);
  const weights = up.reduce((s, r) => s + (r.weight > 0 ? r.weight : 0), 0);
  const weightRatio: Record<string, number | null> = {};
  let weightDeviation: number | null = null;
  for (const r of up) {
    const ratio =
      sessions > 0 && weights > 0 && r.weight > 0 ? r.sessionsOpened / sessions / (r.weight / weights) : null;
    weightRatio[r.id] = r4(ratio);
    if (ratio !== null) weightDeviation = Math.max(weightDeviation ?? 0, Math.abs(ratio - 1));
  }
  weightDeviation = r4(weightDeviation);
  const alerts: SignalName[] = [];
  if (queryShareSpread !== null && queryShareSpread > t.queryShareSpread) alerts.push('queryShareSpread');
  if (cpuShareSpread !== null && cpuShareSpread > t.cpuShareSpread) alerts.push('cpuShareSpread');
  if (silent.length > 0) alerts.push('silent');
  if (weightDeviation !== null && weightDeviation > t.weightDeviation) alerts.push('weightDeviation');
  return { queryShareSpread, cpuShareSpread, silent, weightRatio, weightDeviation, alerts };
}

/**
 * Longest stretch in [startMs, endMs) without an event, ms, from the event times in that span
 * (any order): the gaps from the start to the first, between events, and from the last to the end.
 */
export function longestGapMs(times: readonly number[], startMs: number, endMs: number): number {
  const xs = [...times].sort((a, b) => a - b);
  let prev = startMs;
  let gap = 0;
  for (const x of xs) {
    gap = Math.max(gap, x - prev);
    prev = Math.max(prev, x);
  }
  return Math.max(gap, endMs - prev);
}
