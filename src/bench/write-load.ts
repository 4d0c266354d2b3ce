/**
 * The write side of a run (`--write-rate`): the writer on the primary and the lag probe the
 * sampler asks once a second. Absent in read-only runs (the default), which measure as before.
 */
import type { Clock } from '../clock/index.js';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import { LagProbe } from '../cluster/lag-probe.js';
import { connect } from '../cluster/pg-util.js';
import { errorText } from '../core/errors.js';
import type { ReplicaLag } from '../cluster/lag-probe.js';
import type { RunWriter } from '../metrics/types.js';
import { lagWeight, ReplicaWeights, type LagWeightOptions } from '../router/lag-weight.js';
import type { Rng } from '../core/rng.js';
import { Writer, type WriteConnection } from '../workload/writer.js';

/** Client-side bound of one write batch: a stuck primary must not hold the writer forever. */
const WRITE_TIMEOUT_MS = 10_000;

export interface WriteLoad {
  /** Records every replica's lag at run time `tMs` and hands it to the onLag listener. */
  sampleLag(tMs: number): Promise<void>;
  /** Called with every lag sample (the lag-derived weights). */
  onLag(fn: (tMs: number, lag: Readonly<Record<string, ReplicaLag>>) => void): void;
  /** Stops the writer and the probe; records what was written. */
  stop(endMs: number): Promise<void>;
}

export interface WriteLoadInputs {
  rate: number;
  primary: Endpoint;
  replicas: readonly Endpoint[];
  creds: Credentials;
  clock: Clock;
  rng: Rng;
  writer: RunWriter;
  log: (line: string) => void;
}

/** Starts the writer (rate > 0); undefined for a read-only run. */
export function startWriteLoad(x: WriteLoadInputs): WriteLoad | undefined {
  if (!(x.rate > 0)) return undefined;
  let errors = 0;
  const onError = (err: unknown): void => {
    // The first error says what is wrong; the count is in the closing note.
    if (errors++ === 0)
      x.log(`write workload: ${errorText(err)} (carrying on; the count is logged at the end)`);
  };
  const open = async (): Promise<WriteConnection> => {
    const c = await connect(x.primary, x.creds, {
      timeoutMs: 5000,
      queryTimeoutMs: WRITE_TIMEOUT_MS,
      applicationName: 'plb-writer',
      onError,
    });
    return { query: (sql, params) => c.query(sql, params), close: () => c.end() };
  };
  const writer = new Writer({ rate: x.rate, clock: x.clock, rng: x.rng, open, onError });
  const probe = new LagProbe(x.primary, x.replicas, x.creds);
  let listener: ((tMs: number, lag: Readonly<Record<string, ReplicaLag>>) => void) | undefined;
  writer.start();
  x.log(`write workload: ${x.rate} rows/s on the primary; replication lag sampled every second`);
  return {
    sampleLag: async (tMs) => {
      const lag = await probe.sample();
      x.writer.recorder.lag(tMs, lag);
      listener?.(tMs, lag);
    },
    onLag: (fn) => {
      listener = fn;
    },
    stop: async (endMs) => {
      const s = await writer.close();
      await probe.close();
      x.writer.event({
        type: 'note',
        tMs: endMs,
        what: 'writes',
        rows: s.rows,
        batches: s.batches,
        errors: s.errors,
      });
      x.log(`write workload: ${s.rows} rows in ${s.batches} batches, ${s.errors} failed batches`);
    },
  };
}

/**
 * The router, told each replica's lag factor: lag-derived weights (LagWeightOptions) or any rule
 * of the lag (max-lag eviction); a change is recorded as a 'note' event.
 */
export function lagWeighting(
  router: { setWeight?(replica: string, weight: number): void },
  writer: RunWriter,
  rule: LagWeightOptions | ((lagMs: number | null) => number),
  weights: ReplicaWeights = new ReplicaWeights(router),
): (tMs: number, lag: Readonly<Record<string, ReplicaLag>>) => void {
  const factorOf = typeof rule === 'function' ? rule : (lagMs: number | null) => lagWeight(lagMs, rule);
  return (tMs, lag) => {
    for (const [replica, l] of Object.entries(lag)) {
      const f = factorOf(l.lagMs ?? l.replayLagMs);
      // Two decimals: a lag that jitters by a millisecond does not re-key the router every second.
      if (!weights.setFactor(replica, f > 0 ? Math.round(f * 100) / 100 : 0)) continue;
      const weight = weights.weightOf(replica);
      writer.event({ type: 'note', tMs, what: 'lag-weight', replica, weight, lagMs: l.lagMs });
    }
  };
}
