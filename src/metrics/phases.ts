import { phaseNameFor, REF_PHASE, survivorDelta } from '../faults/actions.js';
import type { FaultAction } from '../faults/types.js';
import type { Phase } from './types.js';

/** A fault as injected (from a 'fault' event): when, which replica, what. */
export interface FaultMark {
  tMs: number;
  replica: string;
  action: string;
}

/**
 * Events closer than this to the first event of a group form one phase boundary (the injector
 * stamps events of one plan time a few ms apart at most if it stamps them one by one).
 */
export const SAME_TIME_MS = 1;

/** The one phase of a run without faults. */
export const STEADY_PHASE = 'steady';

interface Boundary {
  tMs: number;
  name: string;
  survivors: number;
  down: string[];
}

/** Groups simultaneous faults and walks them: the name, K+ and down list after each boundary. */
export function faultBoundaries(faults: readonly FaultMark[], replicas: readonly string[]): Boundary[] {
  // Stable sort: events at one time keep the order they were injected in.
  const sorted = faults.map((f, i) => ({ f, i })).sort((a, b) => a.f.tMs - b.f.tMs || a.i - b.i);
  const counts = new Map<string, number>();
  const down = new Set<string>();
  const out: Boundary[] = [];
  let groupStart = Number.NEGATIVE_INFINITY;
  for (const { f } of sorted) {
    const count = (counts.get(f.action) ?? 0) + 1;
    counts.set(f.action, count);
    const delta = survivorDelta(f.action as FaultAction);
    if (delta < 0) down.add(f.replica);
    else if (delta > 0) down.delete(f.replica);
    const downList = replicas.filter((r) => down.has(r));
    const b: Boundary = {
      tMs: f.tMs,
      // Same naming as the plan-time phases (src/faults/plan.ts).
      name: phaseNameFor(f.action as FaultAction, count),
      survivors: replicas.length - downList.length,
      down: downList,
    };
    const last = out[out.length - 1];
    if (last !== undefined && f.tMs - groupStart <= SAME_TIME_MS) {
      // Same boundary: named after the last event at that time, starts at the first one.
      out[out.length - 1] = { ...b, tMs: last.tMs };
    } else {
      groupStart = f.tMs;
      out.push(b);
    }
  }
  return out;
}

export interface PhaseInput {
  faults: readonly FaultMark[];
  endMs: number;
  refWindowMs: number;
  warmupMs: number;
  replicas: readonly string[];
}

/**
 * DESIGN.md "Phases". No faults: one `steady` phase from the end of warm-up to the end.
 * Otherwise `ref` = [first fault - refWindow, first fault) and one phase per interval between
 * boundaries. Every phase is clipped to [warmup end, end]; a phase left empty is dropped (so a
 * fault before the end of warm-up leaves no `ref`).
 */
export function computePhases(input: PhaseInput): Phase[] {
  const { endMs, refWindowMs, warmupMs, replicas } = input;
  const k = replicas.length;
  const phases: Phase[] = [];
  const push = (p: Phase): void => {
    const startMs = Math.max(p.startMs, warmupMs);
    const end = Math.min(p.endMs, endMs);
    if (end > startMs) phases.push({ ...p, startMs, endMs: end });
  };
  const boundaries = faultBoundaries(input.faults, replicas);
  const first = boundaries[0];
  if (first === undefined) {
    push({ name: STEADY_PHASE, startMs: warmupMs, endMs, survivors: k, down: [] });
    return phases;
  }
  push({ name: REF_PHASE, startMs: first.tMs - refWindowMs, endMs: first.tMs, survivors: k, down: [] });
  boundaries.forEach((b, i) => {
    const next = boundaries[i + 1];
    push({ name: b.name, startMs: b.tMs, endMs: next?.tMs ?? endMs, survivors: b.survivors, down: b.down });
  });
  return phases;
}

/**
 * The phase name while the run goes (progress line, timeline.csv): the latest boundary at or
 * before tMs; before any fault 'warmup' during warm-up, then 'steady' (`ref` is only known once
 * the first fault happened, so it is never shown live).
 */
export function livePhaseName(faults: readonly FaultMark[], tMs: number, warmupMs: number): string {
  const boundaries = faultBoundaries(
    faults.filter((f) => f.tMs <= tMs),
    [],
  );
  const last = boundaries[boundaries.length - 1];
  if (last !== undefined) return last.name;
  return tMs < warmupMs ? 'warmup' : STEADY_PHASE;
}

/** Index of the phase containing tMs (start inclusive, end exclusive), -1 when none. */
export function phaseIndexAt(phases: readonly Phase[], tMs: number): number {
  let lo = 0;
  let hi = phases.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const p = phases[mid];
    if (p === undefined) return -1;
    if (tMs < p.startMs) hi = mid - 1;
    else if (tMs >= p.endMs) lo = mid + 1;
    else return mid;
  }
  return -1;
}
