import type pg from 'pg';
import type { ConnectionOptions } from 'node:tls';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import { pgModule } from './pg-util.js';

export interface OpenOptions {
  /** Connect + authentication must finish within this (ms). */
  connectTimeoutMs: number;
  /** A query unanswered this long fails (ms; none when absent). */
  queryTimeoutMs?: number;
  applicationName: string;
  /** An idle connection failed (its server went away): without a listener that would crash the run. */
  onError: (err: Error) => void;
  /** TLS to the server with these options (absent: plain TCP). */
  ssl?: ConnectionOptions | undefined;
}

/** Hears a statement's end without a promise: `err` undefined when it succeeded. */
export interface StatementWaiter {
  statementDone(err: Error | undefined): void;
}

/** One open connection to one server. */
export interface DbConnection {
  /** Runs a statement; resolves with its row count. */
  query(text: string, values?: readonly unknown[]): Promise<number>;
  /**
   * Runs a statement and tells `waiter` when it ends (never synchronously on success). Optional:
   * a simulated connection has it, so a simulated query costs no promise and no microtask.
   */
  run?(text: string, values: readonly unknown[] | undefined, waiter: StatementWaiter): void;
  /** Ends it, waiting at most `waitMs` for a graceful end (0: drop at once). Never rejects. */
  end(waitMs: number): Promise<void>;
  /**
   * The server this connection landed on, when not the one asked for: an external balancer in
   * between chose it (`--strategy via`). Absent when the connector went where it was told.
   */
  readonly landedOn?: string;
}

/**
 * How the bench reaches a server: over pg to a real cluster (pgConnector), or to a simulated
 * replica (cluster/sim). Errors keep pg's shapes (SQLSTATE `code` + `severity` for server
 * errors, errno codes for sockets) so failure-cause.ts classifies both alike.
 */
export interface Connector {
  open(server: string, opts: OpenOptions): Promise<DbConnection>;
}

/**
 * A server-side error about the statement (it leaves the session usable): it has a SQLSTATE and
 * a severity, and is not one of 57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect
 * now, or an 08xxx connection error.
 */
export function isStatementError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const { code, severity } = err as { code?: unknown; severity?: unknown };
  if (typeof code !== 'string' || typeof severity !== 'string') return false;
  return !code.startsWith('57P') && !code.startsWith('08');
}

/** Connections over pg to a cluster's endpoints. */
export function pgConnector(endpoints: readonly Endpoint[], creds: Credentials): Connector {
  const byId = new Map(endpoints.map((e) => [e.id, e] as const));
  return {
    async open(server, opts) {
      const ep = byId.get(server);
      if (ep === undefined) throw new Error(`no endpoint for ${server}`);
      return pgConnection(await openPgClient(ep, creds, opts));
    },
  };
}

/** A connected pg client to host:port (ended again when the connect fails). */
export async function openPgClient(
  at: { host: string; port: number },
  creds: Credentials,
  opts: OpenOptions,
): Promise<pg.Client> {
  const { Client } = await pgModule();
  const client = new Client({
    host: at.host,
    port: at.port,
    user: creds.user,
    password: creds.password,
    database: creds.database,
    connectionTimeoutMillis: opts.connectTimeoutMs,
    ...(opts.queryTimeoutMs !== undefined ? { query_timeout: opts.queryTimeoutMs } : {}),
    application_name: opts.applicationName,
    ...(opts.ssl ? { ssl: opts.ssl } : {}),
  });
  client.on('error', opts.onError);
  try {
    await client.connect();
  } catch (err) {
    await endBounded(client, 0);
    throw err;
  }
  return client;
}

/** A connected pg client as a DbConnection; `landedOn` when a balancer chose the server. */
export function pgConnection(client: pg.Client, landedOn?: string): DbConnection {
  return {
    ...(landedOn !== undefined ? { landedOn } : {}),
    query: async (text, values) => (await client.query({ text, values: values as unknown[] })).rowCount ?? 0,
    end: (waitMs) => endBounded(client, waitMs),
  };
}

/** Ends a pg client, bounded: a paused server never answers the termination handshake. */
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
