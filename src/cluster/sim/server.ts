import type { VirtualClock } from '../../clock/virtual.js';
import { Rng } from '../../core/rng.js';
import type { FaultFields, NetworkAction } from '../../run-format/fault-actions.js';
import type { DbConnection, OpenOptions } from '../connector.js';
import type { SimCalibration } from './calibration.js';
import { SimConnection } from './connection.js';
import { DeadlineQueue, type Expiring } from './deadlines.js';
import type { DemandModel } from './demand.js';
import { SimNet, SYN_RTO_MS } from './net-model.js';
import { socketError, tooManyClients } from './pg-errors.js';
import { CfsCpu, DEFAULT_CFS_PERIOD_MS, DEFAULT_HOST_CORES } from './cfs-cpu.js';
import type { CpuTask, SimCpu } from './cfs-quota.js';
import { RrCpu } from './rr-cpu.js';
import { Postmaster } from './postmaster.js';
import { deliveredCores } from './host-contention.js';

/** Salt of the network faults' streams (apart from the workload's and the demands'). */
const NET_SALT = 0x4e7;

/** What every simulated server shares: the clock, the calibration, demands, timeout queues. */
export class SimWorld {
  private readonly queues = new Map<number, DeadlineQueue>();

  constructor(
    readonly clock: VirtualClock,
    readonly cal: SimCalibration,
    readonly demand: DemandModel,
    /** The run seed: each server's network draws (loss, jitter) come from a stream of it. */
    private readonly seed = 0,
  ) {}

  /** The network faults of the server on `port`, with a random stream of its own. */
  net(port: number): SimNet {
    return new SimNet(this.clock, new Rng(this.seed).fork(NET_SALT + port));
  }

  /** Expires `x` after `ms` (one queue per length, see DeadlineQueue). */
  expireAfter(ms: number, x: Expiring, token: number): void {
    let q = this.queues.get(ms);
    if (q === undefined) {
      q = new DeadlineQueue(this.clock, ms);
      this.queues.set(ms, q);
    }
    q.add(x, token);
  }
}

/** down: not listening (refused); starting: restarting, not listening yet; up: accepting. */
export type SimState = 'up' | 'down' | 'starting';

/**
 * One simulated PostgreSQL server: a CFS CPU quota shared by its backends (CfsCpu), max_connections,
 * and the states the fault actions put it in. Its connections keep pg's behaviour: a killed
 * server resets every socket, a paused one answers nothing (connects and queries hang until their
 * timeouts), a full one refuses with 53300.
 */
export class SimServer {
  state: SimState = 'up';
  paused = false;
  /** When it last came up (replication catches up for calibration.catchUpMs after). */
  upAtMs = Number.NEGATIVE_INFINITY;
  /** Backends holding a connection slot (a backend lives until its running statement ends). */
  backends = 0;
  /** Bumped when the server dies: work of an earlier life is dropped. */
  epoch = 0;
  cpus: number;
  /** --sim-cpu pooled: the factor its quota is scaled by while others are down (SimDriver.pool). */
  private share = 1;
  readonly cpu: SimCpu;
  readonly conns = new Set<SimConnection>();
  /** Faults on its client port (they outlive a restart: they are the network's). */
  readonly net: SimNet;
  /** Connection starts that arrived while paused: the postmaster runs them on unpause. */
  private parked: (() => void)[] = [];
  /** With `connect.postmasterCpuMs`, connects are forked one at a time (postmaster.ts). */
  private readonly postmaster: Postmaster<SimConnection> | undefined;

  /**
   * Its backends by application_name, as pg_stat_activity would count them; undefined when a
   * reader could not get an answer (down, starting, paused, refusing or cut off).
   */
  backendsByName(): Map<string, number> | undefined {
    if (this.state !== 'up' || this.paused || this.net.refusing) return undefined;
    if (this.net.blocks('request') || this.net.blocks('response')) return undefined;
    const out = new Map<string, number>();
    for (const c of this.conns)
      if (c.hasBackend) out.set(c.applicationName, (out.get(c.applicationName) ?? 0) + 1);
    return out;
  }

  constructor(
    readonly world: SimWorld,
    readonly id: string,
    readonly kind: 'primary' | 'replica',
    readonly port: number,
    cpus: number,
    readonly maxConnections: number,
  ) {
    this.cpus = cpus;
    this.net = world.net(port);
    const cal = world.cal;
    const host = cal.hostCores ?? DEFAULT_HOST_CORES;
    const period = cal.cfsPeriodMs ?? DEFAULT_CFS_PERIOD_MS;
    const quota = deliveredCores(cpus, cal);
    // With a measured time slice, the kernel's slices; without, processor sharing.
    this.cpu =
      cal.sliceMs === undefined
        ? new CfsCpu(world.clock, quota, host, period)
        : new RrCpu(world.clock, quota, host, period, cal.sliceMs);
    const forkMs = cal.connect.postmasterCpuMs;
    this.postmaster =
      forkMs === undefined
        ? undefined
        : new Postmaster(this.cpu, forkMs, (c: SimConnection, epoch: number) => this.backendStart(c, epoch));
  }

  /** Opens a connection: connect latency, then a backend's start (a slot and CPU), or an error. */
  open(opts: OpenOptions): Promise<DbConnection> {
    // A reset answers the SYN with a RST: refused, as a closed port.
    if (this.state !== 'up' || this.net.refusing)
      return Promise.reject(socketError('ECONNREFUSED', this.port));
    return new Promise((resolve, reject) => {
      const c = new SimConnection(this, opts, resolve, reject);
      this.conns.add(c);
      this.world.expireAfter(opts.connectTimeoutMs, c.connecting, 0);
      const latency = this.world.cal.connect.latencyMs;
      if (this.net.active) this.dial(c, this.world.clock.now());
      else if (latency > 0) this.world.clock.after(latency, c);
      else this.startBackend(c, this.epoch);
    });
  }

  /** A connect (first SYN at `sentAt`) through the port's faults: its handshake, or held until a heal. */
  private dial(c: SimConnection, sentAt: number): void {
    if (c.state !== 'connecting') return;
    const transit = this.net.connectTransit();
    if (transit === undefined) this.net.hold(sentAt, SYN_RTO_MS, 'request', () => this.dial(c, sentAt));
    else this.world.clock.after(this.world.cal.connect.latencyMs + transit, c);
  }

  /** A network fault on the server's port (net-model.ts): a reset ends every connection now. */
  netFault(action: NetworkAction, a: FaultFields): void {
    this.net.apply(action, a);
    if (action !== 'reset') return;
    for (const c of [...this.conns]) c.reset(socketError('ECONNRESET', this.port));
  }

  startBackend(c: SimConnection, epoch: number): void {
    if (c.state !== 'connecting') return;
    if (this.epoch !== epoch || this.state !== 'up') {
      c.fail(socketError('ECONNRESET', this.port));
      return;
    }
    if (this.paused) {
      this.parked.push(() => this.startBackend(c, epoch));
      return;
    }
    if (this.postmaster !== undefined) this.postmaster.fork(c, epoch);
    else this.backendStart(c, epoch);
  }

  /** Forked: the backend takes a slot (or refuses, 53300) and authenticates on the CPU. */
  private backendStart(c: SimConnection, epoch: number): void {
    // A client that gave up while its connection waited for the fork: the backend exits at once.
    if (c.state !== 'connecting') return;
    if (this.epoch !== epoch || this.state !== 'up') {
      c.fail(socketError('ECONNRESET', this.port));
      return;
    }
    if (this.backends >= this.maxConnections) {
      c.fail(tooManyClients());
      return;
    }
    this.backends++;
    c.hasBackend = true;
    const connect = this.world.cal.connect;
    this.cpu.submitTask(Math.max(0, connect.cpuMs - (connect.postmasterCpuMs ?? 0)), c);
  }

  /** Runs one statement on the CPU; `job.cpuDone()` when served (not if the server dies first). */
  run(text: string, job: CpuTask): void {
    this.cpu.submitTask(this.world.demand.forStatement(text), job);
  }

  releaseSlot(c: SimConnection): void {
    if (!c.hasBackend) return;
    c.hasBackend = false;
    this.backends--;
  }

  /** Every connection fails with `err` (a killed or stopped server); nothing runs any more. */
  die(err: () => Error): void {
    this.state = 'down';
    this.epoch++;
    this.cpu.clear();
    this.postmaster?.clear();
    this.parked = [];
    this.backends = 0;
    const conns = [...this.conns];
    this.conns.clear();
    for (const c of conns) c.lost(err());
  }

  setPaused(paused: boolean): void {
    this.paused = paused;
    this.cpu.setFrozen(paused);
    if (!paused) {
      const parked = this.parked;
      this.parked = [];
      for (const start of parked) start();
    }
  }

  setCpus(cpus: number): void {
    this.cpus = cpus;
    this.cpu.setCores(deliveredCores(cpus, this.world.cal) * this.share);
  }

  /** Its quota times `share` from now on (the pooled host's redistribution). */
  setShare(share: number): void {
    if (share === this.share) return;
    this.share = share;
    this.cpu.setCores(deliveredCores(this.cpus, this.world.cal) * share);
  }
}
