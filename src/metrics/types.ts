import type { ServiceClass } from '../router/types.js';

/**
 * What the runner tells the recorder. Times are milliseconds since the start of the run
 * (t=0 when the first client starts), measured by the runner's monotonic clock.
 */
export interface Recorder {
  /** A query that completed successfully (goodput). */
  queryDone(cls: ServiceClass, replica: string, endMs: number, latencyMs: number): void;
  /** A query that failed (error, not goodput). */
  queryFailed(cls: ServiceClass, replica: string, endMs: number, reason: string): void;
  sessionOpened(cls: ServiceClass, replica: string, atMs: number): void;
  /** failed: the session ended because of an error (its replica died), not by finishing. */
  sessionClosed(
    cls: ServiceClass,
    replica: string,
    openedMs: number,
    closedMs: number,
    failed: boolean,
  ): void;
  /** A session could not be opened (NO_REPLICA or connect error). */
  admissionFailed(cls: ServiceClass, atMs: number, reason: string): void;
  /** CPU fraction of its quota per server over the last sample interval (0..1+, null = down). */
  cpu(atMs: number, fractions: Record<string, number | null>): void;
  /** The router's view of every replica at a moment (for timeline.csv): open sessions, role, health. */
  replicaState(atMs: number, perReplica: Record<string, ReplicaState>): void;
}

export interface ReplicaState {
  premium: number;
  freemium: number;
  /** Role in the router ('premium' | 'mixed' | 'freemium' for plb; the partition for static; 'shared' otherwise). */
  role: string;
  /** Healthy as the router sees it. */
  healthy: boolean;
}

/**
 * One line of events.jsonl. `type`:
 * - 'fault': the injector applied {replica, action, cpus?} (these times are the phase boundaries)
 * - 'detect': the router marked {replica} down or up ({state: 'down'|'up', via: 'health'|'connect'|'oracle'})
 * - 'role': plb changed {replica} from {from} to {to}
 * - 'run': {state: 'started'|'finished'|'interrupted'}; 'note': anything else worth keeping
 */
export interface RunEvent {
  type: 'fault' | 'detect' | 'role' | 'run' | 'note';
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
  /** Computes phases and the summary, writes histograms/ and summary.json, returns the summary. */
  finish(endMs: number, complete: boolean): RunSummary;
}

/** A phase as DESIGN.md defines it: `ref`, then one per interval between injected events. */
export interface Phase {
  name: string;
  startMs: number;
  endMs: number;
  /** Healthy replicas during the phase (K+). */
  survivors: number;
  /** Replicas down during the phase. */
  down: string[];
}

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
  admissionFailures: number;
  lifetimeP50Ms: number | null;
  lifetimeP95Ms: number | null;
}

export interface ReplicaPhaseStats {
  /** Up for the whole phase. */
  up: boolean;
  cpuMean: number | null;
  sessionsOpened: number;
  queries: number;
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
}

export interface DetectionRecord {
  replica: string;
  action: string;
  injectedMs: number;
  /** When the router first saw it (null = never within the run). */
  detectedMs: number | null;
  delayMs: number | null;
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
  detection: DetectionRecord[];
}
