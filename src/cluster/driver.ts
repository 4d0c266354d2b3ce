import type { Connector } from './connector.js';

/**
 * The contract between plb and a cluster. Implementations: docker/ (dockerode), local/ (postgres
 * processes) and sim/ (simulated replicas in virtual time). Server ids are 'primary' and 'r1'..'rK'.
 */
export type ServerId = string;

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

export interface Endpoint {
  id: ServerId;
  kind: 'primary' | 'replica';
  host: '127.0.0.1';
  port: number;
}

export interface Credentials {
  user: string;
  password: string;
  database: string;
}

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
  readonly kind: 'docker' | 'local' | 'sim';
  readonly spec: ClusterSpec;
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
  /** Cumulative CPU seconds per running server (a stopped server is absent or unchanged). */
  cpuSeconds(): Promise<Record<ServerId, number>>;
  /** How the bench opens connections to the servers (pg over loopback for real clusters). */
  connector(credentials: Credentials): Connector;
  /** Loads the bench's dataset unless it is there already, and waits until every replica has it. */
  prepareDataset(rows: number, log: (line: string) => void): Promise<{ loaded: boolean; ms: number }>;
  /** Waits until the server accepts connections (and, for a replica, streams). */
  waitReady(id: ServerId, timeoutMs?: number): Promise<void>;
}
