/**
 * What the drivers of real PostgreSQL servers (docker/, local/) share: the spec's checks, the
 * servers' addresses and settings, free ports, readiness, the pg connector and the dataset.
 * Each driver adds how it starts, stops and measures its servers.
 */
import { type ServerStatus } from './driver.js';
import type { FaultArgs } from './driver.js';
import { type ClusterSpec } from '../run-format/cluster-record.js';
import { serverIds, type ServerId } from '../core/replica-ids.js';
import { type Credentials, type Endpoint } from '../core/endpoint.js';
import { PlbError } from '../core/errors.js';
import { ensureDataset } from './dataset.js';
import { pgConnector, type Connector } from './connector.js';
import { pgSessionCounts, type SessionCountReader } from './session-counts.js';
import { checkBasePort, portFree } from './ports.js';
import { currentWalLsn, replicaReplication, setWalReplayPaused, waitServerReady } from './pg-util.js';
import { MAX_MAX_CONNECTIONS, MIN_MAX_CONNECTIONS } from './sizing.js';
import { loadCredentials, readClusterRecord, updateClusterRecord, validateClusterName } from './state.js';
import { networkFaultMethods, type FaultMethods } from './driver.js';
import { NetFaults } from './net/net-faults.js';
import type { NetTarget } from './net/types.js';
import type { NetworkAction } from '../run-format/fault-actions.js';

/** What this host can give one server; unlimited when a driver checks a spec made elsewhere. */
export interface HostLimits {
  cpus: number;
  memoryMb: number;
}

const UNLIMITED: HostLimits = { cpus: Number.POSITIVE_INFINITY, memoryMb: Number.POSITIVE_INFINITY };

/** A CPU quota: positive, and at most the host's cores when they are known. */
export function checkCpus(name: string, n: number, max = UNLIMITED.cpus): number {
  if (!(n > 0) || n > max) {
    const limit = Number.isFinite(max) ? ` and at most ${max} (this host's cores)` : '';
    throw new PlbError('BAD_INPUT', `${name}: must be > 0${limit}, got ${n}`);
  }
  return n;
}

/** Checks every field of a spec; errors name the `cluster up` flag of the field. */
export function validateSpec(spec: ClusterSpec, host: HostLimits = UNLIMITED): void {
  validateClusterName(spec.name);
  if (!Number.isInteger(spec.replicas) || spec.replicas < 1 || spec.replicas > 32) {
    throw new PlbError('BAD_INPUT', `replicas: must be an integer from 1 to 32, got ${spec.replicas}`);
  }
  checkBasePort(spec.basePort, spec.replicas, 'base-port');
  checkCpus('cpus', spec.cpus, host.cpus);
  checkCpus('primary-cpus', spec.primaryCpus, host.cpus);
  if (
    !Number.isInteger(spec.maxConnections) ||
    spec.maxConnections < MIN_MAX_CONNECTIONS ||
    spec.maxConnections > MAX_MAX_CONNECTIONS
  ) {
    throw new PlbError(
      'BAD_INPUT',
      `max-connections: must be an integer from ${MIN_MAX_CONNECTIONS} to ${MAX_MAX_CONNECTIONS}, got ${spec.maxConnections}`,
    );
  }
  if (!Number.isInteger(spec.memoryMb) || spec.memoryMb < 64 || spec.memoryMb > host.memoryMb) {
    const range = Number.isFinite(host.memoryMb)
      ? `from 64 to ${host.memoryMb} MiB (this host's memory)`
      : 'of at least 64 MiB';
    throw new PlbError('BAD_INPUT', `memory: must be an integer ${range}, got ${spec.memoryMb}`);
  }
}

/** The settings of every server that follow from the spec (the rest are fixed per driver). */
export interface ServerSettings {
  maxConnections: number;
  sharedBuffersMb: number;
  maxWalSenders: number;
  maxReplicationSlots: number;
}

export function serverSettings(spec: ClusterSpec, sharedBuffersMaxMb: number): ServerSettings {
  return {
    maxConnections: spec.maxConnections,
    // A quarter of the memory limit, capped: the dataset is small and backends need the rest.
    sharedBuffersMb: Math.max(16, Math.min(sharedBuffersMaxMb, Math.floor(spec.memoryMb / 4))),
    // Parallel base backups each hold two senders (-X stream) next to the running standbys' one.
    maxWalSenders: 3 * spec.replicas + 4,
    maxReplicationSlots: spec.replicas + 4,
  };
}

/** What a driver knows of one server without asking postgres (its process or container). */
export interface ServerFacts {
  /** Running and not paused. */
  running: boolean;
  paused: boolean;
  cpus: number | null;
}

/**
 * The part of ClusterDriver every real driver has alike. Subclasses may override serverCheck to
 * fail a readiness wait at once when the server cannot come (its container exited).
 */
export abstract class BaseDriver {
  readonly spec: ClusterSpec;

  constructor(spec: ClusterSpec) {
    validateSpec(spec);
    this.spec = { ...spec };
  }

  /** The primary on basePort, replica i on basePort + i, all on loopback. */
  endpoints(): Endpoint[] {
    return serverIds(this.spec.replicas).map((id, i) => ({
      id,
      kind: i === 0 ? 'primary' : 'replica',
      host: '127.0.0.1',
      port: this.spec.basePort + i,
    }));
  }

  /** Network faults: rules on lo in a chain named after the cluster's id (net/net-faults.ts). */
  protected readonly net = new NetFaults(
    () => this.clusterId(),
    // The record says which are in force (`cluster status`) and what the kernel holds of them (the
    // qdisc, the delayers' pids), which `cluster down` or `up` remove after a run that could not.
    (net) =>
      updateClusterRecord(this.spec.stateDir, this.spec.name, (r) => ({
        ...r,
        extra: { ...r.extra, ...net },
      })),
    () => readClusterRecord(this.spec.stateDir, this.spec.name)?.extra,
  );

  /** The id rules are tagged with: the record's (written by `up`), else the spec's. */
  protected clusterId(): string {
    const id = readClusterRecord(this.spec.stateDir, this.spec.name)?.id ?? this.spec.id;
    if (id === undefined)
      throw new PlbError(
        'CLUSTER_NOT_FOUND',
        `cluster ${this.spec.name} has no record: run \`plb cluster up\` first`,
      );
    return id;
  }

  /**
   * What a network fault of replica `id` is scoped to: its port, and for its WAL stream the
   * primary's port and how its own packets are told apart (a driver that cannot: none).
   */
  protected async netTarget(id: ServerId): Promise<NetTarget> {
    return { port: this.endpoint(id).port, primaryPort: this.endpoint('primary').port };
  }

  /** The network fault actions, the same on every driver whose servers listen on 127.0.0.1. */
  protected networkFaults(): Pick<FaultMethods, NetworkAction | 'heal'> {
    const apply = (action: NetworkAction) => async (id: ServerId, a: FaultArgs) =>
      this.net.apply(id, await this.netTarget(id), action, a);
    return networkFaultMethods(apply, (id, a) => this.net.heal(id, a.what));
  }

  protected endpoint(id: ServerId): Endpoint {
    const ep = this.endpoints().find((e) => e.id === id);
    if (!ep) throw new PlbError('BAD_INPUT', `server: "${id}" is not a server of cluster ${this.spec.name}`);
    return ep;
  }

  async credentials(): Promise<Credentials> {
    return loadCredentials(this.spec.stateDir, this.spec.name);
  }

  connector(credentials: Credentials): Connector {
    return pgConnector(this.endpoints(), credentials);
  }

  sessionCounts(credentials: Credentials, timeoutMs: number): SessionCountReader {
    return pgSessionCounts(this.endpoints(), credentials, timeoutMs);
  }

  async prepareDataset(rows: number, log: (line: string) => void): Promise<{ loaded: boolean; ms: number }> {
    const [primary, ...replicas] = this.endpoints();
    if (!primary) throw new PlbError('CLUSTER_NOT_FOUND', 'the cluster has no primary endpoint');
    return ensureDataset(primary, replicas, await this.credentials(), rows, log);
  }

  /** WAL replay paused or resumed through SQL on the standby (the same for docker and local). */
  async setReplayPaused(id: ServerId, paused: boolean): Promise<void> {
    const ep = this.endpoint(id);
    if (ep.kind !== 'replica') throw new PlbError('BAD_INPUT', `server: "${id}" is not a standby`);
    await setWalReplayPaused(ep, await this.credentials(), paused);
  }

  /** Waits until the server accepts connections and, for a replica, streams. */
  async waitReady(id: ServerId, timeoutMs = 60_000): Promise<void> {
    await waitServerReady(this.endpoint(id), await this.credentials(), timeoutMs, this.serverCheck(id));
  }

  /** Throws when the server cannot become ready (polling would only time out); none by default. */
  protected serverCheck(_id: ServerId): (() => Promise<void>) | undefined {
    return undefined;
  }

  /**
   * Every server's status from the driver's facts (in endpoint order); postgres is asked only
   * what is running: a paused server would only time out.
   */
  protected async statusFrom(facts: readonly ServerFacts[]): Promise<ServerStatus[]> {
    const creds = await this.credentials();
    const eps = this.endpoints();
    const primary = eps[0];
    const lsn = primary && facts[0]?.running ? await currentWalLsn(primary, creds).catch(() => null) : null;
    return Promise.all(
      eps.map(async (ep, i): Promise<ServerStatus> => {
        const f = facts[i] ?? { running: false, paused: false, cpus: null };
        const base: ServerStatus = {
          id: ep.id,
          kind: ep.kind,
          port: ep.port,
          up: false,
          paused: f.paused,
          replication: null,
          lagBytes: null,
          replayLagSeconds: null,
          cpus: f.cpus,
        };
        if (!f.running) return base;
        // The primary answered the WAL position query: it accepts connections.
        if (ep.kind === 'primary') return { ...base, up: lsn !== null };
        const r = await replicaReplication(ep, creds, lsn);
        return {
          ...base,
          up: r.up,
          replication: r.replication,
          lagBytes: r.lagBytes,
          replayLagSeconds: r.replayLagSeconds,
        };
      }),
    );
  }

  /** Fails before anything is created when a port of the cluster is taken. */
  protected async checkPortsFree(): Promise<void> {
    for (const ep of this.endpoints()) {
      if (!(await portFree(ep.port))) {
        throw new PlbError('CLUSTER_UP_FAILED', `port ${ep.port} (for ${ep.id}) on 127.0.0.1 is in use`, {
          hint: 'pick another --base-port or stop what listens there',
        });
      }
    }
  }
}
