import type { Histogram } from 'hdr-histogram-js';
import { SERVICE_CLASSES, type ServiceClass } from '../router/types.js';
import { f32, f64, u8, type Column } from './columns.js';
import { newLatencyHistogram, toLatencyUs } from './histogram.js';
import type { Recorder, ReplicaState } from './types.js';

/** Replica index stored for a replica id the run was not told about. */
export const UNKNOWN_REPLICA = 255;

/** Everything one class did, one entry per query/session, in typed columns (ms since run start). */
export interface ClassLog {
  queryEnd: Column<Float64Array>;
  queryLatUs: Column<Float32Array>;
  queryReplica: Column<Uint8Array>;
  errorEnd: Column<Float64Array>;
  openAt: Column<Float64Array>;
  openReplica: Column<Uint8Array>;
  closeAt: Column<Float64Array>;
  closeLifetimeMs: Column<Float64Array>;
  closeFailed: Column<Uint8Array>;
  admissionAt: Column<Float64Array>;
}

/** CPU samples: one time column and one value column per replica (NaN = null, replica down). */
export interface CpuLog {
  at: Column<Float64Array>;
  values: Column<Float64Array>[];
}

export interface ClassSecond {
  hist: Histogram;
  count: number;
  errors: number;
  opened: number;
  failed: number;
  admission: number;
}

/** Aggregates of one whole second, for timeline.csv and the progress line. */
export interface SecondAgg {
  classes: Record<ServiceClass, ClassSecond>;
  cpuSum: number[];
  cpuN: number[];
  state: Record<string, ReplicaState> | undefined;
  stateAtMs: number;
}

function newClassLog(): ClassLog {
  return {
    queryEnd: f64(),
    queryLatUs: f32(),
    queryReplica: u8(),
    errorEnd: f64(),
    openAt: f64(),
    openReplica: u8(),
    closeAt: f64(),
    closeLifetimeMs: f64(),
    closeFailed: u8(),
    admissionAt: f64(),
  };
}

/**
 * The in-memory side of the recorder. Raw per-query columns (about 13 bytes a query: 720k
 * queries of a 6-minute run at 2000 q/s are under 10 MB) give exact phase boundaries at finish;
 * per-second histograms are kept only for the last seconds (timeline rows and progress), and
 * their buffers are reused.
 */
export class MetricsStore implements Recorder {
  readonly logs: Record<ServiceClass, ClassLog> = { premium: newClassLog(), freemium: newClassLog() };
  readonly cpuLog: CpuLog;
  private readonly index = new Map<string, number>();
  private readonly seconds = new Map<number, SecondAgg>();
  private readonly pool: Histogram[] = [];
  /** Seconds below this were dropped; late records for them go to the raw columns only. */
  private keptFrom = 0;
  /** After finish nothing more is recorded. */
  sealed = false;

  constructor(readonly replicas: readonly string[]) {
    replicas.forEach((r, i) => this.index.set(r, i));
    this.cpuLog = { at: f64(), values: replicas.map(() => f64()) };
  }

  replicaIndex(id: string): number {
    return this.index.get(id) ?? UNKNOWN_REPLICA;
  }

  queryDone(cls: ServiceClass, replica: string, endMs: number, latencyMs: number): void {
    if (this.sealed) return;
    const us = toLatencyUs(latencyMs);
    const log = this.logs[cls];
    log.queryEnd.push(endMs);
    log.queryLatUs.push(us);
    log.queryReplica.push(this.replicaIndex(replica));
    const s = this.second(endMs)?.classes[cls];
    if (s) {
      s.hist.recordValue(us);
      s.count++;
    }
  }

  queryFailed(cls: ServiceClass, _replica: string, endMs: number, _reason: string): void {
    if (this.sealed) return;
    this.logs[cls].errorEnd.push(endMs);
    const s = this.second(endMs)?.classes[cls];
    if (s) s.errors++;
  }

  sessionOpened(cls: ServiceClass, replica: string, atMs: number): void {
    if (this.sealed) return;
    const log = this.logs[cls];
    log.openAt.push(atMs);
    log.openReplica.push(this.replicaIndex(replica));
    const s = this.second(atMs)?.classes[cls];
    if (s) s.opened++;
  }

  sessionClosed(
    cls: ServiceClass,
    _replica: string,
    openedMs: number,
    closedMs: number,
    failed: boolean,
  ): void {
    if (this.sealed) return;
    const log = this.logs[cls];
    log.closeAt.push(closedMs);
    log.closeLifetimeMs.push(Math.max(0, closedMs - openedMs));
    log.closeFailed.push(failed ? 1 : 0);
    const s = this.second(closedMs)?.classes[cls];
    if (s && failed) s.failed++;
  }

  admissionFailed(cls: ServiceClass, atMs: number, _reason: string): void {
    if (this.sealed) return;
    this.logs[cls].admissionAt.push(atMs);
    const s = this.second(atMs)?.classes[cls];
    if (s) s.admission++;
  }

  cpu(atMs: number, fractions: Record<string, number | null>): void {
    if (this.sealed) return;
    this.cpuLog.at.push(atMs);
    const sec = this.second(atMs);
    this.replicas.forEach((r, i) => {
      const v = fractions[r];
      const ok = typeof v === 'number' && Number.isFinite(v);
      this.cpuLog.values[i]?.push(ok ? v : Number.NaN);
      if (ok && sec) {
        sec.cpuSum[i] = (sec.cpuSum[i] ?? 0) + v;
        sec.cpuN[i] = (sec.cpuN[i] ?? 0) + 1;
      }
    });
  }

  replicaState(atMs: number, perReplica: Record<string, ReplicaState>): void {
    if (this.sealed) return;
    const sec = this.second(atMs);
    if (sec && atMs >= sec.stateAtMs) {
      sec.state = { ...perReplica };
      sec.stateAtMs = atMs;
    }
  }

  /** The aggregates of second `s` (created when missing, undefined once dropped). */
  secondAt(s: number): SecondAgg | undefined {
    if (!Number.isFinite(s) || s < this.keptFrom) return undefined;
    let agg = this.seconds.get(s);
    if (agg === undefined) {
      const cs = (): ClassSecond => ({
        hist: this.histogram(),
        count: 0,
        errors: 0,
        opened: 0,
        failed: 0,
        admission: 0,
      });
      agg = {
        classes: { premium: cs(), freemium: cs() },
        cpuSum: this.replicas.map(() => 0),
        cpuN: this.replicas.map(() => 0),
        state: undefined,
        stateAtMs: Number.NEGATIVE_INFINITY,
      };
      this.seconds.set(s, agg);
    }
    return agg;
  }

  /** The aggregates of second `s` if anything was recorded in it (does not create one). */
  peekSecond(s: number): SecondAgg | undefined {
    return this.seconds.get(s);
  }

  /** Drops the per-second aggregates below second `s` and recycles their histograms. */
  dropBefore(s: number): void {
    if (s <= this.keptFrom) return;
    for (const [k, agg] of this.seconds) {
      if (k < s) {
        for (const cls of SERVICE_CLASSES) this.pool.push(agg.classes[cls].hist);
        this.seconds.delete(k);
      }
    }
    this.keptFrom = s;
  }

  /** Merged latency and completed count of one class over seconds [fromS, toS). */
  window(cls: ServiceClass, fromS: number, toS: number, into: Histogram): number {
    into.reset();
    let count = 0;
    for (let s = Math.max(fromS, this.keptFrom); s < toS; s++) {
      const c = this.seconds.get(s)?.classes[cls];
      if (c === undefined) continue;
      if (c.count > 0) into.add(c.hist);
      count += c.count;
    }
    return count;
  }

  private second(tMs: number): SecondAgg | undefined {
    return this.secondAt(Math.floor(tMs / 1000));
  }

  private histogram(): Histogram {
    const h = this.pool.pop();
    if (h === undefined) return newLatencyHistogram();
    h.reset();
    return h;
  }
}
