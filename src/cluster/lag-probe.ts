/**
 * Replication lag of every standby, asked once a second by the bench's sampler: the primary's
 * pg_stat_replication (replay_lag, WAL bytes behind) and each standby's own view (time since its
 * last replayed commit while it has WAL left to replay). One connection per server, kept open;
 * one that fails or times out is dropped and opened again in the background (a sample never waits
 * for a connect: a throttled standby's fork + authentication can take seconds).
 */
import type pg from 'pg';

import type { Credentials, Endpoint } from '../core/endpoint.js';
import { connect } from './pg-util.js';

/** One replica's lag at a sample; null = not known (replica down, paused or not answering). */
export interface ReplicaLag {
  /**
   * On the standby: now() - pg_last_xact_replay_timestamp() while it has received WAL it has not
   * replayed, 0 when replay has caught up with receive.
   */
  lagMs: number | null;
  /** pg_stat_replication.replay_lag on the primary (null once the standby is idle and caught up). */
  replayLagMs: number | null;
  /** Bytes between the primary's current WAL position and the standby's replay position. */
  lagBytes: number | null;
}

/** Per sample, each query is given this long: a paused or overloaded server costs a null, not the sampler's second. */
const PROBE_TIMEOUT_MS = 700;
const CONNECT_TIMEOUT_MS = 5000;

/** The primary's view, keyed by slot name (the docker driver names slots r1.., the local one plb_r1..). */
const PRIMARY_SQL = `SELECT s.slot_name AS slot,
    extract(epoch FROM r.replay_lag) * 1000 AS replay_ms,
    pg_wal_lsn_diff(pg_current_wal_lsn(), r.replay_lsn) AS bytes
  FROM pg_replication_slots s JOIN pg_stat_replication r ON r.pid = s.active_pid`;

/** The standby's view: 0 when replay has caught up with what it received. */
const STANDBY_SQL = `SELECT CASE
    WHEN pg_last_wal_receive_lsn() IS NULL OR pg_last_wal_replay_lsn() IS NULL
      OR pg_last_xact_replay_timestamp() IS NULL THEN NULL
    WHEN pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0
    ELSE greatest(extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000, 0) END AS lag_ms`;

/** The replica id of a slot: `r1` or `plb_r1`. */
export function replicaOfSlot(slot: string): string {
  return slot.startsWith('plb_') ? slot.slice(4) : slot;
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export class LagProbe {
  private readonly conns = new Map<string, pg.Client>();
  private readonly opening = new Map<string, Promise<void>>();
  private closed = false;

  constructor(
    protected readonly primary: Endpoint | undefined,
    protected readonly replicas: readonly Endpoint[],
    private readonly creds: Credentials,
  ) {}

  /** Every replica's lag now; fields are null where a server did not answer in time. */
  async sample(): Promise<Record<string, ReplicaLag>> {
    const [fromPrimary, ...fromStandbys] = await Promise.all([
      this.primary ? this.ask(this.primary, PRIMARY_SQL) : null,
      ...this.replicas.map((r) => this.ask(r, STANDBY_SQL)),
    ]);
    const bySlot = new Map<string, { replay_ms?: unknown; bytes?: unknown }>();
    for (const row of fromPrimary ?? []) bySlot.set(replicaOfSlot(String(row['slot'])), row);
    const out: Record<string, ReplicaLag> = {};
    this.replicas.forEach((r, i) => {
      const p = bySlot.get(r.id);
      out[r.id] = {
        lagMs: num(fromStandbys[i]?.[0]?.['lag_ms']),
        replayLagMs: num(p?.replay_ms),
        lagBytes: num(p?.bytes),
      };
    });
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.opening.values()]);
    const all = [...this.conns.values()];
    this.conns.clear();
    await Promise.all(all.map((c) => c.end().catch(() => undefined)));
  }

  /** The rows of `sql` on `ep`, or null (and the connection dropped) when it failed or is not open yet. */
  protected async ask(
    ep: Endpoint,
    sql: string,
    params: unknown[] = [],
  ): Promise<Record<string, unknown>[] | null> {
    const c = this.conns.get(ep.id);
    if (!c) {
      this.open(ep);
      return null;
    }
    try {
      return (await c.query<Record<string, unknown>>(sql, params)).rows;
    } catch {
      this.conns.delete(ep.id);
      void c.end().catch(() => undefined);
      return null;
    }
  }

  /** Opens a connection in the background (one at a time per server). */
  private open(ep: Endpoint): void {
    if (this.closed || this.opening.has(ep.id)) return;
    const p = connect(ep, this.creds, {
      timeoutMs: CONNECT_TIMEOUT_MS,
      queryTimeoutMs: PROBE_TIMEOUT_MS,
      applicationName: 'plb-lag',
    })
      .then(
        (c) => {
          if (this.closed) void c.end().catch(() => undefined);
          else this.conns.set(ep.id, c);
        },
        () => undefined,
      )
      .finally(() => this.opening.delete(ep.id));
    this.opening.set(ep.id, p);
  }
}
