/**
 * `plb calibrate`'s arithmetic: the raw samples of one replica (calibrate-measure.ts) turned into
 * the calibration file the simulator reads (src/cluster/sim/calibration.ts), and its one-screen
 * summary. Pure.
 */
import { cpus as hostCpus, release, type as osType } from 'node:os';
import Table from 'cli-table3';
import { checkCalibration, type SimCalibration } from '../../cluster/sim/calibration.js';
import { tableStyle } from '../../core/table-style.js';
import { coefficientOfVariation, quantile } from '../../metrics/math.js';
import type { QueryKind } from '../../run-format/config.js';
import type { ConnectSamples } from '../../workload/calibrate.js';

export const KINDS: readonly QueryKind[] = ['point', 'range', 'scan'];

export const CALIBRATE_DEFAULTS = {
  samples: 300,
  restarts: 3,
  /** Unmeasured queries first: a fresh standby's first reads cost more (cold buffers, hint bits). */
  warmMs: 1500,
  /** Cheap queries run at least this long: a few hundred SELECT 1 are ~10 ms of CPU, within noise. */
  minMs: 3000,
  idleMs: 2000,
  /** Rounds the templates take turns in; the mean demand is the median of the rounds' means. */
  rounds: 5,
  replica: 'r1',
} as const;

export const CALIBRATE_LIMITS = { samples: 100_000, restarts: 100 } as const;

/** One round of a template run alone: replica CPU (s, idle not yet off), wall time (ms), queries. */
interface Round {
  cpuS: number;
  spanMs: number;
  n: number;
}

/** A template's rounds and, per query, its latency and the CPU read after it. */
export interface TemplateSamples {
  rounds: Round[];
  latencyMs: number[];
  /** Replica CPU between the counter reads around each query, ms; empty when not read per query. */
  cpuMs: number[];
}

export interface RestartSample {
  /** start() called -> first answered query, ms. */
  acceptMs: number;
  /** start() called -> pg_stat_wal_receiver streaming, ms. */
  streamMs: number;
}

/** Everything measured, raw: summariseCalibration turns it into a SimCalibration. */
export interface SimMeasurement {
  replica: string;
  replicas: number;
  replicaCpus: number;
  /** False when the driver records the quota without enforcing it (local driver without cgroups). */
  quotaEnforced: boolean;
  driver: string;
  postgres: string;
  datasetRows: number;
  samples: number;
  warmMs: number;
  minMs: number;
  /** CPU the idle replica uses on its own (WAL receiver, startup, checkpointer), ms per s. */
  idleCpuMsPerS: number;
  templates: Record<QueryKind, TemplateSamples> & Record<string, TemplateSamples>;
  /** A workload file's templates measured too (`--workload`): name -> SQL. */
  extraSql?: Record<string, string>;
  health: { count: number; cpuS: number; spanMs: number };
  connects: ConnectSamples & { spanMs: number };
  restarts: RestartSample[];
  /** 1-minute load average of the host before and after. */
  load: { before: number; after: number; cores: number };
}

export const r3 = (v: number): number => Math.round(v * 1000) / 1000;
const r2 = (v: number): number => Math.round(v * 100) / 100;

export function median(xs: readonly number[]): number {
  return quantile(xs, 0.5) ?? 0;
}

/**
 * Whether per-sample counter differences resolve a single query: a cgroup counter counts in
 * nanoseconds or microseconds; /proc tick counters (the local driver without cgroups) in 10 ms, so
 * most cheap queries would read 0 and a few 10 ms.
 */
export function counterIsFine(perSampleMs: readonly number[]): boolean {
  if (perSampleMs.length === 0) return false;
  const positive = perSampleMs.filter((v) => v > 0);
  const zeros = perSampleMs.length - positive.length;
  return zeros / perSampleMs.length <= 0.1 && positive.length > 0 && Math.min(...positive) < 1;
}

/** CPU total less what the idle replica would have used anyway, per item, ms. */
function perItemMs(cpuS: number, spanMs: number, idleMsPerS: number, n: number): number {
  return Math.max(0, (cpuS * 1000 - (idleMsPerS * spanMs) / 1000) / Math.max(1, n));
}

/**
 * Pure: raw samples -> the calibration file. Mean demand = CPU over the run / queries (idle rate
 * off). Spread: the cv of the per-query CPU when the counter resolves single queries, else the cv
 * of (latency - overhead). Overhead: the median of (latency - CPU) of point queries (a lone
 * unthrottled query runs at full core speed, so the rest is protocol, loopback and client), or,
 * with a coarse counter, the least point latency less the mean demand. Connect latency likewise.
 */
export function summariseCalibration(
  m: SimMeasurement,
  meta: { at: string; machine: string; note?: string; tick?: { sliceMs: number; hz: number } | null },
): SimCalibration {
  const fine = counterIsFine([
    ...Object.values(m.templates).flatMap((t) => t.cpuMs),
    ...(m.connects.cpuMs ?? []),
  ]);
  const meanMs = (k: string): number =>
    median((m.templates[k]?.rounds ?? []).map((r) => perItemMs(r.cpuS, r.spanMs, m.idleCpuMsPerS, r.n)));
  const point = m.templates.point;
  const overhead = fine
    ? median(point.latencyMs.map((l, i) => l - (point.cpuMs[i] ?? 0)))
    : Math.min(...point.latencyMs) - meanMs('point');
  const queryOverheadMs = Math.max(0, overhead);
  const cvOf = (k: string): number => {
    const t = m.templates[k] ?? { cpuMs: [], latencyMs: [] };
    const xs = fine ? t.cpuMs : t.latencyMs.map((l) => Math.max(0, l - queryOverheadMs));
    return coefficientOfVariation(xs) ?? 0;
  };
  const names = [...KINDS, ...Object.keys(m.extraSql ?? {})];
  const templates = Object.fromEntries(
    names.map((k) => {
      const sql = m.extraSql?.[k];
      return [k, { meanMs: r3(meanMs(k)), cv: r2(cvOf(k)), ...(sql !== undefined ? { sql } : {}) }];
    }),
  ) as SimCalibration['templates'];
  const c = m.connects;
  const connectCpuMs = perItemMs(c.cpuS, c.spanMs, m.idleCpuMsPerS, c.wallMs.length);
  const connectFixed =
    fine && c.cpuMs
      ? median(c.wallMs.map((w, i) => w - (c.cpuMs?.[i] ?? 0)))
      : median(c.wallMs) - connectCpuMs;
  const accept = m.restarts.map((r) => r.acceptMs);
  const catchUp = m.restarts.map((r) => Math.max(0, r.streamMs - r.acceptMs));
  const notes = [
    `${m.replica} of ${m.replicas} replicas at ${m.replicaCpus} cpus${m.quotaEnforced ? '' : ' (recorded, NOT enforced)'} (${m.driver} driver), dataset ${m.datasetRows} rows`,
    `queries per template ${names.map((k) => m.templates[k]?.latencyMs.length ?? 0).join('/')} (at least ${m.samples} and ${m.minMs / 1000} s), one session, sequential, in ${m.templates.point.rounds.length} rounds taking turns (mean = median of the rounds' means), after ${m.warmMs / 1000} s of unmeasured queries each`,
    `CPU from ${m.driver === 'docker' ? "the replica's cgroup counter" : `the ${m.driver} driver's counter for the replica`} less its idle rate (${r3(m.idleCpuMsPerS)} ms/s)`,
    fine
      ? 'cv from the per-query CPU (counter read after each query); queryOverheadMs = median(point latency - its CPU)'
      : 'counter too coarse for single queries: cv from (latency - overhead), distorted by a CPU quota; queryOverheadMs = min point latency - mean CPU',
    `connect: ${c.wallMs.length} connects with SCRAM auth (median wall ${r2(median(c.wallMs))} ms; latencyMs is the part outside the replica's CPU)`,
    `healthCpuMs: ${m.health.count} x SELECT 1 on one session`,
    `restart: median of ${m.restarts.length} kill + start, polled every 20 ms (accept ${accept.map(Math.round).join('/')} ms; catch-up ${catchUp.map(Math.round).join('/')} ms)`,
    `host load (1 min) ${m.load.before.toFixed(2)} before, ${m.load.after.toFixed(2)} after, on ${m.load.cores} cores`,
    meta.tick
      ? `sliceMs: the kernel's tick (CONFIG_HZ=${meta.tick.hz})`
      : "sliceMs: none (the kernel's CONFIG_HZ could not be read; processor sharing)",
    ...(meta.note ? [meta.note] : []),
  ].join('; ');
  const cal: SimCalibration = {
    version: 1,
    measured: {
      at: meta.at,
      machine: meta.machine,
      postgres: m.postgres,
      replicaCpus: m.replicaCpus,
      notes,
    },
    templates,
    queryOverheadMs: r3(queryOverheadMs),
    connect: { cpuMs: r3(connectCpuMs), latencyMs: r3(Math.max(0, connectFixed)) },
    healthCpuMs: r3(perItemMs(m.health.cpuS, m.health.spanMs, m.idleCpuMsPerS, m.health.count)),
    restartMs: Math.round(median(accept)),
    catchUpMs: Math.round(median(catchUp)),
    // The simulator's CFS model: how many host cores a replica's backends can run on at once, and
    // the quota period (Docker's and the kernel's default).
    hostCores: m.load.cores,
    cfsPeriodMs: 100,
    ...(meta.tick ? { sliceMs: meta.tick.sliceMs } : {}),
  };
  // The file plb writes must be one plb reads.
  return checkCalibration(cal, 'measured');
}

export function machineDescription(): string {
  const cpus = hostCpus();
  return `${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${cpus.length} cores, ${osType()} ${release()}`;
}

/** The one-screen summary. */
export function renderCalibration(cal: SimCalibration, where: string): string {
  const t = new Table({ head: ['measure', 'value', ''], style: tableStyle() });
  for (const [k, x] of Object.entries(cal.templates))
    t.push([`${k} query CPU`, `${x.meanMs} ms`, `cv ${x.cv}`]);
  t.push(['query overhead (not replica CPU)', `${cal.queryOverheadMs} ms`, '']);
  t.push(['connect + SCRAM', `${cal.connect.cpuMs} ms CPU`, `+ ${cal.connect.latencyMs} ms fixed`]);
  t.push(['health check (SELECT 1)', `${cal.healthCpuMs} ms CPU`, '']);
  t.push(['restart: start() -> accepts', `${cal.restartMs} ms`, '']);
  t.push(['then -> streaming', `${cal.catchUpMs} ms`, '']);
  t.push([
    'scheduler time slice',
    cal.sliceMs === undefined ? 'none' : `${cal.sliceMs} ms`,
    cal.sliceMs === undefined ? 'processor sharing' : "the kernel's tick",
  ]);
  const a = cal.atLoad;
  if (a) {
    const f = (a.queryCpuMs / a.sequentialQueryCpuMs).toFixed(2);
    t.push([
      `at load (${a.sessions} sessions, ${Math.round(a.targetCpu * 100)} % of quota${a.companions ? `, +${a.companions} replicas` : ''})`,
      `${a.queryCpuMs} ms CPU a query`,
      `${f}x the sequential mix; connect ${a.connectCpuMs} ms`,
    ]);
  }
  const m = cal.measured;
  return [
    `calibration (ms of one core) on PostgreSQL ${m.postgres}, replica quota ${m.replicaCpus} cpus`,
    `${m.machine}`,
    t.toString(),
    where,
  ].join('\n');
}
