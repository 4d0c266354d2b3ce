import type { TimerTask } from '../../clock/index.js';
import type { VirtualClock } from '../../clock/virtual.js';
import type { DbConnection, OpenOptions, StatementWaiter } from '../connector.js';
import type { SimCalibration } from './calibration.js';
import { DeadlineQueue, type Expiring } from './deadlines.js';
import type { DemandModel } from './demand.js';
import {
  closedClient,
  connectionTerminated,
  connectTimeout,
  notQueryable,
  queryTimeout,
  socketError,
  tooManyClients,
} from './pg-errors.js';
import { CfsCpu, DEFAULT_CFS_PERIOD_MS, DEFAULT_HOST_CORES } from './cfs-cpu.js';
import type { CpuTask, SimCpu } from './cfs-quota.js';
import { RrCpu } from './rr-cpu.js';
import { Postmaster } from './postmaster.js';
import { deliveredCores } from './host-contention.js';

/** What every simulated server shares: the clock, the calibration, demands, timeout queues. */
export class SimWorld {
  private readonly queues = new Map<number, DeadlineQueue>();

  constructor(
    readonly clock: VirtualClock,
    readonly cal: SimCalibration,
    readonly demand: DemandModel,
  ) {}

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
  readonly cpu: SimCpu;
  readonly conns = new Set<SimConnection>();
  /** Connection starts that arrived while paused: the postmaster runs them on unpause. */
  private parked: (() => void)[] = [];
  /** With `connect.postmasterCpuMs`, connects are forked one at a time (postmaster.ts). */
  private readonly postmaster: Postmaster<SimConnection> | undefined;

  constructor(
    readonly world: SimWorld,
    readonly id: string,
    readonly kind: 'primary' | 'replica',
    readonly port: number,
    cpus: number,
    readonly maxConnections: number,
  ) {
    this.cpus = cpus;
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
    if (this.state !== 'up') return Promise.reject(socketError('ECONNREFUSED', this.port));
    return new Promise((resolve, reject) => {
      const c = new SimConnection(this, opts, resolve, reject);
      this.conns.add(c);
      this.world.expireAfter(opts.connectTimeoutMs, c.connecting, 0);
      const latency = this.world.cal.connect.latencyMs;
      if (latency > 0) this.world.clock.after(latency, c);
      else this.startBackend(c, this.epoch);
    });
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
    this.cpu.setCores(deliveredCores(cpus, this.world.cal));
  }
}

/**
 * One statement of a connection: who waits for it, the protocol latency's timer and the CPU job,
 * in one object (a query costs no closures of its own). Its deadline is its connection's, by
 * `seq` (SimConnection.expire), so once served it is garbage at once.
 */
class QueryCall implements CpuTask, TimerTask {
  settled = false;
  readonly cancelled = false;

  constructor(
    private conn: SimConnection | undefined,
    readonly text: string,
    readonly epoch: number,
    private waiter: StatementWaiter | undefined,
    readonly seq: number,
  ) {}

  /**
   * Tells the waiter the statement ended (once; later calls do nothing). A failure is told after
   * the code that caused it (a server dying under every connection) has finished, as pg would.
   */
  settle(err?: Error): void {
    if (this.settled) return;
    this.settled = true;
    const waiter = this.waiter;
    if (waiter === undefined) return;
    if (err === undefined) waiter.statementDone(undefined);
    else queueMicrotask(() => waiter.statementDone(err));
  }

  /** Served: nothing calls back any more (the CPU or a timer may still hold it a while). */
  detach(): void {
    this.conn = undefined;
    this.waiter = undefined;
  }

  /** The protocol's latency has passed: the statement reaches the server's CPU. */
  onTimer(): void {
    this.conn?.submit(this);
  }

  cpuDone(): void {
    this.conn?.served(this);
  }
}

/** `query` as a promise over `run` (rows: a simulated statement always returns one). */
class PromisedStatement implements StatementWaiter {
  constructor(
    private readonly resolve: (rows: number) => void,
    private readonly reject: (err: Error) => void,
  ) {}

  statementDone(err: Error | undefined): void {
    if (err === undefined) this.resolve(1);
    else this.reject(err);
  }
}

/** A connection to a SimServer with pg's client semantics (one statement at a time). */
export class SimConnection implements DbConnection, CpuTask, TimerTask, Expiring {
  state: 'connecting' | 'open' | 'lost' | 'closed' = 'connecting';
  hasBackend = false;
  readonly cancelled = false;
  /** Statements the server is still running (a timed-out one runs on, as in PostgreSQL). */
  private running = 0;
  private pending: QueryCall | undefined;
  /** Statements issued so far: the number of the latest names its deadline. */
  private issued = 0;
  readonly connecting: Expiring & { settled: boolean };

  constructor(
    private readonly server: SimServer,
    private readonly opts: OpenOptions,
    private readonly resolveOpen: (c: DbConnection) => void,
    private readonly rejectOpen: (err: Error) => void,
  ) {
    this.connecting = {
      settled: false,
      waiting(): boolean {
        return !this.settled;
      },
      expire: () => {
        // The client gives up; a backend already started exits once it notices (when it is served).
        this.connecting.settled = true;
        this.state = 'closed';
        this.server.conns.delete(this);
        this.rejectOpen(connectTimeout());
      },
    };
  }

  /** The connect latency has passed: the server starts a backend (in its current life). */
  onTimer(): void {
    this.server.startBackend(this, this.server.epoch);
  }

  /** The connect failed before a backend answered (refused, reset, full). */
  fail(err: Error): void {
    if (this.state !== 'connecting') return;
    this.state = 'closed';
    this.connecting.settled = true;
    this.server.conns.delete(this);
    this.server.releaseSlot(this);
    this.rejectOpen(err);
  }

  /** The backend finished its start (authentication) on the CPU: the connection is open. */
  cpuDone(): void {
    this.connecting.settled = true;
    if (this.state === 'connecting') {
      this.state = 'open';
      this.resolveOpen(this);
    } else this.server.releaseSlot(this);
  }

  query(text: string): Promise<number> {
    return new Promise((resolve, reject) =>
      this.run(text, undefined, new PromisedStatement(resolve, reject)),
    );
  }

  run(text: string, _values: readonly unknown[] | undefined, waiter: StatementWaiter): void {
    if (this.state !== 'open') {
      // As pg: a failed call is told later, not from inside the call.
      const err = this.state === 'lost' ? notQueryable() : closedClient();
      queueMicrotask(() => waiter.statementDone(err));
      return;
    }
    const server = this.server;
    const world = server.world;
    const p = new QueryCall(this, text, server.epoch, waiter, ++this.issued);
    this.pending = p;
    const timeout = this.opts.queryTimeoutMs;
    if (timeout !== undefined) world.expireAfter(timeout, this, p.seq);
    // The protocol's round trip does not use the server's CPU.
    const overhead = world.cal.queryOverheadMs;
    if (overhead > 0) world.clock.after(overhead, p);
    else this.submit(p);
  }

  /** Statement `seq` is still waiting for its answer (a settled one is never pending). */
  waiting(seq: number): boolean {
    return this.pending !== undefined && this.pending.seq === seq;
  }

  /** Statement `seq`'s deadline passed: the client stops waiting (the server runs it on). */
  expire(seq: number): void {
    const p = this.pending;
    if (p === undefined || p.seq !== seq) return;
    this.pending = undefined;
    p.settle(queryTimeout());
  }

  submit(p: QueryCall): void {
    if (this.server.epoch !== p.epoch || this.state === 'lost') return;
    this.running++;
    this.server.run(p.text, p);
  }

  served(p: QueryCall): void {
    this.running--;
    if (!p.settled) {
      if (this.pending === p) this.pending = undefined;
      p.settle();
    }
    if (this.state === 'closed' && this.running === 0) this.server.releaseSlot(this);
    p.detach();
  }

  /** The server died under this connection. */
  lost(err: Error): void {
    const was = this.state;
    this.hasBackend = false;
    this.running = 0;
    if (was === 'connecting') {
      this.state = 'closed';
      this.connecting.settled = true;
      this.rejectOpen(err);
      return;
    }
    if (was !== 'open') return;
    this.state = 'lost';
    const p = this.pending;
    this.pending = undefined;
    if (p !== undefined && !p.settled) {
      p.settle(err);
    } else {
      // An idle client hears of it from its socket, as pg's 'error' event.
      const onError = this.opts.onError;
      queueMicrotask(() => onError(err));
    }
  }

  end(waitMs: number): Promise<void> {
    const was = this.state;
    if (was === 'closed') return Promise.resolve();
    this.state = 'closed';
    if (was === 'lost') return Promise.resolve();
    this.server.conns.delete(this);
    const p = this.pending;
    this.pending = undefined;
    if (p !== undefined && !p.settled) {
      p.settle(connectionTerminated());
    }
    if (this.running === 0) this.server.releaseSlot(this);
    // A paused server never answers the termination handshake: the client waits its bound.
    if (this.server.paused && waitMs > 0) return this.server.world.clock.sleep(waitMs);
    return Promise.resolve();
  }
}
