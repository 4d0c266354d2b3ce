import type { TimerTask } from '../../clock/index.js';
import type { VirtualClock } from '../../clock/virtual.js';
import type { DbConnection, OpenOptions, StatementWaiter } from '../connector.js';
import type { SimCalibration } from './calibration.js';
import type { CpuTask } from './cfs-quota.js';
import type { Expiring } from './deadlines.js';
import { DATA_RTO_MS, responseBytes, type SimNet } from './net-model.js';
import {
  closedClient,
  connectionTerminated,
  connectTimeout,
  notQueryable,
  queryTimeout,
} from './pg-errors.js';

/** What a connection needs of its server (SimServer, server.ts). */
export interface ConnectionHost {
  readonly epoch: number;
  readonly paused: boolean;
  readonly conns: Set<SimConnection>;
  readonly net: SimNet;
  readonly world: {
    readonly clock: VirtualClock;
    readonly cal: SimCalibration;
    expireAfter(ms: number, x: Expiring, token: number): void;
  };
  startBackend(c: SimConnection, epoch: number): void;
  run(text: string, job: CpuTask): void;
  releaseSlot(c: SimConnection): void;
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
  /** What pg_stat_activity would show as its application_name (the session's class). */
  get applicationName(): string {
    return this.opts.applicationName;
  }
  /** Statements the server is still running (a timed-out one runs on, as in PostgreSQL). */
  private running = 0;
  private pending: QueryCall | undefined;
  /** Statements issued so far: the number of the latest names its deadline. */
  private issued = 0;
  readonly connecting: Expiring & { settled: boolean };

  constructor(
    private readonly server: ConnectionHost,
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
    const net = this.server.net;
    // Its last answer (ReadyForQuery) cut off on the way back: the client waits on.
    if (this.state === 'connecting' && net.active && net.blocks('response')) {
      net.hold(this.server.world.clock.now(), DATA_RTO_MS, 'response', () => this.cpuDone());
      return;
    }
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
    if (server.net.active) {
      this.send(p, world.clock.now());
      return;
    }
    // The protocol's round trip does not use the server's CPU.
    const overhead = world.cal.queryOverheadMs;
    if (overhead > 0) world.clock.after(overhead, p);
    else this.submit(p);
  }

  /** The request of `p` (first sent at `sentAt`) through the replica's network faults. */
  private send(p: QueryCall, sentAt: number): void {
    if (this.pending !== p || this.state !== 'open') return;
    const { net, world } = this.server;
    const transit = net.requestTransit();
    if (transit === undefined) net.hold(sentAt, DATA_RTO_MS, 'request', () => this.send(p, sentAt));
    else world.clock.after(world.cal.queryOverheadMs + transit, p);
  }

  /** The response of `p` (first sent at `sentAt`) through the network faults, then told. */
  private answer(p: QueryCall, sentAt: number): void {
    if (p.settled) {
      p.detach();
      return;
    }
    const { net, world } = this.server;
    const transit = net.responseTransit(responseBytes(p.text));
    if (transit === undefined) {
      net.hold(sentAt, DATA_RTO_MS, 'response', () => this.answer(p, sentAt));
      return;
    }
    const told = (): void => {
      if (this.pending === p) this.pending = undefined;
      p.settle();
      p.detach();
    };
    if (transit > 0) world.clock.after(transit, told);
    else told();
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
    // The answer travels: the backend is free now, the client hears of it when it arrives.
    if (!p.settled && this.state === 'open' && this.server.net.active) {
      this.answer(p, this.server.world.clock.now());
      return;
    }
    if (!p.settled) {
      if (this.pending === p) this.pending = undefined;
      p.settle();
    }
    // A closed or reset connection's backend exits once its statement is done.
    if (this.state !== 'open' && this.running === 0) this.server.releaseSlot(this);
    p.detach();
  }

  /**
   * The replica's port reset this connection (the reset fault): the client hears of it at once,
   * the backend exits when it next writes (at once when idle).
   */
  reset(err: Error): void {
    if (this.state === 'connecting') {
      this.fail(err);
      return;
    }
    if (this.state !== 'open') return;
    this.state = 'lost';
    this.server.conns.delete(this);
    if (this.running === 0) this.server.releaseSlot(this);
    const p = this.pending;
    this.pending = undefined;
    if (p !== undefined && !p.settled) p.settle(err);
    else {
      const onError = this.opts.onError;
      queueMicrotask(() => onError(err));
    }
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
    const clock = this.server.world.clock;
    if (this.server.paused && waitMs > 0) return clock.sleep(waitMs);
    // Nor does a partitioned one; a delayed one answers a round trip later.
    const net = this.server.net;
    const wait = net.active && waitMs > 0 ? net.closeWaitMs(waitMs) : 0;
    return wait > 0 ? clock.sleep(wait) : Promise.resolve();
  }
}
