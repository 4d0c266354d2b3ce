// Live metrics of a bench run in Prometheus text (`--metrics-port`): a recorder that passes every
// call on to the run's own and keeps prom-client series on its own registry (never the global one).
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { SERVICE_CLASSES, type ServiceClass } from '../core/service-class.js';
import { computeSignals, DEFAULT_SIGNAL_THRESHOLDS, type SignalThresholds } from './signals.js';
import type { Recorder, ReplicaState, RunWriter } from './types.js';

/** Query latency buckets, seconds: 1 ms .. 10 s (a bench query is ms; an overload is seconds). */
const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Seconds of the sliding window the live spreads are taken over (as report.html's). */
const LIVE_WINDOW_S = 5;

interface Sample {
  atMs: number;
  queries: number[];
  opened: number[];
}

export interface LiveMetrics {
  readonly registry: Registry;
  /** The run's writer with its recorder teed into the live series (reset for each run). */
  tee(writer: RunWriter, run: { strategy: string; mix: string }): RunWriter;
  /** The exposition text (what GET /metrics answers). */
  text(): Promise<string>;
  /** Drops every series (end of the command). */
  close(): void;
}

export function createLiveMetrics(t: SignalThresholds = DEFAULT_SIGNAL_THRESHOLDS): LiveMetrics {
  const registry = new Registry();
  const registers = [registry];
  const latency = new Histogram({
    name: 'plb_query_latency_seconds',
    help: 'Latency of the queries that completed, by service class',
    labelNames: ['class'],
    buckets: LATENCY_BUCKETS_S,
    registers,
  });
  const queryErrors = new Counter({
    name: 'plb_query_errors_total',
    help: 'Queries that failed, by service class',
    labelNames: ['class'],
    registers,
  });
  const queries = new Counter({
    name: 'plb_replica_queries_total',
    help: 'Queries completed per replica',
    labelNames: ['replica'],
    registers,
  });
  const opened = new Counter({
    name: 'plb_replica_sessions_opened_total',
    help: 'Sessions opened per replica and class',
    labelNames: ['replica', 'class'],
    registers,
  });
  const sessions = new Gauge({
    name: 'plb_replica_sessions',
    help: 'Open sessions per replica and class (the router view)',
    labelNames: ['replica', 'class'],
    registers,
  });
  const healthy = new Gauge({
    name: 'plb_replica_healthy',
    help: '1 when the router has the replica healthy',
    labelNames: ['replica'],
    registers,
  });
  const weight = new Gauge({
    name: 'plb_replica_weight',
    help: 'Configured weight of the replica (router)',
    labelNames: ['replica'],
    registers,
  });
  const cpu = new Gauge({
    name: 'plb_replica_cpu_ratio',
    help: 'CPU of the replica over the last sample, fraction of its quota',
    labelNames: ['replica'],
    registers,
  });
  const lag = new Gauge({
    name: 'plb_replica_lag_seconds',
    help: 'Replication lag of the replica',
    labelNames: ['replica'],
    registers,
  });
  const signal = (name: string, help: string): Gauge =>
    new Gauge({ name: `plb_signal_${name}`, help, registers });
  const querySpread = signal(
    'query_share_spread',
    `Queries: max/mean over the healthy replicas, last ${LIVE_WINDOW_S} s (alert > ${t.queryShareSpread})`,
  );
  const cpuSpread = signal(
    'cpu_share_spread',
    `CPU: max/mean over the healthy replicas, last ${LIVE_WINDOW_S} s (alert > ${t.cpuShareSpread})`,
  );
  const silent = signal(
    'silent_replicas',
    `Healthy replicas with no new session for ${t.silentWindowS} s or more (alert > 0)`,
  );
  const weightDeviation = signal(
    'weight_deviation',
    `Worst |share of new sessions / share of weight - 1|, last ${LIVE_WINDOW_S} s (alert > ${t.weightDeviation})`,
  );
  const alerts = new Gauge({
    name: 'plb_signal_alert',
    help: '1 when the signal is over its threshold',
    labelNames: ['signal'],
    registers,
  });
  const phase = new Gauge({
    name: 'plb_run_info',
    help: 'The run going on: 1 for its strategy, mix and current phase',
    labelNames: ['run', 'strategy', 'mix', 'phase'],
    registers,
  });

  const tee = (writer: RunWriter, run: { strategy: string; mix: string }): RunWriter => {
    registry.resetMetrics();
    const inner = writer.recorder;
    const ids: string[] = [];
    const index = new Map<string, number>();
    const idx = (id: string): number => {
      let i = index.get(id);
      if (i === undefined) {
        i = ids.length;
        ids.push(id);
        index.set(id, i);
      }
      return i;
    };
    let cur: Sample = { atMs: 0, queries: [], opened: [] };
    const window: Sample[] = [];
    const lastOpenMs: number[] = [];
    const upSinceMs: number[] = [];
    const lastCpu: (number | null)[] = [];
    const runId = writer.dir.split(/[\\/]/).pop() ?? '';
    let lastPhase = '';

    const bump = (row: number[], i: number): void => {
      row[i] = (row[i] ?? 0) + 1;
    };
    const refresh = (atMs: number, state: Record<string, ReplicaState>): void => {
      cur.atMs = atMs;
      window.push(cur);
      cur = { atMs, queries: [], opened: [] };
      while (window.length > 0 && (window[0]?.atMs ?? 0) <= atMs - LIVE_WINDOW_S * 1000) window.shift();
      const sum = (key: 'queries' | 'opened', i: number): number =>
        window.reduce((s, w) => s + (w[key][i] ?? 0), 0);
      const inputs = Object.entries(state).map(([id, st]) => {
        const i = idx(id);
        if (!st.healthy) upSinceMs[i] = Number.NaN;
        else if (Number.isNaN(upSinceMs[i] ?? Number.NaN)) upSinceMs[i] = atMs;
        const since = Math.max(lastOpenMs[i] ?? 0, upSinceMs[i] ?? 0);
        return {
          id,
          up: st.healthy,
          queries: sum('queries', i),
          sessionsOpened: sum('opened', i),
          cpu: lastCpu[i] ?? null,
          weight: st.weight ?? 1,
          longestQuietS: (atMs - since) / 1000,
        };
      });
      const s = computeSignals(inputs, LIVE_WINDOW_S, t);
      const set = (g: Gauge, v: number | null): void => {
        if (v === null) g.reset();
        else g.set(v);
      };
      set(querySpread, s.queryShareSpread);
      set(cpuSpread, s.cpuShareSpread);
      silent.set(s.silent.length);
      set(weightDeviation, s.weightDeviation);
      for (const name of ['queryShareSpread', 'cpuShareSpread', 'silent', 'weightDeviation'] as const)
        alerts.set({ signal: name }, s.alerts.includes(name) ? 1 : 0);
      const now = writer.progress(atMs, 1).phase;
      if (now !== lastPhase) {
        phase.reset();
        lastPhase = now;
      }
      phase.set({ run: runId, strategy: run.strategy, mix: run.mix, phase: now }, 1);
    };

    const recorder: Recorder = {
      queryDone(cls, replica, endMs, latencyMs) {
        inner.queryDone(cls, replica, endMs, latencyMs);
        latency.observe({ class: cls }, latencyMs / 1000);
        queries.inc({ replica });
        bump(cur.queries, idx(replica));
      },
      queryFailed(cls, replica, endMs, reason) {
        inner.queryFailed(cls, replica, endMs, reason);
        queryErrors.inc({ class: cls });
      },
      sessionOpened(cls, replica, atMs, connectMs, crossZone) {
        inner.sessionOpened(cls, replica, atMs, connectMs, crossZone);
        opened.inc({ replica, class: cls });
        const i = idx(replica);
        bump(cur.opened, i);
        lastOpenMs[i] = Math.max(lastOpenMs[i] ?? 0, atMs);
      },
      sessionClosed: (...a) => inner.sessionClosed(...a),
      replicaFailure: (...a) => inner.replicaFailure(...a),
      harnessCpu: (...a) => inner.harnessCpu(...a),
      hostCpu: (...a) => inner.hostCpu(...a),
      loopDelay: (...a) => inner.loopDelay(...a),
      admissionFailed: (...a) => inner.admissionFailed(...a),
      sessionQueued: (...a) => inner.sessionQueued?.(...a),
      cpu(atMs, fractions) {
        inner.cpu(atMs, fractions);
        for (const [replica, v] of Object.entries(fractions)) {
          lastCpu[idx(replica)] = v;
          if (v === null) cpu.remove({ replica });
          else cpu.set({ replica }, v);
        }
      },
      lag(atMs, perReplica) {
        inner.lag(atMs, perReplica);
        for (const [replica, l] of Object.entries(perReplica)) {
          if (l.lagMs === null) lag.remove({ replica });
          else lag.set({ replica }, l.lagMs / 1000);
        }
      },
      replicaState(atMs, perReplica) {
        inner.replicaState(atMs, perReplica);
        for (const [replica, st] of Object.entries(perReplica)) {
          for (const cls of SERVICE_CLASSES) sessions.set({ replica, class: cls }, st[cls as ServiceClass]);
          healthy.set({ replica }, st.healthy ? 1 : 0);
          weight.set({ replica }, st.weight ?? 1);
        }
        refresh(atMs, perReplica);
      },
    };
    // Everything else of the writer as it is; only the recorder is teed.
    return {
      dir: writer.dir,
      recorder,
      writeConfig: (c) => writer.writeConfig(c),
      event: (e) => writer.event(e),
      tick: (nowMs) => writer.tick(nowMs),
      progress: (nowMs, windowS) => writer.progress(nowMs, windowS),
      finish: (endMs, complete, errors) => writer.finish(endMs, complete, errors),
    };
  };

  return {
    registry,
    tee,
    text: () => registry.metrics(),
    close: () => registry.clear(),
  };
}
