import type { Histogram } from 'hdr-histogram-js';
import { SERVICE_CLASSES, type ServiceClass } from '../core/service-class.js';
import { newLatencyHistogram } from './histogram.js';
import {
  percentileMs,
  coefficientOfVariation,
  goodputRetention,
  mean,
  nearestRank,
  p95Inflation,
  percentilesMs,
  perSecond,
  round,
} from './math.js';
import { REF_PHASE, replicaStateAfter } from '../faults/actions.js';
import { phaseIndexAt } from './phases.js';
import { lagPhaseStats } from './lag.js';
import { computeSignals, longestGapMs } from './signals.js';
import { COUNTED_CAUSES, ENDING_CODE, UNKNOWN_REPLICA, type ClassLog, type MetricsStore } from './store.js';
import { HARNESS_LOOP_P99_LIMIT_MS, type Phase, type RunEvent } from './types.js';
import {
  type ClassPhaseStats,
  type DetectionCounts,
  type DetectionRecord,
  type HarnessPhaseStats,
  type PhaseSummary,
  type ReplicaPhaseStats,
} from '../run-format/summary.js';

export interface PhaseHistogram {
  cls: ServiceClass;
  phase: Phase;
  hist: Histogram;
}

/** Counts entries of a time column per phase. */
function countByPhase(phases: readonly Phase[], n: number, at: (i: number) => number): number[] {
  const out = phases.map(() => 0);
  for (let i = 0; i < n; i++) {
    const p = phaseIndexAt(phases, at(i));
    if (p >= 0) out[p] = (out[p] ?? 0) + 1;
  }
  return out;
}

function classStats(log: ClassLog, phases: readonly Phase[], hists: Histogram[]): ClassPhaseStats[] {
  const queries = phases.map(() => 0);
  for (let i = 0; i < log.queryEnd.length; i++) {
    const p = phaseIndexAt(phases, log.queryEnd.get(i));
    if (p < 0) continue;
    queries[p] = (queries[p] ?? 0) + 1;
    hists[p]?.recordValue(log.queryLatUs.get(i));
  }
  const errors = countByPhase(phases, log.errorEnd.length, (i) => log.errorEnd.get(i));
  const opened = countByPhase(phases, log.openAt.length, (i) => log.openAt.get(i));
  const admission = countByPhase(phases, log.admissionAt.length, (i) => log.admissionAt.get(i));
  const closed = phases.map(() => 0);
  const failed = phases.map(() => 0);
  const cut = phases.map(() => 0);
  const lifetimes: number[][] = phases.map(() => []);
  for (let i = 0; i < log.closeAt.length; i++) {
    const p = phaseIndexAt(phases, log.closeAt.get(i));
    if (p < 0) continue;
    closed[p] = (closed[p] ?? 0) + 1;
    const ending = log.closeEnding.get(i);
    if (ending === ENDING_CODE.failed) failed[p] = (failed[p] ?? 0) + 1;
    else if (ending === ENDING_CODE.cut) cut[p] = (cut[p] ?? 0) + 1;
    // Lifetime is the backlog signal of sessions that did their work: failed and cut are apart.
    else lifetimes[p]?.push(log.closeLifetimeMs.get(i));
  }
  const connects = phases.map(() => newLatencyHistogram());
  for (let i = 0; i < log.openAt.length; i++) {
    const p = phaseIndexAt(phases, log.openAt.get(i));
    if (p >= 0) connects[p]?.recordValue(log.openConnectUs.get(i));
  }
  return phases.map((ph, p) => {
    const h = hists[p] ?? newLatencyHistogram();
    const pct = percentilesMs(h);
    const conn = connects[p] ?? newLatencyHistogram();
    const life = (lifetimes[p] ?? []).sort((a, b) => a - b);
    return {
      p50: round(pct.p50, 3),
      p95: round(pct.p95, 3),
      p99: round(pct.p99, 3),
      queries: queries[p] ?? 0,
      errors: errors[p] ?? 0,
      goodput: round(perSecond(queries[p] ?? 0, ph.endMs - ph.startMs), 3) ?? 0,
      goodputRetention: null,
      p95Inflation: null,
      sessionsOpened: opened[p] ?? 0,
      sessionsClosed: closed[p] ?? 0,
      sessionsFailed: failed[p] ?? 0,
      sessionsCut: cut[p] ?? 0,
      admissionFailures: admission[p] ?? 0,
      lifetimeP50Ms: round(nearestRank(life, 50), 3),
      lifetimeP95Ms: round(nearestRank(life, 95), 3),
      connectP50Ms: conn.totalCount > 0 ? round(percentileMs(conn, 50), 3) : null,
      connectP95Ms: conn.totalCount > 0 ? round(percentileMs(conn, 95), 3) : null,
    };
  });
}

function replicaStats(store: MetricsStore, phases: readonly Phase[]): Record<string, ReplicaPhaseStats>[] {
  const k = store.replicas.length;
  const zeros = (): number[][] => phases.map(() => new Array<number>(k).fill(0));
  const sessions = zeros();
  const queries = zeros();
  const cpuSum = zeros();
  const cpuN = zeros();
  const failures = COUNTED_CAUSES.map(() => zeros());
  const fl = store.failureLog;
  for (let i = 0; i < fl.at.length; i++) {
    const row = failures[fl.cause.get(i)]?.[phaseIndexAt(phases, fl.at.get(i))];
    const r = fl.replica.get(i);
    if (row && r !== UNKNOWN_REPLICA) row[r] = (row[r] ?? 0) + 1;
  }
  const quiet = replicaQuietS(store, phases);
  const latency = replicaLatency(store, phases);
  for (const cls of SERVICE_CLASSES) {
    const log = store.logs[cls];
    for (let i = 0; i < log.openAt.length; i++) {
      const p = phaseIndexAt(phases, log.openAt.get(i));
      const r = log.openReplica.get(i);
      const row = sessions[p];
      if (row && r !== UNKNOWN_REPLICA) row[r] = (row[r] ?? 0) + 1;
    }
    for (let i = 0; i < log.queryEnd.length; i++) {
      const p = phaseIndexAt(phases, log.queryEnd.get(i));
      const r = log.queryReplica.get(i);
      const row = queries[p];
      if (row && r !== UNKNOWN_REPLICA) row[r] = (row[r] ?? 0) + 1;
    }
  }
  const { at, values } = store.cpuLog;
  for (let i = 0; i < at.length; i++) {
    const p = phaseIndexAt(phases, at.get(i));
    const sumRow = cpuSum[p];
    const nRow = cpuN[p];
    if (!sumRow || !nRow) continue;
    values.forEach((col, r) => {
      const v = col.get(i);
      if (Number.isNaN(v)) return;
      sumRow[r] = (sumRow[r] ?? 0) + v;
      nRow[r] = (nRow[r] ?? 0) + 1;
    });
  }
  // Weights change during a phase under --lag-weights or a throttle: each phase gets its mean.
  const weightMean = phases.map(() => store.replicas.map(() => ({ sum: 0, n: 0 })));
  for (let i = 0; i < store.weightLog.at.length; i++) {
    const row = weightMean[phaseIndexAt(phases, store.weightLog.at.get(i))];
    store.weightLog.values.forEach((col, r) => {
      const v = col.get(i);
      const cell = row?.[r];
      if (cell && !Number.isNaN(v)) {
        cell.sum += v;
        cell.n += 1;
      }
    });
  }
  const lag = lagPhaseStats(store.lagLog, phases);
  return phases.map((ph, p) => {
    const out: Record<string, ReplicaPhaseStats> = {};
    store.replicas.forEach((id, r) => {
      const n = cpuN[p]?.[r] ?? 0;
      const l = lag?.[p]?.[id];
      out[id] = {
        up: !ph.down.includes(id),
        cpuMean: n > 0 ? round((cpuSum[p]?.[r] ?? 0) / n, 4) : null,
        sessionsOpened: sessions[p]?.[r] ?? 0,
        queries: queries[p]?.[r] ?? 0,
        unreachable: failures[0]?.[p]?.[r] ?? 0,
        overloaded: failures[1]?.[p]?.[r] ?? 0,
        slow: failures[2]?.[p]?.[r] ?? 0,
        ...(l ? { lag: l } : {}),
        ...(latency[p]?.[r] ?? {}),
        longestQuietS: round(quiet[p]?.[r] ?? 0, 3) ?? 0,
        weight: weightOf(weightMean[p]?.[r]) ?? store.weights.get(id) ?? 1,
      };
    });
    return out;
  });
}

function weightOf(cell: { sum: number; n: number } | undefined): number | undefined {
  return cell && cell.n > 0 ? (round(cell.sum / cell.n, 4) ?? undefined) : undefined;
}

/** Past this many replicas the summary has no per-replica latency (K histograms per phase). */
export const PER_REPLICA_LATENCY_MAX = 64;

/**
 * p50/p95 (ms) of the queries each replica served, per phase; empty past PER_REPLICA_LATENCY_MAX
 * replicas. One phase at a time through K reused histograms: memory stays K histograms.
 */
function replicaLatency(
  store: MetricsStore,
  phases: readonly Phase[],
): ({ p50Ms: number | null; p95Ms: number | null } | undefined)[][] {
  const k = store.replicas.length;
  if (k > PER_REPLICA_LATENCY_MAX) return [];
  const hists = store.replicas.map(() => newLatencyHistogram());
  return phases.map((_, p) => {
    for (const h of hists) h.reset();
    for (const cls of SERVICE_CLASSES) {
      const log = store.logs[cls];
      for (let i = 0; i < log.queryEnd.length; i++) {
        if (phaseIndexAt(phases, log.queryEnd.get(i)) !== p) continue;
        hists[log.queryReplica.get(i)]?.recordValue(log.queryLatUs.get(i));
      }
    }
    return hists.map((h) =>
      h.totalCount > 0
        ? { p50Ms: round(percentileMs(h, 50), 3), p95Ms: round(percentileMs(h, 95), 3) }
        : { p50Ms: null, p95Ms: null },
    );
  });
}

/** Per phase and replica: the longest stretch without a new session, s (the silent-replica signal). */
function replicaQuietS(store: MetricsStore, phases: readonly Phase[]): number[][] {
  const k = store.replicas.length;
  const opens: number[][][] = phases.map(() => store.replicas.map(() => []));
  for (const cls of SERVICE_CLASSES) {
    const log = store.logs[cls];
    for (let i = 0; i < log.openAt.length; i++) {
      const at = log.openAt.get(i);
      const r = log.openReplica.get(i);
      if (r < k) opens[phaseIndexAt(phases, at)]?.[r]?.push(at);
    }
  }
  return phases.map((ph, p) =>
    store.replicas.map((_, r) => longestGapMs(opens[p]?.[r] ?? [], ph.startMs, ph.endMs) / 1000),
  );
}

/**
 * Per phase: class stats (queries by end time, sessions by the time they opened/closed), replica
 * stats, CPU over the replicas up; retention and inflation against `ref` (null in ref itself and
 * when there is no ref). Also returns the class x phase latency histograms for histograms/.
 */
export function summarizePhases(
  store: MetricsStore,
  phases: readonly Phase[],
): { phases: PhaseSummary[]; histograms: PhaseHistogram[]; faultInterval?: PhaseSummary } {
  const histograms: PhaseHistogram[] = [];
  const perClass = {} as Record<ServiceClass, ClassPhaseStats[]>;
  for (const cls of SERVICE_CLASSES) {
    const hists = phases.map((phase) => {
      const hist = newLatencyHistogram();
      histograms.push({ cls, phase, hist });
      return hist;
    });
    perClass[cls] = classStats(store.logs[cls], phases, hists);
  }
  const summaries = withCrossZone(
    assemblePhases(phases, perClass, replicaStats(store, phases), harnessStats(store, phases)),
    store,
    phases,
  );
  const fault = faultIntervalPhases(phases);
  if (!fault) return { phases: summaries, histograms };
  // The same stats over [ref, fault interval]: a second pass keeps the phase pass one-owner-per-sample.
  const faultClasses = {} as Record<ServiceClass, ClassPhaseStats[]>;
  for (const cls of SERVICE_CLASSES) {
    faultClasses[cls] = classStats(
      store.logs[cls],
      fault,
      fault.map(() => newLatencyHistogram()),
    );
  }
  const both = withCrossZone(
    assemblePhases(fault, faultClasses, replicaStats(store, fault), harnessStats(store, fault)),
    store,
    fault,
  );
  return { phases: summaries, histograms, faultInterval: both[both.length - 1] };
}

/**
 * With zones: per phase, the sessions opened and the share of them on a replica outside their
 * client's zone (the guide's zone-preference cost). Unchanged without zones.
 */
function withCrossZone(
  summaries: PhaseSummary[],
  store: MetricsStore,
  phases: readonly Phase[],
): PhaseSummary[] {
  const { at, cross } = store.zoneLog;
  if (at.length === 0) return summaries;
  const n = phases.map(() => 0);
  const c = phases.map(() => 0);
  for (let i = 0; i < at.length; i++) {
    const p = phaseIndexAt(phases, at.get(i));
    if (p < 0 || p >= n.length) continue;
    n[p] = (n[p] ?? 0) + 1;
    c[p] = (c[p] ?? 0) + cross.get(i);
  }
  return summaries.map((s, p) => ({
    ...s,
    crossZone: {
      sessions: n[p] ?? 0,
      share: (n[p] ?? 0) > 0 ? round((c[p] ?? 0) / (n[p] as number), 4) : null,
    },
  }));
}

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

/**
 * The phase tables from per-phase parts (exact ones from the raw columns, or ones rebuilt from the
 * per-second files): retention and inflation against `ref`, CPU over the replicas up.
 */
export function assemblePhases(
  phases: readonly Phase[],
  perClass: Record<ServiceClass, ClassPhaseStats[]>,
  replicas: Record<string, ReplicaPhaseStats>[],
  harness: (HarnessPhaseStats | undefined)[],
): PhaseSummary[] {
  const refIdx = phases.findIndex((p) => p.name === REF_PHASE);
  return phases.map((ph, p): PhaseSummary => {
    const classes = {} as Record<ServiceClass, ClassPhaseStats>;
    for (const cls of SERVICE_CLASSES) {
      const s = perClass[cls][p];
      const ref = perClass[cls][refIdx];
      if (!s) continue;
      classes[cls] =
        ref && p !== refIdx
          ? {
              ...s,
              goodputRetention: round(goodputRetention(s.goodput, ref.goodput), 4),
              p95Inflation: round(p95Inflation(s.p95, ref.p95), 4),
            }
          : s;
    }
    const reps = replicas[p] ?? {};
    const signals = computeSignals(
      Object.entries(reps).map(([id, r]) => ({
        id,
        up: r.up,
        queries: r.queries,
        sessionsOpened: r.sessionsOpened,
        cpu: r.cpuMean,
        weight: r.weight ?? 1,
        ...(r.longestQuietS !== undefined ? { longestQuietS: r.longestQuietS } : {}),
      })),
      (ph.endMs - ph.startMs) / 1000,
    );
    const upCpu = Object.values(reps)
      .filter((r) => r.up && r.cpuMean !== null)
      .map((r) => r.cpuMean as number);
    return {
      name: ph.name,
      startS: round(ph.startMs / 1000, 3) ?? 0,
      endS: round(ph.endMs / 1000, 3) ?? 0,
      survivors: ph.survivors,
      classes,
      replicas: reps,
      cpuMean: round(mean(upCpu), 4),
      cpuCv: round(coefficientOfVariation(upCpu), 4),
      ...(harness[p] ? { harness: harness[p] } : {}),
      signals,
    };
  });
}

/** One phase of the client: its CPU samples and event-loop delays (undefined without both). */
export function harnessPhaseStats(
  cpu: readonly number[],
  loop: Histogram | undefined,
): HarnessPhaseStats | undefined {
  if (cpu.length === 0 || !loop || loop.totalCount === 0) return undefined;
  const p99 = percentileMs(loop, 99) ?? 0;
  return {
    cpuMean: round(mean(cpu), 4),
    cpuMax: round(Math.max(...cpu), 4),
    loopP50Ms: round(percentileMs(loop, 50), 3),
    loopP99Ms: round(p99, 3),
    loopMaxMs: round(loop.maxValue / 1000, 3),
    saturated: p99 > HARNESS_LOOP_P99_LIMIT_MS,
  };
}

/** Per phase: the client process's CPU and event-loop delay (undefined where it was not sampled). */
function harnessStats(store: MetricsStore, phases: readonly Phase[]): (HarnessPhaseStats | undefined)[] {
  const h = store.harnessLog;
  const cpu = phases.map(() => [] as number[]);
  for (let i = 0; i < h.cpuAt.length; i++) cpu[phaseIndexAt(phases, h.cpuAt.get(i))]?.push(h.cpu.get(i));
  const loops = phases.map(() => newLatencyHistogram());
  for (let i = 0; i < h.loopAt.length; i++)
    loops[phaseIndexAt(phases, h.loopAt.get(i))]?.recordValue(h.loopDelayUs.get(i));
  return phases.map((_, p) => harnessPhaseStats(cpu[p] ?? [], loops[p]));
}

/**
 * One record per fault that the router should notice (throttle is not one): the first 'detect'
 * of the expected state for that replica at or after the fault and before the next such fault on
 * the same replica (so a missed detection is not credited with a later one).
 */
export function detectionRecords(events: readonly RunEvent[]): DetectionRecord[] {
  const faults = events.filter(
    (e) => e.type === 'fault' && e.replica !== undefined && replicaStateAfter(String(e.action)) !== null,
  );
  const detects = events.filter((e) => e.type === 'detect' && e.replica !== undefined);
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
  const detects = events.filter((e) => e.type === 'detect');
  const down = detects.filter((e) => e['state'] === 'down').length;
  const up = detects.filter((e) => e['state'] === 'up').length;
  const explained = detectionRecords(events).filter((r) => r.detectedMs !== null).length;
  return { down, up, unexplained: down + up - explained };
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
