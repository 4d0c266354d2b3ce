// The paper's fault interval (first replica down to last rejoin) as one more phase of the summary.
import { REF_PHASE } from '../../faults/actions.js';
import type { Phase } from '../types.js';
import type { PhaseSummary } from '../../run-format/summary.js';

/** Name of the summary's fault-interval entry (never a phase name: phases are ref, steady, <action>-<n>). */
export const FAULT_INTERVAL = 'fault';

/**
 * The paper's fault interval: from the first phase with a replica down until every replica is up
 * again (the last rejoin) or the end of the run. Down = every replica down at some point in it,
 * survivors = the fewest replicas up. Undefined without a down phase.
 */
export function faultIntervalOf(phases: readonly Phase[]): Phase | undefined {
  const first = phases.findIndex((p) => p.down.length > 0);
  if (first < 0) return undefined;
  let last = first;
  while ((phases[last + 1]?.down.length ?? 0) > 0) last++;
  const span = phases.slice(first, last + 1);
  return {
    name: FAULT_INTERVAL,
    startMs: span[0]?.startMs ?? 0,
    endMs: span[span.length - 1]?.endMs ?? 0,
    survivors: Math.min(...span.map((p) => p.survivors)),
    down: [...new Set(span.flatMap((p) => p.down))],
  };
}

/** [ref, fault interval] (or just the interval without ref) for a second pass; undefined without a fault. */
export function faultIntervalPhases(phases: readonly Phase[]): Phase[] | undefined {
  const fault = faultIntervalOf(phases);
  if (!fault) return undefined;
  const ref = phases.find((p) => p.name === REF_PHASE);
  return ref ? [ref, fault] : [fault];
}

/** The phases a summary describes, back as phases (down = the replicas not up in it). */
export function phasesOfSummary(phases: readonly PhaseSummary[]): Phase[] {
  return phases.map((p) => ({
    name: p.name,
    startMs: Math.round(p.startS * 1000),
    endMs: Math.round(p.endS * 1000),
    survivors: p.survivors,
    down: Object.entries(p.replicas)
      .filter(([, r]) => !r.up)
      .map(([id]) => id),
  }));
}
