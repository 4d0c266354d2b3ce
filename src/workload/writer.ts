/**
 * The optional write workload (`--write-rate`): upserts into plb_writes on the primary at a steady
 * rate, so the standbys have WAL to replay and replication lag can be measured. One connection,
 * paced by the run's clock; a failed batch is counted, the connection reopened on the next tick.
 */
import type { Clock } from '../clock/index.js';
import { PlbError } from '../core/errors.js';
import type { FaultPlan } from '../run-format/plan.js';
import type { Rng } from '../core/rng.js';
import { WRITE_TABLE } from '../cluster/dataset.js';

/** Rows are upserted over this many keys: the table stays small however long the run. */
export const WRITE_KEYS = 10_000;
/** A batch every this many ms: 200 rows/s are 20-row statements, not 200 round trips. */
const WRITE_TICK_MS = 100;
/** Most rows/s a run may write (one connection; more would measure the writer, not the standbys). */
const MAX_WRITE_RATE = 50_000;

/** One statement per batch: distinct keys (an upsert may touch a row once), ~130 bytes a row. */
const UPSERT = `INSERT INTO ${WRITE_TABLE} AS w (id, n, payload, updated_at)
  SELECT k, 1, repeat(md5(k::text || ':' || $2::text), 4), now() FROM unnest($1::int[]) AS k
  ON CONFLICT (id) DO UPDATE SET n = w.n + 1, payload = EXCLUDED.payload, updated_at = EXCLUDED.updated_at`;

/** `--write-rate`: rows per second, 0 = read-only. */
export function parseWriteRate(v: number, field = '--write-rate'): number {
  if (!Number.isFinite(v) || v < 0 || v > MAX_WRITE_RATE)
    throw new PlbError(
      'BAD_INPUT',
      `${field}: must be a number of rows/s from 0 to ${MAX_WRITE_RATE} (got ${v})`,
    );
  return v;
}

/**
 * The simulated cluster has no WAL, so no lag to measure: writes and replay faults are refused
 * up front rather than run as if the standbys never fell behind.
 */
export function refuseLagWithSim(writeRate: number, plan: FaultPlan): void {
  if (writeRate > 0)
    throw new PlbError(
      'BAD_INPUT',
      '--write-rate: not with --driver sim (the simulated cluster does not model replication lag)',
    );
  const replay = plan.events.find((e) => e.action === 'pause-replay' || e.action === 'resume-replay');
  if (replay)
    throw new PlbError(
      'BAD_INPUT',
      `plan ${plan.name}: line ${replay.line}: ${replay.action} is not possible with --driver sim (the simulated cluster does not model replication lag)`,
    );
}

/** `n` distinct keys in [1, WRITE_KEYS], drawn from the run's seeded stream. */
export function batchKeys(rng: Rng, n: number): number[] {
  const keys = new Set<number>();
  const want = Math.min(n, WRITE_KEYS);
  while (keys.size < want) keys.add(rng.int(1, WRITE_KEYS));
  return [...keys];
}

/** Rows due by `elapsedMs` at `rate`, less those written, capped at a second's worth (no burst after an outage). */
export function rowsDue(rate: number, elapsedMs: number, written: number): number {
  const due = Math.floor((rate * elapsedMs) / 1000) - written;
  return Math.max(0, Math.min(due, Math.ceil(rate)));
}

/** The writer's connection to the primary (pg in real runs, a fake in tests). */
export interface WriteConnection {
  query(sql: string, params: unknown[]): Promise<unknown>;
  close(): Promise<void>;
}

export interface WriterOptions {
  rate: number;
  clock: Clock;
  rng: Rng;
  open: () => Promise<WriteConnection>;
  /** A batch or connect failed (the writer carries on). */
  onError: (err: unknown) => void;
}

export interface WriterStats {
  rows: number;
  batches: number;
  errors: number;
}

export class Writer {
  private readonly stop = new AbortController();
  private loop: Promise<void> | undefined;
  private conn: WriteConnection | undefined;
  readonly stats: WriterStats = { rows: 0, batches: 0, errors: 0 };

  constructor(private readonly opts: WriterOptions) {}

  start(): void {
    this.loop = this.run();
  }

  /** Stops after the batch in flight; closes the connection. */
  async close(): Promise<WriterStats> {
    this.stop.abort();
    await this.loop;
    await this.conn?.close().catch(() => undefined);
    this.conn = undefined;
    return this.stats;
  }

  private async run(): Promise<void> {
    const { clock, rate } = this.opts;
    const t0 = clock.now();
    let seq = 0;
    // Rows due but not written (a failed batch) are skipped: the rate is the target, not a debt.
    let accounted = 0;
    while (!this.stop.signal.aborted) {
      await clock.sleep(WRITE_TICK_MS, this.stop.signal);
      if (this.stop.signal.aborted) return;
      const n = rowsDue(rate, clock.now() - t0, accounted);
      if (n === 0) continue;
      accounted += n;
      try {
        this.conn ??= await this.opts.open();
        await this.conn.query(UPSERT, [batchKeys(this.opts.rng, n), seq++]);
        this.stats.rows += n;
        this.stats.batches++;
      } catch (err) {
        this.stats.errors++;
        this.opts.onError(err);
        const c = this.conn;
        this.conn = undefined;
        await c?.close().catch(() => undefined);
      }
    }
  }
}
