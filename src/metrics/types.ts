import type { FailureCause } from '../core/failure-cause.js';
import type { ServiceClass } from '../core/service-class.js';
import type { ReplicaLag } from '../cluster/lag-probe.js';
import type { RunSummary } from '../run-format/summary.js';
import type { RunEventRecord } from '../run-format/events.js';
import type { Assignable } from '../run-format/type-check.js';

/** How a session ended: by finishing its queries, by an error, or cut off by the end of the run. */
export type SessionEnding = 'finished' | 'failed' | 'cut';

/** Event-loop delay p99 above this in a phase means the harness, not the servers, set the pace. */
export const HARNESS_LOOP_P99_LIMIT_MS = 20;

/**
 * A phase whose host was this busy on average (fraction of all its cores) left no room: the
 * replicas' quotas were a ceiling nobody could reach, so their latencies measure the host too.
 */
export const HOST_BUSY_LIMIT = 0.9;
/** A phase in which the hypervisor took this share of the host's cores ran on a smaller machine. */
export const HOST_STEAL_LIMIT = 0.05;

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
  /** A classified failure heard of on a replica; via: who heard of it ('health', 'connect', 'session'). */
  replicaFailure(replica: string, atMs: number, cause: FailureCause, via?: string): void;
  /** The client process's CPU (user + system, fraction of one core) over the last sample interval. */
  harnessCpu(atMs: number, cpu: number): void;
  /** The host's busy and stolen CPU (fractions of all its cores) over the last sample interval. */
  hostCpu(atMs: number, busy: number, steal: number): void;
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

// RunEvent is deliberately loose (an index signature); every schema-valid event must still be one.
const _eventShape: Assignable<RunEventRecord, RunEvent> = true;
const _eventTypes: Assignable<RunEvent['type'], RunEventRecord['type']> = true;
