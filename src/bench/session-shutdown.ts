/**
 * `--shutdown-sessions`: HAProxy's `on-marked-down shutdown-sessions`. The sessions' connector is
 * wrapped so that every open session connection is known by the replica it is on; when the checker
 * (or a session's failure) marks a replica down, each of its sessions is ended at once: a statement
 * in flight fails now instead of at the client's query timeout, an idle session's next one fails,
 * and the client reconnects elsewhere as after any error; a connect to it under way fails at once
 * too. Health checks do not go through it.
 */
import type { Connector, DbConnection, OpenOptions, StatementWaiter } from '../cluster/connector.js';
import { PlbError } from '../core/errors.js';

/** The error a shut down session's statement fails with (never a passive signal of its replica). */
export class SessionShutdownError extends PlbError {
  constructor(replica: string) {
    super('SESSION_FAILED', `session shut down: ${replica} was marked down (--shutdown-sessions)`);
  }
}

/** One session connection: its statement in flight fails at once when the session is shut down. */
class Shuttable {
  private inFlight: ((err: Error) => void) | undefined;
  private shutError: Error | undefined;
  private ended = false;
  readonly conn: DbConnection;

  constructor(
    private readonly inner: DbConnection,
    private readonly opts: OpenOptions,
    private readonly forget: () => void,
  ) {
    const run = inner.run?.bind(inner);
    this.conn = {
      ...(inner.landedOn !== undefined ? { landedOn: inner.landedOn } : {}),
      query: (text, values) => this.query(text, values),
      ...(run ? { run: (text, values, waiter) => this.run(run, text, values, waiter) } : {}),
      end: (waitMs) => this.end(waitMs),
    };
  }

  private query(text: string, values: readonly unknown[] | undefined): Promise<number> {
    if (this.shutError) return Promise.reject(this.shutError);
    return new Promise<number>((resolve, reject) => {
      const settle = this.track(reject);
      this.inner.query(text, values).then(
        (n) => {
          if (settle()) resolve(n);
        },
        (err: unknown) => {
          if (settle()) reject(err);
        },
      );
    });
  }

  private run(
    run: NonNullable<DbConnection['run']>,
    text: string,
    values: readonly unknown[] | undefined,
    waiter: StatementWaiter,
  ): void {
    const shut = this.shutError;
    if (shut) {
      queueMicrotask(() => waiter.statementDone(shut));
      return;
    }
    const settle = this.track((err) => waiter.statementDone(err));
    run(text, values, {
      statementDone: (err) => {
        if (settle()) waiter.statementDone(err);
      },
    });
  }

  /** The statement now in flight; the returned function says whether it still has to be answered. */
  private track(fail: (err: Error) => void): () => boolean {
    let open = true;
    this.inFlight = (err) => {
      open = false;
      fail(err);
    };
    return () => {
      if (!open) return false;
      open = false;
      this.inFlight = undefined;
      return true;
    };
  }

  /** Ends the session now: the statement in flight fails, an idle session hears of it at once. */
  shutDown(replica: string): void {
    if (this.shutError || this.ended) return;
    const err = new SessionShutdownError(replica);
    this.shutError = err;
    const inFlight = this.inFlight;
    this.inFlight = undefined;
    if (inFlight) inFlight(err);
    else this.opts.onError(err);
    void this.end(0);
  }

  private async end(waitMs: number): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.forget();
    await this.inner.end(this.shutError ? 0 : waitMs);
  }
}

/** The sessions' connector, and the shutdown of every session on a replica. */
export class SessionShutdown {
  private readonly open = new Map<string, Set<Shuttable>>();
  /** Connects under way, by the server asked for: a shutdown fails them at once too. */
  private readonly connecting = new Map<string, Set<(err: Error) => void>>();
  readonly connector: Connector;

  constructor(inner: Connector) {
    this.connector = { open: (server, opts) => this.openOne(inner, server, opts) };
  }

  private openOne(inner: Connector, server: string, opts: OpenOptions): Promise<DbConnection> {
    const pending = setOf(this.connecting, server);
    return new Promise<DbConnection>((resolve, reject) => {
      let waiting = true;
      const fail = (err: Error): void => {
        waiting = false;
        pending.delete(fail);
        reject(err);
      };
      pending.add(fail);
      inner.open(server, opts).then(
        (conn) => {
          pending.delete(fail);
          // Shut down while it connected: the connection that came too late is dropped.
          if (!waiting) return void conn.end(0);
          waiting = false;
          // Through a balancer in between the session is on the server it landed on.
          const set = setOf(this.open, conn.landedOn ?? server);
          const s = new Shuttable(conn, opts, () => set.delete(s));
          set.add(s);
          resolve(s.conn);
        },
        (err: unknown) => {
          pending.delete(fail);
          if (!waiting) return;
          waiting = false;
          reject(err);
        },
      );
    });
  }

  /** Ends every session open on `replica`, and every connect to it under way, at once. */
  shutDown(replica: string): { sessions: number; connects: number } {
    const sessions = [...(this.open.get(replica) ?? [])];
    for (const s of sessions) s.shutDown(replica);
    const connects = [...(this.connecting.get(replica) ?? [])];
    for (const fail of connects) fail(new SessionShutdownError(replica));
    return { sessions: sessions.length, connects: connects.length };
  }
}

function setOf<T>(map: Map<string, Set<T>>, key: string): Set<T> {
  let set = map.get(key);
  if (set === undefined) {
    set = new Set<T>();
    map.set(key, set);
  }
  return set;
}
