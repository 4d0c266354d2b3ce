/**
 * Replication lag of any fleet's standbys (`plb proxy` in front of servers plb did not make), read
 * from the standbys' own replay position and timestamp, never from plb's replication slot names:
 * - with a primary known: how long ago the primary's WAL position (pg_current_wal_lsn, read at
 *   each sample) was where the standby's replay position (pg_last_wal_replay_lsn) is now, taken
 *   with the standby's own timestamp lag (now() - pg_last_xact_replay_timestamp()), the smaller of
 *   the two: a primary that writes WAL but no commits (checkpoints) makes the timestamp old, a
 *   standby that stopped receiving makes its own view say 0; the positions see it fall behind;
 * - without one: the standby's own view (lag-probe.ts's STANDBY_SQL reading).
 */
import { LagProbe, type ReplicaLag } from './lag-probe.js';

/** Positions remembered per primary sample: a standby further behind reads as this many samples old. */
const HISTORY = 600;

const PRIMARY_LSN_SQL = `SELECT CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_lsn()::text END AS lsn`;

const STANDBY_OWN_SQL = `SELECT pg_last_wal_replay_lsn()::text AS replay,
  CASE
    WHEN pg_last_wal_replay_lsn() IS NULL THEN NULL
    WHEN pg_last_wal_receive_lsn() IS NOT NULL AND pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn() THEN 0
    WHEN pg_last_xact_replay_timestamp() IS NULL THEN NULL
    ELSE greatest(extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000, 0) END AS own_ms,
  CASE WHEN pg_last_xact_replay_timestamp() IS NULL THEN NULL
    ELSE greatest(extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000, 0) END AS stamp_ms`;

/** `16/B374D848` -> its byte position; null for anything else. */
export function parseLsn(text: unknown): bigint | null {
  if (typeof text !== 'string') return null;
  const m = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  return m ? (BigInt(`0x${m[1]}`) << 32n) + BigInt(`0x${m[2]}`) : null;
}

/** The primary's WAL position at past samples, oldest first (pure: the time is passed in). */
export class PositionHistory {
  private readonly at: { tMs: number; lsn: bigint }[] = [];

  add(tMs: number, lsn: bigint): void {
    this.at.push({ tMs, lsn });
    if (this.at.length > HISTORY) this.at.shift();
  }

  /**
   * How long ago (ms) the primary was where `replay` is: 0 when it has caught up with the latest
   * position; since the oldest remembered one when it is behind all of them; null: no position yet.
   */
  lagMs(replay: bigint, nowMs: number): number | null {
    const last = this.at[this.at.length - 1];
    if (!last) return null;
    if (replay >= last.lsn) return 0;
    // The newest sample the standby has replayed past; it caught up no later than the one after.
    for (let i = this.at.length - 2; i >= 0; i -= 1) {
      const s = this.at[i] as { tMs: number; lsn: bigint };
      if (replay >= s.lsn) return Math.max(0, nowMs - (this.at[i + 1] as { tMs: number }).tMs);
    }
    return Math.max(0, nowMs - (this.at[0] as { tMs: number }).tMs);
  }
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** The smaller of two lags, either of which may be unknown. */
function smaller(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}

export class ReplayLagProbe extends LagProbe {
  private readonly history = new PositionHistory();

  /** Every replica's lag now (lagMs; lagBytes behind the primary when one is known). */
  override async sample(nowMs: number = Date.now()): Promise<Record<string, ReplicaLag>> {
    const p = this.primary ? await this.ask(this.primary, PRIMARY_LSN_SQL) : null;
    const primaryLsn = parseLsn(p?.[0]?.['lsn']);
    if (primaryLsn !== null) this.history.add(nowMs, primaryLsn);
    const rows = await Promise.all(this.replicas.map((r) => this.ask(r, STANDBY_OWN_SQL)));
    const out: Record<string, ReplicaLag> = {};
    this.replicas.forEach((r, i) => {
      const row = rows[i]?.[0];
      const replay = parseLsn(row?.['replay']);
      const own = num(row?.['own_ms']);
      // The primary's positions when it answered this time; the standby's own view otherwise.
      const lagMs =
        primaryLsn !== null && replay !== null
          ? smaller(this.history.lagMs(replay, nowMs), num(row?.['stamp_ms']))
          : own;
      out[r.id] = {
        lagMs,
        replayLagMs: null,
        lagBytes:
          primaryLsn !== null && replay !== null
            ? Number(primaryLsn > replay ? primaryLsn - replay : 0n)
            : null,
      };
    });
    return out;
  }
}
