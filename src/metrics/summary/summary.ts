import { recoveryTails, type RecoveryTail } from './recovery-tail.js';
import type { Histogram } from 'hdr-histogram-js';
import { SERVICE_CLASSES, type ServiceClass } from '../../core/service-class.js';
import { recordValue } from '../hdr/counts.js';
import { newLatencyHistogram } from '../hdr/histogram.js';
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
} from '../math.js';
import { REF_PHASE } from '../../faults/actions.js';
import { phaseIndexAt } from '../phases.js';
import { faultIntervalPhases } from './fault-interval.js';
import { replicaStats } from './replica-stats.js';
import { computeSignals } from '../signals.js';
import { ENDING_CODE, type MetricsStore } from '../store/store.js';
import type { ClassLog } from '../store/store-logs.js';
import { HARNESS_LOOP_P99_LIMIT_MS, type Phase } from '../types.js';
import {
  type ClassPhaseStats,
  type HarnessPhaseStats,
  type PhaseSummary,
  type ReplicaPhaseStats,
} from '../../run-format/summary.js';

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
    const h = hists[p];
    if (h) recordValue(h, log.queryLatUs.get(i));
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
    const h = p >= 0 ? connects[p] : undefined;
    if (h) recordValue(h, log.openConnectUs.get(i));
  }
  const queues = log.queueAt.length > 0 ? phases.map(() => newLatencyHistogram()) : undefined;
  if (queues) {
    for (let i = 0; i < log.queueAt.length; i++) {
      const p = phaseIndexAt(phases, log.queueAt.get(i));
      if (p >= 0) queues[p]?.recordValue(log.queueUs.get(i));
    }
  }
  const timeouts = countByPhase(phases, log.queueTimeoutAt.length, (i) => log.queueTimeoutAt.get(i));
  return phases.map((ph, p) => {
    const h = hists[p] ?? newLatencyHistogram();
    const q = queues?.[p];
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
      ...(queues
        ? {
            queueP50Ms: q && q.totalCount > 0 ? round(percentileMs(q, 50), 3) : null,
            queueP95Ms: q && q.totalCount > 0 ? round(percentileMs(q, 95), 3) : null,
            queueTimeouts: timeouts[p] ?? 0,
          }
        : {}),
    };
  });
}

/**
 * Per phase: class stats (queries by end time, sessions by the time they opened/closed), replica
 * stats, CPU over the replicas up; retention and inflation against `ref` (null in ref itself and
 * when there is no ref). Also returns the class x phase latency histograms for histograms/.
 */
export function summarizePhases(
  store: MetricsStore,
  phases: readonly Phase[],
): {
  phases: PhaseSummary[];
  histograms: PhaseHistogram[];
  faultInterval?: PhaseSummary;
  recoveryTail?: RecoveryTail[];
} {
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
  const tails = tailsOf(store, phases, summaries);
  const fault = faultIntervalPhases(phases);
  if (!fault) return { phases: summaries, histograms, ...tails };
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
  return { phases: summaries, histograms, faultInterval: both[both.length - 1], ...tails };
}

/** The recovery tail of every recovery phase, a rejoin's (absent without one): recovery-tail.ts. */
function tailsOf(
  store: MetricsStore,
  phases: readonly Phase[],
  summaries: readonly PhaseSummary[],
): { recoveryTail?: RecoveryTail[] } {
  const ref = summaries.find((s) => s.name === 'ref');
  const last = phases[phases.length - 1];
  if (!ref || !last || !phases.some((p) => p.kind === 'recovery')) return {};
  const series = (cls: ServiceClass) => {
    const log = store.logs[cls];
    return {
      length: log.queryEnd.length,
      endMs: (i: number) => log.queryEnd.get(i),
      latencyUs: (i: number) => log.queryLatUs.get(i),
    };
  };
  const refP95 = (cls: ServiceClass) => (ref.classes[cls].queries > 0 ? ref.classes[cls].p95 : null);
  return {
    recoveryTail: recoveryTails(
      { premium: series('premium'), freemium: series('freemium') },
      phases,
      { premium: refP95('premium'), freemium: refP95('freemium') },
      last.endMs,
    ),
  };
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
  host: { busy: readonly number[]; steal: readonly number[] } = { busy: [], steal: [] },
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
    ...(host.busy.length > 0
      ? {
          host: {
            busyMean: round(mean(host.busy), 4) ?? 0,
            busyMax: round(Math.max(...host.busy), 4) ?? 0,
            stealMean: round(mean(host.steal), 4) ?? 0,
          },
        }
      : {}),
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
  const host = phases.map(() => ({ busy: [] as number[], steal: [] as number[] }));
  for (let i = 0; i < h.hostAt.length; i++) {
    const ph = host[phaseIndexAt(phases, h.hostAt.get(i))];
    ph?.busy.push(h.hostBusy.get(i));
    ph?.steal.push(h.hostSteal.get(i));
  }
  return phases.map((_, p) => harnessPhaseStats(cpu[p] ?? [], loops[p], host[p]));
}
