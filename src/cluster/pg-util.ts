/**
 * Small pg helpers shared by both drivers and the benchmark runner: connect with a timeout and an
 * 'error' listener, readiness waits, replication status, slots. Never logs credentials.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import { errorText, PlbError } from '../core/errors.js';

/** Anything with a host and port (an Endpoint or a bare address). */
export interface PgAddress {
  host: string;
  port: number;
}

export interface ConnectOptions {
  /** Connect timeout, ms (default 5000). */
  timeoutMs?: number;
  /** Server-side statement_timeout, ms (default none). */
  statementTimeoutMs?: number;
  /** Client-side query timeout, ms: also fires when the server is paused (default none). */
  queryTimeoutMs?: number;
  database?: string;
  applicationName?: string;
  /** Called for errors emitted after connect (server gone etc.); default ignores them. */
  onError?: (err: Error) => void;
}

/** pg, loaded at the first connect: a simulated bench never needs it (its import costs ~70 ms). */
export async function pgModule(): Promise<typeof pg> {
  return (await import('pg')).default;
}

/** Opens a pg Client; it always has an 'error' listener so a dying server cannot crash the process. */
export async function connect(
  addr: PgAddress,
  creds: Credentials,
  opts: ConnectOptions = {},
): Promise<pg.Client> {
  const { Client } = await pgModule();
  const client = new Client({
    host: addr.host,
    port: addr.port,
    user: creds.user,
    password: creds.password,
    database: opts.database ?? creds.database,
    connectionTimeoutMillis: opts.timeoutMs ?? 5000,
    application_name: opts.applicationName ?? 'plb',
    ...(opts.statementTimeoutMs !== undefined ? { statement_timeout: opts.statementTimeoutMs } : {}),
    ...(opts.queryTimeoutMs !== undefined ? { query_timeout: opts.queryTimeoutMs } : {}),
  });
  client.on('error', opts.onError ?? (() => undefined));
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
  return client;
}

/** Runs fn with a fresh client and always closes it. */
export async function withClient<T>(
  addr: PgAddress,
  creds: Credentials,
  fn: (c: pg.Client) => Promise<T>,
  opts: ConnectOptions = {},
): Promise<T> {
  const c = await connect(addr, creds, opts);
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

function where(addr: PgAddress): string {
  return `${addr.host}:${addr.port}`;
}

const POLL_INTERVAL_MS = 200;

/**
 * Polls until cond() returns true; throws PlbError TIMEOUT (last error as cause) after timeoutMs.
 * Errors from cond count as "not yet"; errors from `check` (run before each try: is the server
 * still there to wait for?) end the wait at once.
 */
export async function pollUntil(
  what: string,
  cond: () => Promise<boolean>,
  timeoutMs: number,
  check?: () => Promise<void>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    await check?.();
    try {
      if (await cond()) return;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      const detail = last === undefined ? '' : `: ${errorText(last)}`;
      throw new PlbError(
        'TIMEOUT',
        `timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}${detail}`,
        { cause: last },
      );
    }
    await sleep(POLL_INTERVAL_MS);
  }
}

/**
 * Waits until the server accepts connections and, for a replica, its WAL receiver streams: what
 * "ready" means for up, start (rejoin) and the drivers' waitReady.
 */
export async function waitServerReady(
  ep: Endpoint,
  creds: Credentials,
  timeoutMs: number,
  check?: () => Promise<void>,
): Promise<void> {
  await pollUntil(
    `${ep.id} (${where(ep)}) to accept connections${ep.kind === 'replica' ? ' and stream' : ''}`,
    async () => {
      const status = await withClient(
        ep,
        creds,
        async (c) => {
          const r = await c.query<{ st: string | null }>(
            'select (select status from pg_stat_wal_receiver limit 1) as st',
          );
          return r.rows[0]?.st ?? null;
        },
        { timeoutMs: 2000, queryTimeoutMs: 2000 },
      );
      if (ep.kind === 'primary' || status === 'streaming') return true;
      throw new Error(`replication ${status ?? 'not started'}`);
    },
    timeoutMs,
    check,
  );
}

/** Waits until the server accepts connections and answers a query. */
export async function waitAccepting(addr: PgAddress, creds: Credentials, timeoutMs = 60_000): Promise<void> {
  await pollUntil(
    `${where(addr)} to accept connections`,
    async () => {
      await withClient(addr, creds, (c) => c.query('select 1'), { timeoutMs: 2000, queryTimeoutMs: 2000 });
      return true;
    },
    timeoutMs,
  );
}

/** The primary's current WAL position, e.g. '0/3000148'. */
export async function currentWalLsn(primary: PgAddress, creds: Credentials): Promise<string> {
  return withClient(
    primary,
    creds,
    async (c) => {
      const r = await c.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn');
      const lsn = r.rows[0]?.lsn;
      if (!lsn) throw new PlbError('INTERNAL', `no WAL position from ${where(primary)}`);
      return lsn;
    },
    { timeoutMs: 3000, queryTimeoutMs: 3000 },
  );
}

export interface ReplicaReplication {
  id: string;
  /** Connected and answered. */
  up: boolean;
  /** pg_stat_wal_receiver.status ('streaming', 'catchup', ...) or null (no receiver / unknown). */
  replication: string | null;
  /** Bytes the standby's replay is behind the primary's current LSN; null when unknown. */
  lagBytes: number | null;
  /** Seconds since the last replayed commit, 0 when replay has caught up with receive; null unknown. */
  replayLagSeconds: number | null;
}

/** One standby's view, given the primary's LSN (null when the primary could not be asked). */
export async function replicaReplication(
  replica: Endpoint,
  creds: Credentials,
  primaryLsn: string | null,
  timeoutMs = 3000,
): Promise<ReplicaReplication> {
  try {
    return await withClient(
      replica,
      creds,
      async (c) => {
        const r = await c.query<{ status: string | null; lag: string | null; secs: string | number | null }>(
          `select (select status from pg_stat_wal_receiver limit 1) as status,
                  case when $1::text is null or pg_last_wal_replay_lsn() is null then null
                       else greatest(pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn()), 0) end as lag,
                  case when pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() then 0
                       else extract(epoch from now() - pg_last_xact_replay_timestamp()) end as secs`,
          [primaryLsn],
        );
        const row = r.rows[0];
        return {
          id: replica.id,
          up: true,
          replication: row?.status ?? null,
          lagBytes: row?.lag == null ? null : Number(row.lag),
          replayLagSeconds: row?.secs == null ? null : Number(row.secs),
        };
      },
      { timeoutMs, queryTimeoutMs: timeoutMs },
    );
  } catch {
    return { id: replica.id, up: false, replication: null, lagBytes: null, replayLagSeconds: null };
  }
}

/** Creates a physical replication slot on the primary unless it exists (reserving WAL now). */
export async function createReplicationSlot(
  primary: PgAddress,
  creds: Credentials,
  slot: string,
): Promise<void> {
  if (!/^[a-z0-9_]{1,63}$/.test(slot))
    throw new PlbError('BAD_INPUT', `slot: "${slot}" is not a valid slot name`);
  await withClient(
    primary,
    creds,
    async (c) => {
      await c.query(
        `select pg_create_physical_replication_slot($1, true)
           where not exists (select 1 from pg_replication_slots where slot_name = $1)`,
        [slot],
      );
    },
    { timeoutMs: 5000, queryTimeoutMs: 10_000 },
  );
}

/** Waits until the standby has replayed at least up to `lsn` (e.g. the primary's LSN after a write). */
export async function waitCaughtUp(
  replica: PgAddress,
  creds: Credentials,
  lsn: string,
  timeoutMs = 60_000,
): Promise<void> {
  await pollUntil(
    `${where(replica)} to replay up to ${lsn}`,
    () =>
      withClient(
        replica,
        creds,
        async (c) => {
          const r = await c.query<{ ok: boolean | null }>(
            'select pg_wal_lsn_diff(pg_last_wal_replay_lsn(), $1::pg_lsn) >= 0 as ok',
            [lsn],
          );
          return r.rows[0]?.ok === true;
        },
        { timeoutMs: 2000, queryTimeoutMs: 2000 },
      ),
    timeoutMs,
  );
}

/** Pauses or resumes WAL replay on a standby (the plan's pause-replay / resume-replay). */
export async function setWalReplayPaused(ep: Endpoint, creds: Credentials, paused: boolean): Promise<void> {
  await withClient(
    ep,
    creds,
    (c) => c.query(paused ? 'SELECT pg_wal_replay_pause()' : 'SELECT pg_wal_replay_resume()'),
    { timeoutMs: 5000, queryTimeoutMs: 5000 },
  );
}
