import type { RecoveryTail } from './recovery-tail.js';
import type { FailureCause } from '../cluster/failure-cause.js';
import type { ServiceClass } from '../router/types.js';
import type { ReplicaLag, ReplicaLagStats } from './lag.js';
import type { PhaseSignals } from './signals.js';

/** How a session ended: by finishing its queries, by an error, or cut off by the end of the run. */
export type SessionEnding = 'finished' | 'failed' | 'cut';

/** Event-loop delay p99 above this in a phase means the harness, not the servers, set the pace. */
export const HARNESS_LOOP_P99_LIMIT_MS = 20;

/**
 * What the runner tells the recorder. Times are milliseconds since the start of the run
 * (t=0 when the first client starts), measured by the runner's monotonic clock.
 */
export interface Recorder {
  /** A query that completed successfully (goodput). */
  queryDone(cls: ServiceClass, replica: string, endMs: number, latencyMs: number): void;
  /** A query that failed (error, not goodput). */
  queryFailed(cls: ServiceClass, replica: string, endMs: number, reason: string): void;
  /** A session connected (connectMs: connect + authentication, its own metric, not query latency). */
  /** crossZone: with zones, whether the replica is outside the client's zone (absent: no zones). */
  sessionOpened(
    cls: ServiceClass,
    replica: string,
    atMs: number,
    connectMs: number,
    crossZone?: boolean,
  ): void;
  /** Only sessions that ended `finished` count toward lifetime; failed and cut are counted apart. */
  sessionClosed(
    cls: ServiceClass,
    replica: string,
    openedMs: number,
    closedMs: number,
    ending: SessionEnding,
  ): void;
  /** A classified failure heard of on a replica (health check, connect or session). */
  replicaFailure(replica: string, atMs: number, cause: FailureCause): void;
  /** The client process's CPU (user + system, fraction of one core) over the last sample interval. */
  harnessCpu(atMs: number, cpu: number): void;
  /** How late a 10 ms timer of the client ran (event-loop delay), ms; about 100 a second. */
  loopDelay(atMs: number, delayMs: number): void;
  /** A session could not be opened (NO_REPLICA or connect error). */
  admissionFailed(cls: ServiceClass, atMs: number, reason: string): void;
  /**
   * With an admission queue (plb-admit, lc-queue): how long a session waited for a slot, recorded
   * at admission (its own metric, like connect time: never part of a query's latency).
   */
  sessionQueued?(cls: ServiceClass, atMs: number, queueMs: number): void;
  /** CPU fraction of its quota per server over the last sample interval (0..1+, null = down). */
  cpu(atMs: number, fractions: Record<string, number | null>): void;
  /** The router's view of every replica at a moment (for timeline.csv): open sessions, role, health. */
  replicaState(atMs: number, perReplica: Record<string, ReplicaState>): void;
  /** Replication lag per replica, once a second while the write workload runs (lag.ts). */
  lag(atMs: number, perReplica: Record<string, ReplicaLag>): void;
}

export interface ReplicaState {
  premium: number;
  freemium: number;
  /** Role in the router ('premium' | 'mixed' | 'freemium' for plb; the partition for static; 'shared' otherwise). */
  role: string;
  /** Healthy as the router sees it. */
  healthy: boolean;
  /** Configured weight (router snapshot); absent means 1. */
  weight?: number;
}

/**
 * One line of events.jsonl. `type`:
 * - 'fault': the injector applied {replica, action, cpus?} (these times are the phase boundaries)
 * - 'detect': the router marked {replica} down or up ({state, via: 'health'|'connect'|'session'|'oracle',
 *   cause: what the evidence was, e.g. 'unreachable: connect ECONNREFUSED'})
 * - 'failures': per replica and second, the failures heard of by cause ({unreachable, overloaded, slow})
 * - 'role': plb changed {replica} from {from} to {to}
 * - 'run': {state: 'started'|'finished'|'interrupted'|'failed'}; 'note': anything else worth keeping
 *   ({what: 'error', message}: an error in the run; {what: 'fault-not-taken', replica, action, error}:
 *   a fault whose action returned but did not take)
 * - 'hook': --driver external ran a hook of the cluster file ({replica, hook, argv, exitCode, signal,
 *   timedOut, durationMs, stdout, stderr, error?}; the password cut out)
 */
export interface RunEvent {
  type: 'fault' | 'detect' | 'failures' | 'role' | 'run' | 'note' | 'hook';
  tMs: number;
  replica?: string;
  action?: string;
  [key: string]: unknown;
}

/**
 * The run directory as the run goes (DESIGN.md, Run directory). Everything is appended as it
 * happens so an interrupted run keeps what it measured.
 */
export interface RunWriter {
  readonly dir: string;
  readonly recorder: Recorder;
  writeConfig(config: Record<string, unknown>): void;
  /** Appends one line to events.jsonl at once ('fault' events define the phases). */
  event(e: RunEvent): void;
  /** Flushes every whole second before nowMs to timeline.csv. */
  tick(nowMs: number): void;
  /** Per class p95 (ms) and goodput (q/s) over the last windowS seconds, and the current phase name. */
  progress(
    nowMs: number,
    windowS: number,
  ): {
    phase: string;
    premium: { p95: number | null; goodput: number };
    freemium: { p95: number | null; goodput: number };
  };
  /**
   * Computes phases and the summary, writes histograms/ and summary.json, returns the summary.
   * The run is complete only when `complete`, no error was given and every fault was injected.
   */
  finish(endMs: number, complete: boolean, errors?: readonly string[]): RunSummary;
}

/** A phase as DESIGN.md defines it: `ref`, then one per interval between injected events. */
export type { Phase } from '../faults/actions.js';

export interface Percentiles {
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

export interface ClassPhaseStats extends Percentiles {
  /** Completed queries. */
  queries: number;
  errors: number;
  /** Completed queries per second. */
  goodput: number;
  /** goodput / goodput in ref (null for ref itself or when ref is 0). */
  goodputRetention: number | null;
  /** p95 / p95 in ref - 1 (null when either is missing). */
  p95Inflation: number | null;
  sessionsOpened: number;
  sessionsClosed: number;
  sessionsFailed: number;
  /** Sessions cut off by the end of the run (not failed, not finished). Absent in older runs. */
  sessionsCut?: number;
  admissionFailures: number;
  /** Lifetime of the sessions that finished normally (failed and cut sessions excluded). */
  lifetimeP50Ms: number | null;
  lifetimeP95Ms: number | null;
  /** Connect + authentication time of the sessions opened in the phase. Absent in older runs. */
  connectP50Ms?: number | null;
  connectP95Ms?: number | null;
  /** Admission queue (plb-admit, lc-queue): wait of the sessions admitted in the phase, and timeouts. */
  queueP50Ms?: number | null;
  queueP95Ms?: number | null;
  queueTimeouts?: number;
}

export interface ReplicaPhaseStats {
  /** Up for the whole phase. */
  up: boolean;
  cpuMean: number | null;
  sessionsOpened: number;
  queries: number;
  /** Failures heard of on this replica by cause (only unreachable counts toward fall). Absent in older runs. */
  unreachable?: number;
  overloaded?: number;
  slow?: number;
  /** Replication lag over the phase; only in runs with the write workload on (`--write-rate`). */
  lag?: ReplicaLagStats;
  /** Latency of the queries it served (every class), ms; absent in older runs and past PER_REPLICA_LATENCY_MAX replicas. */
  p50Ms?: number | null;
  p95Ms?: number | null;
  /** Longest stretch of the phase without a new session, s (the silent-replica signal). Absent in older runs. */
  longestQuietS?: number;
  /** Configured weight (router snapshot). Absent in older runs. */
  weight?: number;
}

/** The client process over a phase: did the harness keep up? */
export interface HarnessPhaseStats {
  cpuMean: number | null;
  cpuMax: number | null;
  /** Event-loop delay over the whole phase. */
  loopP50Ms: number | null;
  loopP99Ms: number | null;
  loopMaxMs: number | null;
  /** loopP99Ms above HARNESS_LOOP_P99_LIMIT_MS: the phase measured the harness too. */
  saturated: boolean;
}

export interface PhaseSummary {
  name: string;
  startS: number;
  endS: number;
  survivors: number;
  classes: Record<ServiceClass, ClassPhaseStats>;
  replicas: Record<string, ReplicaPhaseStats>;
  /** Mean CPU fraction over the replicas up in the phase, and its coefficient of variation. */
  cpuMean: number | null;
  cpuCv: number | null;
  /** Absent in runs recorded before harness sampling. */
  harness?: HarnessPhaseStats;
  /** Set when the phase is not the measurement it claims to be (a fault that failed), and why. */
  invalid?: string;
  /** The guide's four balance signals over the phase (metrics/signals.ts). Absent in older runs. */
  signals?: PhaseSignals;
  /**
   * With zones: sessions opened in the phase, and the share whose replica was outside their
   * client's zone (null: none opened). Absent without zones and in rebuilt summaries.
   */
  crossZone?: { sessions: number; share: number | null };
}

export interface DetectionRecord {
  replica: string;
  action: string;
  injectedMs: number;
  /** When the router first saw it (null = never within the run). */
  detectedMs: number | null;
  delayMs: number | null;
}

/** Every 'detect' event of a run, and those no injected fault explains (false detections). */
export interface DetectionCounts {
  down: number;
  up: number;
  /** A down while the plan had the replica up, or an up while it had it down. */
  unexplained: number;
}

export const SUMMARY_SCHEMA_VERSION = 1;

export interface RunSummary {
  schemaVersion: typeof SUMMARY_SCHEMA_VERSION;
  runId: string;
  strategy: string;
  plan: string;
  mix: { premium: number; freemium: number };
  clients: number;
  seed: number;
  complete: boolean;
  startedAt: string;
  durationS: number;
  phases: PhaseSummary[];
  /**
   * The whole fault interval (first down until every replica is back, or the end) with the stats
   * of a phase, named `fault`; retention and inflation against ref. Absent without a down fault
   * and in older runs (the report computes it from their per-second files).
   */
  faultInterval?: PhaseSummary;
  detection: DetectionRecord[];
  /** Absent in older runs. */
  detectionCounts?: DetectionCounts;
  /** Per rejoin: seconds until each class's p95 is back within 10 % of ref (recovery-tail.ts). */
  recoveryTail?: RecoveryTail[];
  /** Why the run is not complete: failed faults, an error, a stop, a crash. Absent when complete. */
  errors?: string[];
  /** Rebuilt by the report from the per-second files of a run that died before finishing. */
  rebuilt?: boolean;
}
