import { asError, PlbError } from '../core/errors.js';
import { classApplicationName, type ServiceClass } from '../core/service-class.js';
import {
  isStatementError,
  type Connector,
  type DbConnection,
  type StatementWaiter,
} from '../cluster/connector.js';
import type { SessionRouter } from '../router/types.js';
import type { AdmissionWaiter } from './admission-wait.js';

/** What the data source needs of a router: admission and release (see src/router). */
export interface DataSourceOptions {
  router: Pick<SessionRouter, 'admit' | 'release' | 'landed'>;
  /** Opens connections to replicas (pg, or simulated ones). */
  connector: Connector;
  connectTimeoutMs: number;
  queryTimeoutMs: number;
  /** Run clock (ms). */
  now: () => number;
  /** A connection attempt failed: passive health signal. */
  onConnectError?: (replica: string, err: Error) => void;
  /** An open session's connection broke (server gone): passive health signal. */
  onSessionError?: (replica: string, err: Error) => void;
  /** plb-admit / lc-queue: sessions wait here for a slot; told of every release and query latency. */
  admission?: AdmissionWaiter;
}

/**
 * A JDBC-like DataSource over pg and the router: `getConnection({class})` asks the router for a
 * replica once, and the connection stays pinned to it for its whole life (session-level,
 * non-migratory routing). `close()` releases the slot in the router, exactly once.
 */
export class DataSource {
  constructor(private readonly opts: DataSourceOptions) {}

  /** Sessions pass an admission queue (their queue time is recorded). */
  get queueing(): boolean {
    return this.opts.admission !== undefined;
  }

  async getConnection(req: { class: ServiceClass; zone?: string }): Promise<PinnedConnection> {
    const cls = req.class;
    let replica: string;
    let queueMs = 0;
    if (this.opts.admission) ({ replica, queueMs } = await this.opts.admission.acquire(cls));
    else ({ replica } = this.opts.router.admit(cls, this.opts.now(), req.zone));
    const conn = new PinnedConnection(replica, cls, this.opts.now(), this.opts);
    conn.queueMs = queueMs;
    try {
      await conn.open();
    } catch (err) {
      const e = asError(err);
      conn.markBroken();
      await conn.close();
      this.opts.onConnectError?.(replica, e);
      throw new PlbError('CONNECT_FAILED', `connect to ${replica} failed: ${e.message}`, { cause: e });
    }
    return conn;
  }
}

export class PinnedConnection {
  private closed = false;
  /** The server the session is on: the router's choice, or where a balancer in between put it. */
  private at: string;
  private broken = false;
  /** Connect + authentication, ms (its own metric: not part of any query's latency). */
  connectMs = 0;
  /** Time the session waited in the admission queue before it had a replica, ms (its own metric). */
  queueMs = 0;

  private conn: DbConnection | undefined;

  constructor(
    replica: string,
    readonly cls: ServiceClass,
    readonly openedMs: number,
    private readonly opts: DataSourceOptions,
  ) {
    this.at = replica;
  }

  get replica(): string {
    return this.at;
  }

  /** Connects (the router already chose the replica); connectMs is measured here. */
  async open(): Promise<void> {
    this.conn = await this.opts.connector.open(this.at, {
      connectTimeoutMs: this.opts.connectTimeoutMs,
      queryTimeoutMs: this.opts.queryTimeoutMs,
      applicationName: classApplicationName(this.cls),
      onError: (err) => {
        if (this.broken || this.closed) return;
        this.broken = true;
        this.opts.onSessionError?.(this.replica, err);
      },
    });
    const server = this.conn.landedOn;
    if (server !== undefined && server !== this.at) {
      this.opts.router.landed?.(this.at, server, this.cls, this.opts.now());
      this.at = server;
    }
    this.connectMs = this.opts.now() - this.openedMs;
  }

  get isBroken(): boolean {
    return this.broken;
  }

  markBroken(): void {
    this.broken = true;
  }

  /**
   * Runs a statement on the pinned connection and tells `waiter` when it ends (one at a time).
   * A callback rather than a promise: it is on every simulated query's path, where a promise, its
   * reactions and their microtasks would cost more than the simulated query itself.
   */
  run(text: string, values: unknown[], waiter: StatementWaiter): void {
    const conn = this.conn;
    if (this.closed || conn === undefined) {
      const err = new PlbError('SESSION_FAILED', `session on ${this.replica} is not open`);
      queueMicrotask(() => waiter.statementDone(err));
      return;
    }
    this.waiter = waiter;
    this.startMs = this.opts.now();
    if (conn.run !== undefined) {
      try {
        conn.run(text, values, this);
      } catch (err) {
        this.statementDone(asError(err));
      }
      return;
    }
    conn.query(text, values).then(this.onRows, this.onQueryError);
  }

  private waiter: StatementWaiter | undefined;
  private startMs = 0;
  private readonly onRows = (): void => this.statementDone(undefined);
  private readonly onQueryError = (err: unknown): void => this.statementDone(asError(err));

  /** The connection's statement ended: observed by admission, a failure mapped (failed below). */
  statementDone(err: Error | undefined): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    if (waiter === undefined) return;
    if (err !== undefined) {
      waiter.statementDone(this.failed(err));
      return;
    }
    this.opts.admission?.observe(this.cls, this.at, this.opts.now() - this.startMs);
    waiter.statementDone(undefined);
  }

  /** The error a failed query raises; a lost connection or timeout also marks the session broken. */
  private failed(err: unknown): PlbError {
    const e = asError(err);
    // A server-side statement error keeps the session usable; a lost connection or timeout does not.
    if (!isStatementError(err)) {
      if (!this.broken) {
        this.broken = true;
        this.opts.onSessionError?.(this.replica, e);
      }
    }
    return new PlbError('SESSION_FAILED', `query on ${this.replica} failed: ${e.message}`, { cause: e });
  }

  /** Ends the connection (bounded wait: a paused server never answers) and releases it in the router. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.opts.router.release(this.replica, this.cls, this.opts.now());
    this.opts.admission?.released();
    await this.conn?.end(this.broken ? 0 : 1000);
  }
}
