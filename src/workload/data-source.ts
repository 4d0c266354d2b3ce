import pg from 'pg';
import { PlbError } from '../errors.js';
import type { Credentials } from '../cluster/driver.js';
import type { ServiceClass } from '../router/types.js';

/** What the data source needs of a router: admission and release (see src/router). */
export interface AdmissionControl {
  admit(cls: ServiceClass, nowMs: number): { replica: string };
  release(replica: string, cls: ServiceClass, nowMs: number): void;
}

export interface DataSourceOptions {
  router: AdmissionControl;
  /** Replica id -> loopback port. */
  ports: ReadonlyMap<string, number>;
  credentials: Credentials;
  connectTimeoutMs: number;
  queryTimeoutMs: number;
  /** Run clock (ms). */
  now: () => number;
  /** A connection attempt failed: passive health signal. */
  onConnectError?: (replica: string, err: Error) => void;
  /** An open session's connection broke (server gone): passive health signal. */
  onSessionError?: (replica: string, err: Error) => void;
}

/**
 * A JDBC-like DataSource over pg and the router: `getConnection({class})` asks the router for a
 * replica once, and the connection stays pinned to it for its whole life (session-level,
 * non-migratory routing). `close()` releases the slot in the router, exactly once.
 */
export class DataSource {
  constructor(private readonly opts: DataSourceOptions) {}

  async getConnection(req: { class: ServiceClass }): Promise<PinnedConnection> {
    const cls = req.class;
    const { replica } = this.opts.router.admit(cls, this.opts.now());
    const port = this.opts.ports.get(replica);
    if (port === undefined) {
      this.opts.router.release(replica, cls, this.opts.now());
      throw new PlbError('INTERNAL', `router chose unknown replica ${replica}`);
    }
    const client = new pg.Client({
      host: '127.0.0.1',
      port,
      user: this.opts.credentials.user,
      password: this.opts.credentials.password,
      database: this.opts.credentials.database,
      connectionTimeoutMillis: this.opts.connectTimeoutMs,
      query_timeout: this.opts.queryTimeoutMs,
      application_name: `plb-${cls}`,
    });
    const conn = new PinnedConnection(client, replica, cls, this.opts.now(), this.opts);
    try {
      await client.connect();
      conn.connectMs = this.opts.now() - conn.openedMs;
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
  private broken = false;
  /** Connect + authentication, ms (its own metric: not part of any query's latency). */
  connectMs = 0;

  constructor(
    private readonly client: pg.Client,
    readonly replica: string,
    readonly cls: ServiceClass,
    readonly openedMs: number,
    private readonly opts: DataSourceOptions,
  ) {
    // A dying server emits 'error' on an idle client; without a listener that would crash the run.
    client.on('error', (err) => {
      if (this.broken || this.closed) return;
      this.broken = true;
      opts.onSessionError?.(replica, err);
    });
  }

  get isBroken(): boolean {
    return this.broken;
  }

  markBroken(): void {
    this.broken = true;
  }

  async query(text: string, values: unknown[]): Promise<number> {
    if (this.closed) throw new PlbError('SESSION_FAILED', `session on ${this.replica} is closed`);
    try {
      const res = await this.client.query({ text, values });
      return res.rowCount ?? 0;
    } catch (err) {
      const e = asError(err);
      // A server-side statement error keeps the session usable; a lost connection or timeout does not.
      if (!(err instanceof pg.DatabaseError) || isFatalSqlState(err.code)) {
        if (!this.broken) {
          this.broken = true;
          this.opts.onSessionError?.(this.replica, e);
        }
      }
      throw new PlbError('SESSION_FAILED', `query on ${this.replica} failed: ${e.message}`, { cause: e });
    }
  }

  /** Ends the connection (bounded wait: a paused server never answers) and releases it in the router. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.opts.router.release(this.replica, this.cls, this.opts.now());
    await endBounded(this.client, this.broken ? 0 : 1000);
  }
}

/** 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect now, 08xxx connection errors. */
function isFatalSqlState(code: string | undefined): boolean {
  return code === undefined || code.startsWith('57P') || code.startsWith('08');
}

async function endBounded(client: pg.Client, waitMs: number): Promise<void> {
  const destroy = (): void => {
    // pg keeps the socket on `connection.stream`; destroying it frees a connection to a dead server.
    const conn = (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection;
    conn?.stream?.destroy();
  };
  if (waitMs <= 0) {
    destroy();
    client.end().catch(() => undefined);
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    client.end().catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        destroy();
        resolve();
      }, waitMs);
    }),
  ]);
  if (timer) clearTimeout(timer);
}

export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
