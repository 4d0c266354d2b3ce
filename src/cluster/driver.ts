import type { Connector } from './connector.js';
import type { SessionCountReader } from './session-counts.js';
import type { ServerId } from '../core/replica-ids.js';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import type { ClusterSpec } from '../run-format/cluster-record.js';
import {
  NETWORK_ACTIONS,
  type FaultAction,
  type FaultFields,
  type NetworkAction,
} from '../run-format/fault-actions.js';

/**
 * A fault method's arguments: the event's fields; `cpus` is the run's replica quota when the
 * event has none (the throttle that undoes a throttle when a run ends).
 */
export type FaultArgs = FaultFields & { cpus: number };

/**
 * How a driver applies each fault action of a plan (run-format/fault-actions.ts), one method per
 * action: the injector applies an event with its action's method and undoes it, when a run ends
 * with it in effect, with the method of the action its spec names in `undoneBy`.
 */
export type FaultMethods = {
  readonly [A in FaultAction]: (id: ServerId, args: FaultArgs) => Promise<void>;
};

/** The driver operations the original eight actions map onto (the bench also calls them directly). */
type FaultOperations = Pick<
  ClusterDriver,
  'kill' | 'start' | 'stop' | 'pause' | 'unpause' | 'setCpus' | 'setReplayPaused'
>;

/**
 * The actions every driver applies through its own operations. A driver's `faults` spreads these
 * and adds one method per newer action: the compiler asks each driver for it.
 */
export function faultsByOperation(d: FaultOperations) {
  return {
    down: (id: ServerId) => d.kill(id),
    rejoin: (id: ServerId) => d.start(id),
    stop: (id: ServerId) => d.stop(id),
    pause: (id: ServerId) => d.pause(id),
    unpause: (id: ServerId) => d.unpause(id),
    throttle: (id: ServerId, a: FaultArgs) => d.setCpus(id, a.cpus),
    'pause-replay': (id: ServerId) => d.setReplayPaused(id, true),
    'resume-replay': (id: ServerId) => d.setReplayPaused(id, false),
    // A phase boundary, no fault: nothing to do on any cluster.
    mark: () => Promise.resolve(),
  } satisfies Partial<FaultMethods>;
}

/** A driver's network fault methods: one per network action, made by `apply`, and its heal. */
export function networkFaultMethods(
  apply: (action: NetworkAction) => FaultMethods[NetworkAction],
  heal: FaultMethods['heal'],
): Pick<FaultMethods, NetworkAction | 'heal'> {
  const methods = Object.fromEntries(NETWORK_ACTIONS.map((a) => [a, apply(a)]));
  return { ...(methods as Record<NetworkAction, FaultMethods[NetworkAction]>), heal };
}

/** Defaults of a cluster spec (clusterSpec() fills them in; the CLI's flags show them). */
export const DEFAULT_CLUSTER: Readonly<
  Pick<ClusterSpec, 'name' | 'replicas' | 'basePort' | 'cpus' | 'primaryCpus' | 'maxConnections'>
> = Object.freeze({
  /**
   * Cluster name: containers plb-plb-primary, plb-plb-r1...
   * @default 'plb'
   */
  name: 'plb',
  /**
   * Streaming standbys, as in the paper's K=5.
   * @default 5
   */
  replicas: 5,
  /**
   * Port of the primary: below Linux's default ephemeral range (32768-60999), see ports.ts.
   * @default 25432
   */
  basePort: 25432,
  /**
   * CPU quota per replica (cores): five replicas plus the primary and the client fit two cores.
   * @default 0.25
   */
  cpus: 0.25,
  /**
   * CPU quota of the primary (cores).
   * @default 0.5
   */
  primaryCpus: 0.5,
  /**
   * max_connections: the image's historical default; `cluster up --max-connections` or a bench's
   * sizing raise it.
   * @default 200
   */
  maxConnections: 200,
});

export interface ServerStatus {
  id: ServerId;
  kind: 'primary' | 'replica';
  port: number;
  /** Process/container running and accepting connections. */
  up: boolean;
  paused: boolean;
  /** For replicas: pg_stat_wal_receiver status ('streaming', ...) or null when not known. */
  replication: string | null;
  /** For replicas: replay lag in bytes behind the primary's current LSN, null when unknown. */
  lagBytes: number | null;
  /** For replicas: seconds since the last replayed transaction's commit, null when unknown. */
  replayLagSeconds: number | null;
  cpus: number | null;
}

export interface ClusterDriver {
  readonly kind: 'docker' | 'local' | 'sim' | 'external';
  readonly spec: ClusterSpec;
  /**
   * True when the servers really get no more CPU than their quota (Docker; local processes where
   * cgroups are writable). When false, setCpus only records the quota, CPU fractions are computed
   * against it, and a throttle fault changes nothing on the server.
   */
  readonly cpusEnforced: boolean;
  /** Creates and starts everything; ready = accepting connections and every standby streaming. */
  up(log?: (line: string) => void): Promise<void>;
  /** Removes everything of this cluster (also leftovers of a crashed run). Idempotent. */
  down(): Promise<void>;
  status(): Promise<ServerStatus[]>;
  endpoints(): Endpoint[];
  credentials(): Promise<Credentials>;
  /** The plan's fault actions on this cluster. */
  readonly faults: FaultMethods;
  /** Fail-stop: SIGKILL. */
  kill(id: ServerId): Promise<void>;
  /** Start a stopped/killed server again (rejoin). Resolves once it accepts connections. */
  start(id: ServerId): Promise<void>;
  /** Graceful stop. */
  stop(id: ServerId): Promise<void>;
  pause(id: ServerId): Promise<void>;
  unpause(id: ServerId): Promise<void>;
  setCpus(id: ServerId, cpus: number): Promise<void>;
  /**
   * Pauses or resumes WAL replay on a standby (pg_wal_replay_pause/resume): it keeps serving reads
   * and receiving WAL, and falls behind while paused. Refused by the simulated driver.
   */
  setReplayPaused(id: ServerId, paused: boolean): Promise<void>;
  /** Cumulative CPU seconds per running server (a stopped server is absent or unchanged). */
  cpuSeconds(): Promise<Record<ServerId, number>>;
  /** How the bench opens connections to the servers (pg over loopback for real clusters). */
  connector(credentials: Credentials): Connector;
  /**
   * The `replica` router view's reader of per-class session counts on each replica
   * (pg_stat_activity; the simulator's own servers). `timeoutMs` bounds a connect and a read.
   * Absent: the driver cannot give that view.
   */
  sessionCounts?(credentials: Credentials, timeoutMs: number): SessionCountReader;
  /** Loads the bench's dataset unless it is there already, and waits until every replica has it. */
  prepareDataset(rows: number, log: (line: string) => void): Promise<{ loaded: boolean; ms: number }>;
  /** Waits until the server accepts connections (and, for a replica, streams). */
  waitReady(id: ServerId, timeoutMs?: number): Promise<void>;
}
