import type { VirtualClock } from '../../clock/virtual.js';
import { PlbError } from '../../core/errors.js';
import type { Connector } from '../connector.js';
import { countsOfRows, type SessionCountReader } from '../session-counts.js';
import {
  faultsByOperation,
  networkFaultMethods,
  type ClusterDriver,
  type FaultMethods,
  type ServerStatus,
} from '../driver.js';
import type { FaultFields, NetworkAction } from '../../run-format/fault-actions.js';
import type { ClusterSpec } from '../../run-format/cluster-record.js';
import type { Credentials, Endpoint } from '../../core/endpoint.js';
import type { ServerId } from '../../core/replica-ids.js';
import type { SimCalibration } from './calibration.js';
import { DemandModel } from './demand.js';
import { adminShutdown, socketError } from './pg-errors.js';
import { SimServer, SimWorld } from './server.js';

/**
 * A cluster of simulated replicas in virtual time (`--driver sim`): it lives only inside its
 * bench (no processes, no state record). Every delay is on the given clock; nothing awaits I/O.
 */
export class SimDriver implements ClusterDriver {
  readonly kind = 'sim' as const;
  /** The model enforces every quota exactly. */
  readonly cpusEnforced = true;
  private readonly servers = new Map<ServerId, SimServer>();
  /** Restarts under way (start() of a server that is starting waits for the same one). */
  private readonly starting = new Map<ServerId, Promise<void>>();
  /** The plan's fault actions, through this driver's operations. */
  readonly faults: FaultMethods = { ...faultsByOperation(this), ...this.networkFaults() };

  constructor(
    readonly spec: ClusterSpec,
    readonly clock: VirtualClock,
    readonly calibration: SimCalibration,
    /** Where the calibration came from (config.json records it). */
    readonly calibrationPath = '(given)',
    seed = 0,
    /**
     * quota: each replica its own CFS quota, whatever the others do. pooled: the replicas' quotas
     * are one budget shared by those up (a host without per-replica quotas, where a dead
     * replica's CPU goes to the survivors); a down, restarting or paused replica has none.
     */
    readonly cpuPool: 'quota' | 'pooled' = 'quota',
  ) {
    this.build(seed);
  }

  /** Every server new and up, at full quota, no backend, no CPU used; demands from `seed`. */
  private build(seed: number): void {
    const world = new SimWorld(this.clock, this.calibration, new DemandModel(this.calibration, seed), seed);
    const { spec } = this;
    const add = (id: string, kind: 'primary' | 'replica', port: number, cpus: number): void => {
      this.servers.set(id, new SimServer(world, id, kind, port, cpus, spec.maxConnections));
    };
    this.servers.clear();
    this.starting.clear();
    add('primary', 'primary', spec.basePort, spec.primaryCpus);
    for (let i = 1; i <= spec.replicas; i++) add(`r${i}`, 'replica', spec.basePort + i, spec.cpus);
  }

  /**
   * A run starts on a cluster of its own at virtual time 0: new servers, and the clock restarted,
   * so nothing of the previous run (sessions outliving its wind-down, their sleeps and queries)
   * goes on into this one. A run of a series is then the same run as alone with its seed.
   */
  beginRun(seed: number): void {
    this.clock.restart();
    this.build(seed);
  }

  up(): Promise<void> {
    return Promise.resolve();
  }

  down(): Promise<void> {
    return Promise.resolve();
  }

  status(): Promise<ServerStatus[]> {
    const now = this.clock.now();
    return Promise.resolve(
      [...this.servers.values()].map((s) => {
        const up = s.state === 'up';
        const replica = s.kind === 'replica';
        const streaming = now >= s.upAtMs + this.calibration.catchUpMs;
        // No WAL in the model: a cut WAL stream shows as staleness since the cut, bytes unknown.
        const stale = replica ? s.net.stalenessS() : undefined;
        return {
          id: s.id,
          kind: s.kind,
          port: s.port,
          up,
          paused: s.paused,
          replication: replica && up ? (streaming ? 'streaming' : 'catchup') : null,
          lagBytes: replica && up && stale === undefined ? 0 : null,
          replayLagSeconds: replica && up ? (stale ?? 0) : null,
          cpus: s.cpus,
        };
      }),
    );
  }

  endpoints(): Endpoint[] {
    return [...this.servers.values()].map((s) => ({
      id: s.id,
      kind: s.kind,
      host: '127.0.0.1' as const,
      port: s.port,
    }));
  }

  credentials(): Promise<Credentials> {
    return Promise.resolve({ user: 'plb', password: 'sim', database: 'plb' });
  }

  /** The network faults, modelled on each server's client port (net-model.ts). */
  private networkFaults(): Pick<FaultMethods, NetworkAction | 'heal'> {
    const apply = (action: NetworkAction) => (id: ServerId, a: FaultFields) => {
      this.server(id).netFault(action, a);
      return Promise.resolve();
    };
    return networkFaultMethods(apply, (id, a) => {
      this.server(id).net.heal(a.what);
      return Promise.resolve();
    });
  }

  /** SIGKILL: every backend's socket resets. */
  kill(id: ServerId): Promise<void> {
    const s = this.server(id);
    if (s.state !== 'down') s.die(() => socketError('ECONNRESET', s.port));
    this.pool();
    return Promise.resolve();
  }

  /** Fast shutdown: every backend is told 57P01. */
  stop(id: ServerId): Promise<void> {
    const s = this.server(id);
    if (s.state !== 'down') s.die(adminShutdown);
    this.pool();
    return Promise.resolve();
  }

  /**
   * --sim-cpu pooled: the replicas' quotas summed, shared by the replicas up and not paused in
   * proportion to their own quotas. Nothing with per-replica quotas (the default).
   */
  private pool(): void {
    if (this.cpuPool !== 'pooled') return;
    const replicas = [...this.servers.values()].filter((s) => s.kind === 'replica');
    const live = replicas.filter((s) => s.state === 'up' && !s.paused);
    const total = replicas.reduce((a, s) => a + s.cpus, 0);
    const held = live.reduce((a, s) => a + s.cpus, 0);
    for (const s of live) s.setShare(held > 0 ? total / held : 1);
  }

  /** Accepts connections after calibration.restartMs, streams again catchUpMs later. */
  start(id: ServerId): Promise<void> {
    const s = this.server(id);
    if (s.state === 'up') return Promise.resolve();
    const under = this.starting.get(id);
    if (under) return under;
    s.state = 'starting';
    const epoch = s.epoch;
    const p = this.clock.sleep(this.calibration.restartMs).then(() => {
      this.starting.delete(id);
      // Killed again while it was starting: that start is void.
      if (s.epoch !== epoch || s.state !== 'starting') return;
      s.state = 'up';
      s.upAtMs = this.clock.now();
      this.pool();
    });
    this.starting.set(id, p);
    return p;
  }

  pause(id: ServerId): Promise<void> {
    this.server(id).setPaused(true);
    this.pool();
    return Promise.resolve();
  }

  unpause(id: ServerId): Promise<void> {
    this.server(id).setPaused(false);
    this.pool();
    return Promise.resolve();
  }

  setCpus(id: ServerId, cpus: number): Promise<void> {
    if (!(cpus > 0)) throw new PlbError('BAD_INPUT', `cpus: must be > 0, got ${cpus}`);
    this.server(id).setCpus(cpus);
    this.pool();
    return Promise.resolve();
  }

  /** The model has no WAL: replication lag is not simulated (a bench refuses such plans up front). */
  setReplayPaused(_id: ServerId, _paused: boolean): Promise<void> {
    return Promise.reject(
      new PlbError(
        'BAD_INPUT',
        'pause-replay/resume-replay: the simulated cluster does not model replication lag',
      ),
    );
  }

  /** CPU each server used so far, from the model (a down server's count stands still). */
  cpuSeconds(): Promise<Record<ServerId, number>> {
    const out: Record<ServerId, number> = {};
    for (const s of this.servers.values()) out[s.id] = s.cpu.cpuMs() / 1000;
    return Promise.resolve(out);
  }

  connector(): Connector {
    return {
      open: (server, opts) => {
        const s = this.servers.get(server);
        if (s === undefined) return Promise.reject(new Error(`no endpoint for ${server}`));
        return s.open(opts);
      },
    };
  }

  /**
   * The `replica` view's reads: each server's backends by class at the moment of the read (no
   * connection of its own, no time taken); a server a real reader could not reach rejects.
   */
  sessionCounts(): SessionCountReader {
    return {
      connectionsPerReplica: 1,
      read: (replica) => {
        const byName = this.servers.get(replica)?.backendsByName();
        if (byName === undefined) return Promise.reject(new Error(`${replica} does not answer`));
        return Promise.resolve(
          countsOfRows([...byName].map(([application_name, n]) => ({ application_name, n }))),
        );
      },
      close: () => Promise.resolve(),
    };
  }

  /** The simulated servers have every dataset already. */
  prepareDataset(): Promise<{ loaded: boolean; ms: number }> {
    return Promise.resolve({ loaded: false, ms: 0 });
  }

  async waitReady(id: ServerId): Promise<void> {
    const s = this.server(id);
    if (s.state === 'starting') await this.starting.get(id);
  }

  private server(id: ServerId): SimServer {
    const s = this.servers.get(id);
    if (s === undefined)
      throw new PlbError('BAD_INPUT', `no server ${id} in simulated cluster ${this.spec.name}`);
    return s;
  }
}
