import type { Connector } from './connector.js';
import type { ServerId } from '../core/replica-ids.js';
import type { Credentials, Endpoint } from '../core/endpoint.js';

/**
 * The contract between plb and a cluster. Implementations: docker/ (dockerode), local/ (postgres
 * processes), sim/ (simulated replicas in virtual time) and external/ (a cluster plb did not make,
 * driven by the user's hooks). Server ids (core/replica-ids.ts) are 'primary' and 'r1'..'rK'.
 */
export interface ClusterSpec {
  /** Cluster name; containers are plb-<name>-primary, plb-<name>-r1.. */
  name: string;
  /** Number of streaming standbys (the read pool). */
  replicas: number;
  /** The primary listens on basePort, replica i on basePort + i. */
  basePort: number;
  /** CPU quota per replica (cores). */
  cpus: number;
  /** CPU quota for the primary (cores). */
  primaryCpus: number;
  /** Memory limit per server, MiB (sized from maxConnections unless given). */
  memoryMb: number;
  /**
   * max_connections of every server. Standbys need at least the primary's value, so all servers
   * share it; a bench sizes it so one surviving replica can hold every session (sizing.ts).
   */
  maxConnections: number;
  /** Docker image (docker driver only). */
  image?: string;
  /** Folder for state: password file, local data directories. */
  stateDir: string;
  /**
   * Unique id of this cluster instance (its record's id): a driver with an id touches only what
   * carries it. Without one (an explicit `cluster down --name`), everything of the name.
   */
  id?: string;
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
  /** Loads the bench's dataset unless it is there already, and waits until every replica has it. */
  prepareDataset(rows: number, log: (line: string) => void): Promise<{ loaded: boolean; ms: number }>;
  /** Waits until the server accepts connections (and, for a replica, streams). */
  waitReady(id: ServerId, timeoutMs?: number): Promise<void>;
}
