// The summary of a run that died before finish() (kill -9, power loss), rebuilt from what it
// appended as it went: phases from the faults in events.jsonl, numbers from the per-second files.
// Seconds, not milliseconds: each whole second counts in the phase holding its middle, and the
// run ends at its last whole second on disk. Always marked incomplete.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Histogram } from 'hdr-histogram-js';
import { SERVICE_CLASSES, type ServiceClass } from '../../core/service-class.js';
import { newLatencyHistogram } from '../hdr/histogram.js';
import { histogramPercentile, mean, percentileMs, percentilesMs, round } from '../math.js';
import { computePhases, type FaultMark } from '../../faults/actions.js';
import { phaseIndexAt } from '../phases.js';
import { RUN_FILES, type RunningMarker } from './run-writer.js';
import {
  addEncoded,
  intervalLogName,
  newLifetimeHistogram,
  parseIntervalLog,
  parseSeconds,
  type SecondRecord,
} from './seconds.js';
import { assemblePhases, harnessPhaseStats } from '../summary/summary.js';
import { detectionCounts, detectionRecords, markInvalidPhases } from '../summary/detections.js';
import { sessionShares } from '../summary/session-share.js';
import { faultIntervalPhases, phasesOfSummary } from '../summary/fault-interval.js';
import type { TimelineRow } from './timeline.js';
import { lagStatsOf } from '../samplers/lag.js';
import { type Phase, type RunEvent } from '../types.js';
import {
  SUMMARY_SCHEMA_VERSION,
  type ClassPhaseStats,
  type HarnessPhaseStats,
  type PhaseSummary,
  type ReplicaPhaseStats,
  type RunSummary,
} from '../../run-format/summary.js';

/** Is process `pid` alive? (A run whose writer lives is still going, not crashed.) */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The RUNNING marker's facts; a marker of an older writer (pid and start only) falls back on
 * config.json (what runBench writes: strategy, seed, plan, mix, clients, replicas).
 */
export function runFacts(
  marker: Record<string, unknown>,
  config: Record<string, unknown>,
  runId: string,
): RunningMarker {
  const plan = isObject(config['plan']) ? config['plan'] : {};
  const pick = <T>(key: string, ok: (v: unknown) => v is T, fallback: T): T => {
    const m = marker[key];
    if (ok(m)) return m;
    const c = config[key];
    return ok(c) ? c : fallback;
  };
  const num = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
  const str = (v: unknown): v is string => typeof v === 'string';
  const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
  const mix = (v: unknown): v is { premium: number; freemium: number } =>
    isObject(v) && num(v['premium']) && num(v['freemium']);
  return {
    pid: pick('pid', num, 0),
    startedAt: pick('startedAt', str, ''),
    runId,
    strategy: pick('strategy', str, 'unknown'),
    plan: str(marker['plan']) ? marker['plan'] : str(plan['name']) ? plan['name'] : 'unknown',
    seed: pick('seed', num, 0),
    clients: pick('clients', num, 0),
    mix: pick('mix', mix, { premium: 0, freemium: 0 }),
    classes: pick('classes', strings, [...SERVICE_CLASSES]).filter((c): c is ServiceClass =>
      (SERVICE_CLASSES as readonly string[]).includes(c),
    ),
    replicas: pick('replicas', strings, []),
    refWindowS: num(marker['refWindowS'])
      ? marker['refWindowS']
      : num(plan['referenceWindow'])
        ? plan['referenceWindow']
        : 30,
    warmupS: num(marker['warmupS']) ? marker['warmupS'] : num(plan['warmup']) ? plan['warmup'] : 0,
  };
}

export interface RebuildInput {
  dir: string;
  facts: RunningMarker;
  events: readonly RunEvent[];
  timeline: readonly TimelineRow[];
  /** Why it is being rebuilt (e.g. `killed: pid 123 is gone`), first of the summary's errors. */
  reason: string;
}

function readOr(path: string): string {
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

/** The summary of a run that has no summary.json, from its per-second files. */
export function rebuildSummary(input: RebuildInput): RunSummary {
  const { dir, facts, events, timeline } = input;
  const replicas = facts.replicas.length > 0 ? facts.replicas : Object.keys(timeline[0]?.replicas ?? {});
  const lastS = timeline.reduce((m, r) => Math.max(m, r.tS), -1);
  const endMs = (lastS + 1) * 1000;
  const faults: FaultMark[] = events
    .filter((e) => e.type === 'fault' && e.replica !== undefined && e.action !== undefined)
    .map((e) => ({ tMs: e.tMs, replica: e.replica as string, action: e.action as string }));
  const phases = computePhases({
    faults,
    endMs,
    refWindowMs: facts.refWindowS * 1000,
    warmupMs: facts.warmupS * 1000,
    replicas,
  });
  const { perClass, replicaStats, harness } = secondsStats(dir, phases, timeline, replicas);
  const fault = faultIntervalPhases(phases);
  const summaries = assemblePhases(phases, perClass, replicaStats, harness);
  const errors = [input.reason, ...markInvalidPhases(summaries, events)];
  return {
    schemaVersion: SUMMARY_SCHEMA_VERSION,
    runId: facts.runId,
    strategy: facts.strategy,
    plan: facts.plan,
    mix: { ...facts.mix },
    clients: facts.clients,
    seed: facts.seed,
    complete: false,
    startedAt: facts.startedAt,
    durationS: round(endMs / 1000, 3) ?? 0,
    phases: summaries,
    ...(fault ? { faultInterval: faultIntervalFrom(dir, fault, timeline, replicas, events) } : {}),
    detection: detectionRecords(events),
    detectionCounts: detectionCounts(events),
    // Its sessions are not on disk one by one: no hang path, but the shares are in the seconds.
    sessionShare: sessionShares(summaries, events),
    errors,
    rebuilt: true,
  };
}

/** The fault-interval entry over [ref, interval] from the per-second files (seconds resolution). */
function faultIntervalFrom(
  dir: string,
  fault: Phase[],
  timeline: readonly TimelineRow[],
  replicas: readonly string[],
  events: readonly RunEvent[],
): PhaseSummary | undefined {
  const s = secondsStats(dir, fault, timeline, replicas);
  const both = assemblePhases(fault, s.perClass, s.replicaStats, s.harness);
  markInvalidPhases(both, events);
  return both[both.length - 1];
}

/**
 * The fault-interval entry of a summary written before it existed, from the run's per-second
 * files and its own phase bounds; undefined without a down phase.
 */
export function rebuildFaultInterval(
  dir: string,
  summary: RunSummary,
  timeline: readonly TimelineRow[],
  events: readonly RunEvent[],
): PhaseSummary | undefined {
  const fault = faultIntervalPhases(phasesOfSummary(summary.phases));
  // Without the per-second latency logs there is nothing to compute it from (zeros would lie).
  const logs = SERVICE_CLASSES.some((c) => existsSync(join(dir, RUN_FILES.histograms, intervalLogName(c))));
  if (!fault || !logs) return undefined;
  const replicas = Object.keys(timeline[0]?.replicas ?? summary.phases[0]?.replicas ?? {});
  return faultIntervalFrom(dir, fault, timeline, replicas, events);
}

/** Per phase, class, replica and harness stats from the per-second files (each second in the phase holding its middle). */
function secondsStats(
  dir: string,
  phases: readonly Phase[],
  timeline: readonly TimelineRow[],
  replicas: readonly string[],
): {
  perClass: Record<ServiceClass, ClassPhaseStats[]>;
  replicaStats: Record<string, ReplicaPhaseStats>[];
  harness: (HarnessPhaseStats | undefined)[];
} {
  const seconds = parseSeconds(readOr(join(dir, RUN_FILES.seconds)));
  const latency = new Map(
    SERVICE_CLASSES.map((c) => [
      c,
      parseIntervalLog(readOr(join(dir, RUN_FILES.histograms, intervalLogName(c)))),
    ]),
  );

  // Which phase each whole second belongs to (by its middle), and how many seconds each phase has.
  const rows = timeline.map((row) => ({ row, p: phaseIndexAt(phases, row.tS * 1000 + 500) }));
  const spanS = phases.map((_, p) => rows.filter((r) => r.p === p).length);
  const inPhase = (p: number): { row: TimelineRow; sec: SecondRecord | undefined }[] =>
    rows.filter((r) => r.p === p).map((r) => ({ row: r.row, sec: seconds.get(r.row.tS) }));

  const perClass = {} as Record<ServiceClass, ClassPhaseStats[]>;
  for (const cls of SERVICE_CLASSES) {
    perClass[cls] = phases.map((_, p) => {
      const hist = newLatencyHistogram();
      const connect = newLatencyHistogram();
      const lifetime = newLifetimeHistogram();
      const sum = { errors: 0, opened: 0, failed: 0, admission: 0, closed: 0, cut: 0 };
      for (const { row, sec } of inPhase(p)) {
        const h = latency.get(cls)?.get(row.tS);
        if (h) hist.add(h);
        const c = row.classes[cls];
        if (c) {
          sum.errors += c.errors;
          sum.opened += c.sessionsOpened;
          sum.failed += c.sessionsFailed;
          sum.admission += c.admissionFailures;
        }
        const s = sec?.classes[cls];
        if (s) {
          sum.closed += s.closed;
          sum.cut += s.cut;
          addEncoded(lifetime, s.lifetime);
          addEncoded(connect, s.connect);
        }
      }
      const pct = percentilesMs(hist);
      const lifeAt = (q: number): number | null => round(histogramPercentile(lifetime, q), 3);
      return {
        p50: round(pct.p50, 3),
        p95: round(pct.p95, 3),
        p99: round(pct.p99, 3),
        queries: hist.totalCount,
        errors: sum.errors,
        goodput: round(hist.totalCount / Math.max(1, spanS[p] ?? 0), 3) ?? 0,
        goodputRetention: null,
        p95Inflation: null,
        sessionsOpened: sum.opened,
        sessionsClosed: sum.closed,
        sessionsFailed: sum.failed,
        sessionsCut: sum.cut,
        admissionFailures: sum.admission,
        lifetimeP50Ms: lifeAt(50),
        lifetimeP95Ms: lifeAt(95),
        connectP50Ms: connect.totalCount > 0 ? round(percentileMs(connect, 50), 3) : null,
        connectP95Ms: connect.totalCount > 0 ? round(percentileMs(connect, 95), 3) : null,
      };
    });
  }

  // A write run (lag in its timeline) gets lag figures, as its summary would have had.
  const withLag = timeline.some((row) => Object.values(row.replicas).some((c) => c.lagMs !== null));
  const replicaStats = phases.map((ph, p) => {
    const out: Record<string, ReplicaPhaseStats> = {};
    const secs = inPhase(p);
    for (const id of replicas) {
      const lagOf = (f: 'lagMs' | 'lagBytes'): number[] =>
        secs.map(({ row }) => row.replicas[id]?.[f] ?? null).filter((v): v is number => v !== null);
      const cpu = secs.map(({ row }) => row.replicas[id]?.cpu ?? null).filter((v): v is number => v !== null);
      const total = (f: 'unreachable' | 'overloaded' | 'slow'): number =>
        secs.reduce((n, { row }) => n + (row.replicas[id]?.[f] ?? 0), 0);
      out[id] = {
        up: !ph.down.includes(id),
        cpuMean: cpu.length > 0 ? round(mean(cpu), 4) : null,
        sessionsOpened: secs.reduce((n, { sec }) => n + (sec?.replicas[id]?.opened ?? 0), 0),
        queries: secs.reduce((n, { sec }) => n + (sec?.replicas[id]?.queries ?? 0), 0),
        unreachable: total('unreachable'),
        overloaded: total('overloaded'),
        slow: total('slow'),
        ...(withLag ? { lag: lagStatsOf(lagOf('lagMs'), lagOf('lagBytes')) } : {}),
      };
    }
    return out;
  });

  const harness = phases.map((_, p): HarnessPhaseStats | undefined => {
    const secs = inPhase(p);
    const cpu = secs.map(({ row }) => row.harness.cpu).filter((v): v is number => v !== null);
    const loop: Histogram = newLatencyHistogram();
    for (const { sec } of secs) addEncoded(loop, sec?.loop);
    const host = { busy: [] as number[], steal: [] as number[] };
    for (const { row } of secs)
      if (row.harness.hostBusy !== null) {
        host.busy.push(row.harness.hostBusy);
        host.steal.push(row.harness.hostSteal ?? 0);
      }
    return harnessPhaseStats(cpu, loop, host);
  });

  return { perClass, replicaStats, harness };
}
