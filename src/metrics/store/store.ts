import type { Histogram } from 'hdr-histogram-js';
import { SERVICE_CLASSES, type ServiceClass } from '../../core/service-class.js';
import { f32, f64, u16, u8 } from './columns.js';
import { newClassLog, type ClassLog, type CpuLog, type FailureLog, type HarnessLog } from './store-logs.js';
import { addHistogram, recordValue } from '../hdr/counts.js';
import { newLatencyHistogram, toLatencyUs } from '../hdr/histogram.js';
import { classifyFailure, type FailureCause } from '../../core/failure-cause.js';
import type { Recorder, ReplicaState, SessionEnding } from '../types.js';
import { LagLog } from '../samplers/lag.js';
import { type ReplicaLag } from '../../cluster/lag-probe.js';

/** Replica index stored for a replica id the run was not told about (16-bit: a simulated cluster has up to 1000). */
export const UNKNOWN_REPLICA = 0xffff;

/** Session endings as stored in ClassLog.closeEnding. */
export const ENDING_CODE: Record<SessionEnding, number> = { finished: 0, failed: 1, cut: 2 };

/** The failure causes counted per replica (ReplicaPhaseStats, timeline.csv), in column order. */
export const COUNTED_CAUSES = ['unreachable', 'overloaded', 'slow'] as const;

function causeIndex(cause: FailureCause): number {
  return (COUNTED_CAUSES as readonly string[]).indexOf(cause);
}

/** Who heard of a failure (FailureLog.via): the health checker, a connect, a session; 3 anyone else. */
export const VIA_CODE = { health: 0, connect: 1, session: 2, other: 3 } as const;
/** Every cause of a failed query (ClassLog.errorCause). */
export const FAILURE_CODE: Record<FailureCause, number> = {
  unreachable: 0,
  overloaded: 1,
  slow: 2,
  other: 3,
};

function viaCode(via: string | undefined): number {
  return via === 'health' || via === 'connect' || via === 'session' ? VIA_CODE[via] : VIA_CODE.other;
}

interface ClassSecond {
  hist: Histogram;
  connectHist: Histogram;
  count: number;
  errors: number;
  opened: number;
  failed: number;
  admission: number;
  /** Sessions closed in this second (any ending), those cut off, lifetimes (ms) of those that finished. */
  closed: number;
  cut: number;
  lifetimesMs: number[];
}

/** Aggregates of one whole second, for timeline.csv and the progress line. */
export interface SecondAgg {
  classes: Record<ServiceClass, ClassSecond>;
  cpuSum: number[];
  cpuN: number[];
  /** Per replica index: sessions opened and queries completed in this second. */
  opened: number[];
  queries: number[];
  /** Per COUNTED_CAUSES entry, per replica index: failures heard of in this second. */
  failures: number[][];
  /** Client CPU (fraction of one core) sampled in this second, if any. */
  harnessCpu: number | undefined;
  /** The host's busy and stolen CPU (fractions of all its cores) sampled in this second, if any. */
  host: { busy: number; steal: number } | undefined;
  /** Event-loop delay of the client in this second, us. */
  loopHist: Histogram;
  state: Record<string, ReplicaState> | undefined;
  stateAtMs: number;
  /** Replication lag sampled in this second (write runs only; the last sample wins). */
  lag?: Record<string, ReplicaLag>;
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
  readonly failureLog: FailureLog = { at: f64(), replica: u16(), cause: u8(), via: u8() };
  readonly harnessLog: HarnessLog = {
    cpuAt: f64(),
    cpu: f64(),
    loopAt: f64(),
    loopDelayUs: f32(),
    hostAt: f64(),
    hostBusy: f64(),
    hostSteal: f64(),
  };
  /** Configured weights as the router reported them (replicaState), so a phase gets its own mean. */
  readonly weightLog: CpuLog;
  /** Configured weight per replica, the latest the router reported (replicaState). */
  readonly weights = new Map<string, number>();
  /** With zones: when each session opened, and 1 when its replica was outside its client's zone. */
  readonly zoneLog = { at: f64(), cross: u8() };
  private readonly index = new Map<string, number>();
  private readonly seconds = new Map<number, SecondAgg>();
  private readonly pool: Histogram[] = [];
  /** Seconds below this were dropped; late records for them go to the raw columns only. */
  private keptFrom = 0;
  /** After finish nothing more is recorded. */
  sealed = false;
  /** The second secondAt returned last (NaN: none), and its aggregates. */
  private lastS = Number.NaN;
  private lastAgg: SecondAgg | undefined;

  constructor(readonly replicas: readonly string[]) {
    replicas.forEach((r, i) => this.index.set(r, i));
    this.cpuLog = { at: f64(), values: replicas.map(() => f64()) };
    this.weightLog = { at: f64(), values: replicas.map(() => f64()) };
    this.lagLog = new LagLog(replicas);
  }

  /** Replication lag samples (only with the write workload on). */
  readonly lagLog: LagLog;

  lag(atMs: number, perReplica: Record<string, ReplicaLag>): void {
    if (this.sealed) return;
    this.lagLog.push(atMs, perReplica);
    const sec = this.second(atMs);
    if (sec) sec.lag = perReplica;
  }

  replicaIndex(id: string): number {
    return this.index.get(id) ?? UNKNOWN_REPLICA;
  }

  queryDone(cls: ServiceClass, replica: string, endMs: number, latencyMs: number): void {
    if (this.sealed) return;
    const us = toLatencyUs(latencyMs);
    const log = this.logs[cls];
    const r = this.replicaIndex(replica);
    log.queryEnd.push(endMs);
    log.queryLatUs.push(us);
    log.queryReplica.push(r);
    const sec = this.second(endMs);
    if (sec === undefined) return;
    const s = sec.classes[cls];
    recordValue(s.hist, us);
    s.count++;
    if (r !== UNKNOWN_REPLICA) sec.queries[r] = (sec.queries[r] ?? 0) + 1;
  }

  queryFailed(cls: ServiceClass, replica: string, endMs: number, reason: string): void {
    if (this.sealed) return;
    const log = this.logs[cls];
    log.errorEnd.push(endMs);
    log.errorReplica.push(this.replicaIndex(replica));
    // The reason is the error's text: a query timeout reads as one (failure-cause.ts).
    log.errorCause.push(FAILURE_CODE[classifyFailure({ message: reason })]);
    const s = this.second(endMs)?.classes[cls];
    if (s) s.errors++;
  }

  sessionOpened(
    cls: ServiceClass,
    replica: string,
    atMs: number,
    connectMs: number,
    crossZone?: boolean,
  ): void {
    if (this.sealed) return;
    const log = this.logs[cls];
    const us = toLatencyUs(connectMs);
    log.openAt.push(atMs);
    log.openReplica.push(this.replicaIndex(replica));
    if (crossZone !== undefined) {
      this.zoneLog.at.push(atMs);
      this.zoneLog.cross.push(crossZone ? 1 : 0);
    }
    log.openConnectUs.push(us);
    const sec = this.second(atMs);
    const s = sec?.classes[cls];
    if (s) {
      s.opened++;
      recordValue(s.connectHist, us);
    }
    this.countReplica(sec?.opened, replica);
  }

  sessionClosed(
    cls: ServiceClass,
    replica: string,
    openedMs: number,
    closedMs: number,
    ending: SessionEnding,
  ): void {
    if (this.sealed) return;
    const log = this.logs[cls];
    log.closeAt.push(closedMs);
    log.closeReplica.push(this.replicaIndex(replica));
    log.closeLifetimeMs.push(Math.max(0, closedMs - openedMs));
    log.closeEnding.push(ENDING_CODE[ending]);
    const s = this.second(closedMs)?.classes[cls];
    if (s) {
      s.closed++;
      if (ending === 'failed') s.failed++;
      else if (ending === 'cut') s.cut++;
      else s.lifetimesMs.push(Math.max(0, closedMs - openedMs));
    }
  }

  replicaFailure(replica: string, atMs: number, cause: FailureCause, via?: string): void {
    const c = causeIndex(cause);
    if (this.sealed || c < 0) return;
    const r = this.replicaIndex(replica);
    this.failureLog.at.push(atMs);
    this.failureLog.replica.push(r);
    this.failureLog.cause.push(c);
    this.failureLog.via.push(viaCode(via));
    const row = this.second(atMs)?.failures[c];
    if (row && r !== UNKNOWN_REPLICA) row[r] = (row[r] ?? 0) + 1;
  }

  harnessCpu(atMs: number, cpu: number): void {
    if (this.sealed) return;
    this.harnessLog.cpuAt.push(atMs);
    this.harnessLog.cpu.push(cpu);
    const sec = this.second(atMs);
    if (sec) sec.harnessCpu = cpu;
  }

  hostCpu(atMs: number, busy: number, steal: number): void {
    if (this.sealed) return;
    this.harnessLog.hostAt.push(atMs);
    this.harnessLog.hostBusy.push(busy);
    this.harnessLog.hostSteal.push(steal);
    const sec = this.second(atMs);
    if (sec) sec.host = { busy, steal };
  }

  loopDelay(atMs: number, delayMs: number): void {
    if (this.sealed) return;
    const us = toLatencyUs(delayMs);
    this.harnessLog.loopAt.push(atMs);
    this.harnessLog.loopDelayUs.push(us);
    this.second(atMs)?.loopHist.recordValue(us);
  }

  admissionFailed(cls: ServiceClass, atMs: number, reason: string): void {
    if (this.sealed) return;
    this.logs[cls].admissionAt.push(atMs);
    if (reason === 'ADMISSION_TIMEOUT') this.logs[cls].queueTimeoutAt.push(atMs);
    const s = this.second(atMs)?.classes[cls];
    if (s) s.admission++;
  }

  sessionQueued(cls: ServiceClass, atMs: number, queueMs: number): void {
    if (this.sealed) return;
    this.logs[cls].queueAt.push(atMs);
    this.logs[cls].queueUs.push(toLatencyUs(queueMs));
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
    for (const [id, st] of Object.entries(perReplica))
      if (st.weight !== undefined) this.weights.set(id, st.weight);
    this.weightLog.at.push(atMs);
    this.replicas.forEach((id, i) => this.weightLog.values[i]?.push(perReplica[id]?.weight ?? Number.NaN));
    const sec = this.second(atMs);
    if (sec && atMs >= sec.stateAtMs) {
      sec.state = { ...perReplica };
      sec.stateAtMs = atMs;
    }
  }

  /** The aggregates of second `s` (created when missing, undefined once dropped). */
  secondAt(s: number): SecondAgg | undefined {
    // Most records of a second come in a row: the last one looked up is kept at hand.
    if (s === this.lastS) return this.lastAgg;
    if (!Number.isFinite(s) || s < this.keptFrom) return undefined;
    let agg = this.seconds.get(s);
    if (agg === undefined) {
      const cs = (): ClassSecond => ({
        hist: this.histogram(),
        connectHist: this.histogram(),
        count: 0,
        errors: 0,
        opened: 0,
        failed: 0,
        admission: 0,
        closed: 0,
        cut: 0,
        lifetimesMs: [],
      });
      agg = {
        classes: { premium: cs(), freemium: cs() },
        cpuSum: this.replicas.map(() => 0),
        cpuN: this.replicas.map(() => 0),
        opened: this.replicas.map(() => 0),
        queries: this.replicas.map(() => 0),
        failures: COUNTED_CAUSES.map(() => this.replicas.map(() => 0)),
        harnessCpu: undefined,
        host: undefined,
        loopHist: this.histogram(),
        state: undefined,
        stateAtMs: Number.NEGATIVE_INFINITY,
      };
      this.seconds.set(s, agg);
    }
    this.lastS = s;
    this.lastAgg = agg;
    return agg;
  }

  /** The aggregates of second `s` if anything was recorded in it (does not create one). */
  peekSecond(s: number): SecondAgg | undefined {
    return this.seconds.get(s);
  }

  /** Drops the per-second aggregates below second `s` and recycles their histograms. */
  dropBefore(s: number): void {
    if (s <= this.keptFrom) return;
    this.lastS = Number.NaN;
    this.lastAgg = undefined;
    for (const [k, agg] of this.seconds) {
      if (k < s) {
        for (const cls of SERVICE_CLASSES)
          this.pool.push(agg.classes[cls].hist, agg.classes[cls].connectHist);
        this.pool.push(agg.loopHist);
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
      if (c.count > 0) addHistogram(into, c.hist);
      count += c.count;
    }
    return count;
  }

  private countReplica(row: number[] | undefined, replica: string): void {
    const r = this.index.get(replica);
    if (row && r !== undefined) row[r] = (row[r] ?? 0) + 1;
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
