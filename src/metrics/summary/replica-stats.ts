// Per phase and replica: sessions, queries, CPU, weight, lag, latency and the longest quiet stretch.
import { SERVICE_CLASSES } from '../../core/service-class.js';
import { recordValue } from '../hdr/counts.js';
import { newLatencyHistogram } from '../hdr/histogram.js';
import { lagPhaseStats } from '../samplers/lag.js';
import { percentileMs, round } from '../math.js';
import { phaseIndexAt } from '../phases.js';
import { longestGapMs } from '../signals.js';
import { COUNTED_CAUSES, UNKNOWN_REPLICA, type MetricsStore } from '../store/store.js';
import type { Phase } from '../types.js';
import type { ReplicaPhaseStats } from '../../run-format/summary.js';

export function replicaStats(
  store: MetricsStore,
  phases: readonly Phase[],
): Record<string, ReplicaPhaseStats>[] {
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
    // A sample is the CPU used since the one before: it belongs where that stretch lies (its
    // middle), not where it was read (a replica killed at a phase's start kept the second
    // before's CPU in the phase it was down for).
    const p = phaseIndexAt(phases, i > 0 ? (at.get(i - 1) + at.get(i)) / 2 : at.get(i));
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
const PER_REPLICA_LATENCY_MAX = 64;

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
  return phases.map((ph, p) => {
    for (const h of hists) h.reset();
    for (const cls of SERVICE_CLASSES) {
      const log = store.logs[cls];
      // Queries end in time order: the phase's are one stretch (the check stays).
      const end = log.queryEnd.upperLimit(ph.endMs);
      for (let i = log.queryEnd.lowerBound(ph.startMs); i < end; i++) {
        if (phaseIndexAt(phases, log.queryEnd.get(i)) !== p) continue;
        const h = hists[log.queryReplica.get(i)];
        if (h) recordValue(h, log.queryLatUs.get(i));
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
