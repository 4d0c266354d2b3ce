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
  sessionClosed(cls: ServiceClass, replica: string, openedMs: number, closedMs: number, failed: boolean): void;
  /** A session could not be opened (NO_REPLICA or connect error). */
  admissionFailed(cls: ServiceClass, atMs: number, reason: string): void;
  /** CPU fraction of its quota per server over the last sample interval (0..1+, null = down). */
  cpu(atMs: number, fractions: Record<string, number | null>): void;
  /** Open sessions per replica per class at a moment (for timeline.csv). */
  sessions(atMs: number, perReplica: Record<string, { premium: number; freemium: number }>): void;
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
