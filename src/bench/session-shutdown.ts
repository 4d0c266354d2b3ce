/**
 * `--shutdown-sessions`: HAProxy's `on-marked-down shutdown-sessions`. The sessions' connector is
 * wrapped so that every open session connection is known by the replica it is on; when the checker
 * (or a session's failure) marks a replica down, each of its sessions is ended at once: a statement
 * in flight fails now instead of at the client's query timeout, an idle session's next one fails,
 * and the client reconnects elsewhere as after any error. Health checks do not go through it.
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
  readonly connector: Connector;

  constructor(inner: Connector) {
    this.connector = {
      open: async (server: string, opts: OpenOptions): Promise<DbConnection> => {
        const conn = await inner.open(server, opts);
        // Through a balancer in between the session is on the server it landed on.
        const at = conn.landedOn ?? server;
        const set = this.open.get(at) ?? new Set<Shuttable>();
        this.open.set(at, set);
        const s = new Shuttable(conn, opts, () => set.delete(s));
        set.add(s);
        return s.conn;
      },
    };
  }

  /** Ends every session open on `replica` at once; returns how many. */
  shutDown(replica: string): number {
    const set = this.open.get(replica);
    if (!set) return 0;
    const sessions = [...set];
    for (const s of sessions) s.shutDown(replica);
    return sessions.length;
  }
}
