/**
 * The one mapping fault action -> replica state -> phase (DESIGN.md, Phases), read from the
 * registry (run-format/fault-actions.ts): what each action does to its replica, to K+, and which
 * phase it opens. The plan checker, the dry run, the injector's oracle mode, the detection records
 * and the run's phases all read it from here.
 */
import {
  FAULT_ACTION_SPECS,
  faultActionSpec,
  type FaultAction,
  type PhaseKind,
  type PlanReplicaState,
} from '../run-format/fault-actions.js';

/** Name of the reference phase, the window just before the first fault. */
export const REF_PHASE = 'ref';

/** The one phase of a run without faults. */
const STEADY_PHASE = 'steady';

/** The replica state after `action` (throttle leaves it as it was). */
export function stateAfter(action: FaultAction, state: PlanReplicaState): PlanReplicaState {
  const { after } = FAULT_ACTION_SPECS[action];
  return after === 'unchanged' ? state : after;
}

/** What the replica must be for `action` to make sense, or undefined when `state` is fine. */
export function actionRequirement(action: FaultAction, state: PlanReplicaState): string | undefined {
  const { from } = FAULT_ACTION_SPECS[action];
  return from.states.includes(state) ? undefined : from.need;
}

/**
 * How an event changes K+ (the number of healthy replicas): down/stop/pause -1, rejoin/unpause +1;
 * throttle and pause-replay/resume-replay 0 (a slow or lagging replica is still healthy).
 */
export function survivorDelta(action: FaultAction): -1 | 0 | 1 {
  return FAULT_ACTION_SPECS[action].survivors;
}

/** K+ after an event, given K+ before it. */
export function survivorsAfterEvent(survivors: number, action: FaultAction): number {
  return survivors + survivorDelta(action);
}

/**
 * Whether the replica is down or up after this action: what a health checker should notice.
 * null for throttle (it stays as it was) and for a string that is no action (an event read back).
 */
export function replicaStateAfter(action: string): 'down' | 'up' | null {
  const d = faultActionSpec(action)?.survivors ?? 0;
  return d < 0 ? 'down' : d > 0 ? 'up' : null;
}

/**
 * What the phases an event opens are named and counted by: the spec's phase name (a partition is a
 * `down`; a heal that brings a cut replica back a `rejoin`), else the action itself.
 */
export function phaseBase(action: string, bringsBack: boolean): string {
  const names = faultActionSpec(action)?.phaseName;
  if (names === undefined) return action;
  return bringsBack && names.back !== undefined ? names.back : names.opens;
}

/** Phase name after the `count`-th event of its base name (1-based): `down-1`, `rejoin-2`, ... */
export function phaseNameFor(base: string, count: number): string {
  return `${base}-${count}`;
}

/** A span of the run, named after the event that opened it, with its K+. */
export interface Phase {
  name: string;
  startMs: number;
  endMs: number;
  /** Healthy replicas during the phase (K+). */
  survivors: number;
  /** Replicas down during the phase. */
  down: string[];
  /**
   * ref, steady, or the kind the spec of the action that opened it names. Absent where only
   * names are known (a summary.json read back, the fault interval, an action plb does not know).
   */
  kind?: PhaseKind;
}

/** A fault as injected (from a 'fault' event) or planned: when, which replica, what. */
export interface FaultMark {
  tMs: number;
  replica: string;
  action: string;
}

/**
 * Events closer than this to the first event of a group form one phase boundary (the injector
 * stamps events of one plan time a few ms apart at most if it stamps them one by one).
 */
const SAME_TIME_MS = 1;

interface Boundary {
  tMs: number;
  name: string;
  /** The kind of phase its naming action opens (undefined: an action plb does not know). */
  kind: PhaseKind | undefined;
  survivors: number;
  down: string[];
}

/** Groups simultaneous faults and walks them: the name, K+ and down list after each boundary. */
function faultBoundaries(faults: readonly FaultMark[], replicas: readonly string[]): Boundary[] {
  // Stable sort: events at one time keep the order they were injected in.
  const sorted = faults.map((f, i) => ({ f, i })).sort((a, b) => a.f.tMs - b.f.tMs || a.i - b.i);
  const counts = new Map<string, number>();
  const down = new Set<string>();
  const out: Boundary[] = [];
  let groupStart = Number.NEGATIVE_INFINITY;
  for (const { f } of sorted) {
    const state = replicaStateAfter(f.action);
    const base = phaseBase(f.action, state === 'up' && down.has(f.replica));
    const count = (counts.get(base) ?? 0) + 1;
    counts.set(base, count);
    if (state === 'down') down.add(f.replica);
    else if (state === 'up') down.delete(f.replica);
    const downList = replicas.filter((r) => down.has(r));
    const b: Boundary = {
      tMs: f.tMs,
      name: phaseNameFor(base, count),
      kind: faultActionSpec(f.action)?.phase,
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
 * DESIGN.md "Phases", for a plan (faults on time) and a run (faults as injected) alike. No faults:
 * one `steady` phase from the end of warm-up to the end. Otherwise `ref` = [first fault -
 * refWindow, first fault) and one phase per interval between boundaries. Every phase is clipped
 * to [warmup end, end]; a phase left empty is dropped (so a fault before the end of warm-up leaves
 * no `ref`).
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
    push({ name: STEADY_PHASE, startMs: warmupMs, endMs, survivors: k, down: [], kind: 'steady' });
    return phases;
  }
  push({
    name: REF_PHASE,
    startMs: first.tMs - refWindowMs,
    endMs: first.tMs,
    survivors: k,
    down: [],
    kind: 'ref',
  });
  boundaries.forEach((b, i) => {
    const next = boundaries[i + 1];
    const p: Phase = {
      name: b.name,
      startMs: b.tMs,
      endMs: next?.tMs ?? endMs,
      survivors: b.survivors,
      down: b.down,
    };
    if (b.kind !== undefined) p.kind = b.kind;
    push(p);
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
