/**
 * `plb calibrate`: measures one real replica under its CPU quota so the simulator can mimic it
 * (the format is src/cluster/sim/calibration.ts). Per query template, the replica CPU a query
 * costs and its spread; the fixed latency a query adds outside the replica's CPU; a connect's CPU
 * and latency; a health check's CPU; how long a killed replica takes to accept connections after
 * start(), then to stream again.
 *
 * CPU comes from the replica's cgroup counter (driver.cpuSeconds(), as for --think-time auto),
 * less the idle replica's own rate. One session runs each template alone, sequentially, and reads
 * the counter after every query: the per-query differences give the spread. Latency is not used
 * for the spread when the counter is fine-grained, because under a CFS quota a lone query runs at
 * full core speed until the quota of the period is spent and then waits for the next period, so
 * its latency measures the throttler more than the query.
 */
import { cpus as hostCpus, loadavg, release, type as osType } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import Table from 'cli-table3';
import type pg from 'pg';
import type { ClusterDriver } from '../cluster/driver.js';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import {
  connect,
  currentWalLsn,
  pollUntil,
  replicaReplication,
  waitCaughtUp,
  withClient,
} from '../cluster/pg-util.js';
import { DEFAULT_REPLICAS, parseCpus, parseDriverChoice } from '../cluster/select.js';
import { checkCalibration, type SimCalibration } from '../cluster/sim/calibration.js';
import { validateClusterName } from '../cluster/state.js';
import { formatError, PlbError } from '../core/errors.js';
import { coefficientOfVariation } from '../metrics/math.js';
import { quantile } from '../metrics/math.js';
import { checkWritableFile, writeFileSafe } from '../core/safe-write.js';
import { tableStyle } from '../core/table-style.js';
import { measureConnects, replicaCpu, type ConnectSamples } from '../workload/calibrate.js';
import { makeQuery } from '../workload/statements.js';
import { Rng } from '../core/rng.js';
import { DEFAULT_WORKLOAD } from '../workload/spec.js';
import { type QueryKind } from '../run-format/config.js';
import { allTemplates, instantiate, type Template, type TemplateSet } from '../cluster/templates.js';
import { calibrationTemplates, prepareCalibrationTemplates } from './calibrate-templates.js';
import { leaseCluster } from './cluster-lease.js';
import { handleStopSignals, STOP_SIGNALS } from '../cli/stop-signals.js';

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
export interface Round {
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

const r3 = (v: number): number => Math.round(v * 1000) / 1000;
const r2 = (v: number): number => Math.round(v * 100) / 100;

function median(xs: readonly number[]): number {
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
  meta: { at: string; machine: string; note?: string },
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
  };
  // The file plb writes must be one plb reads.
  return checkCalibration(cal, 'measured');
}

export function machineDescription(): string {
  const cpus = hostCpus();
  return `${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${cpus.length} cores, ${osType()} ${release()}`;
}

function interrupted(): PlbError {
  return new PlbError('INTERRUPTED', 'calibration interrupted');
}

/**
 * Kills the replica, starts it, and times (polling every 20 ms) when it first answers a query and
 * when its WAL receiver streams. Not start()'s own resolution: the Docker driver's start() waits
 * for streaming, so it cannot tell the two apart.
 */
async function timeRestart(
  driver: ClusterDriver,
  replica: Endpoint,
  creds: Credentials,
  timeoutMs = 120_000,
): Promise<RestartSample> {
  await driver.kill(replica.id);
  await pollUntil(
    `${replica.id} to go down after the kill`,
    async () => !(await driver.status()).find((s) => s.id === replica.id)?.up,
    30_000,
  );
  // Let the engine see the container exit: start() of a container still marked running is a no-op.
  await sleep(1000);
  const t0 = performance.now();
  let startErr: unknown;
  const started = driver.start(replica.id).then(
    () => undefined,
    (err: unknown) => void (startErr = err ?? new Error('start failed')),
  );
  let acceptMs: number | null = null;
  for (;;) {
    const r = await replicaReplication(replica, creds, null, 1000);
    const t = performance.now() - t0;
    if (r.up && acceptMs === null) acceptMs = t;
    if (r.up && r.replication === 'streaming') {
      await started;
      if (startErr !== undefined) throw startErr;
      return { acceptMs: acceptMs ?? t, streamMs: t };
    }
    if (startErr !== undefined) throw startErr;
    if (t > timeoutMs)
      throw new PlbError('TIMEOUT', `${replica.id} did not stream within ${timeoutMs / 1000} s of start()`);
    await sleep(20);
  }
}

/** The measurement itself, on one replica of a running cluster that has the dataset. */
export async function measureReplica(opts: {
  driver: ClusterDriver;
  replica: Endpoint;
  credentials: Credentials;
  replicaCpus: number;
  quotaEnforced?: boolean;
  datasetRows: number;
  samples: number;
  restarts: number;
  warmMs?: number;
  minMs?: number;
  idleMs?: number;
  rounds?: number;
  /** A workload file's read templates, measured like plb's three (`plb calibrate --workload`). */
  extra?: readonly Template[];
  log: (line: string) => void;
  signal?: AbortSignal;
}): Promise<SimMeasurement> {
  const { driver, replica, credentials: creds, samples, log, signal } = opts;
  const warmMs = opts.warmMs ?? CALIBRATE_DEFAULTS.warmMs;
  const idleMs = opts.idleMs ?? CALIBRATE_DEFAULTS.idleMs;
  const minMs = opts.minMs ?? CALIBRATE_DEFAULTS.minMs;
  const rounds = opts.rounds ?? CALIBRATE_DEFAULTS.rounds;
  const check = (): void => {
    if (signal?.aborted) throw interrupted();
  };
  const cpu = replicaCpu(driver, replica.id, 'calibrate on the docker driver (cgroup CPU counters)');
  const loadBefore = loadavg()[0] ?? 0;
  const rng = new Rng(1);
  // Reading the counter after every query needs a cheap read (cgroup files, not the stats API).
  const probe: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    await cpu();
    probe.push(performance.now() - t);
  }
  const perQuery = median(probe) < 20;
  if (!perQuery) log(`the CPU counter takes ${Math.round(median(probe))} ms to read: no per-query CPU`);

  const session: pg.Client = await connect(replica, creds, { applicationName: 'plb-calibrate' });
  try {
    const postgres = String(
      (await session.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? '',
    );
    // The idle replica's own CPU (WAL receiver, startup process, ...), before and after the queries.
    const idleRate = async (): Promise<number> => {
      const i0 = await cpu();
      const w0 = performance.now();
      await sleep(idleMs, undefined, signal ? { signal } : {}).catch(() => undefined);
      check();
      return Math.max(0, (((await cpu()) - i0) * 1e6) / (performance.now() - w0));
    };
    const idleBefore = await idleRate();

    // Templates interleaved in rounds, each round's mean taken apart: a burst of the host's other
    // load then inflates one round, which the median leaves out, not a whole template.
    const extra = opts.extra ?? [];
    const names = [...KINDS, ...extra.map((t) => t.name)];
    const statement = (kind: string) => {
      const t = extra.find((x) => x.name === kind);
      return t ? instantiate(t, opts.datasetRows, rng) : makeQuery(kind as QueryKind, opts.datasetRows, rng);
    };
    const templates = Object.fromEntries(
      names.map((k) => [k, { rounds: [], latencyMs: [], cpuMs: [] }]),
    ) as unknown as SimMeasurement['templates'];
    const perRound = Math.ceil(samples / rounds);
    for (let round = 0; round < rounds; round++) {
      for (const kind of names) {
        const t = templates[kind] as TemplateSamples;
        const warmEnd = Date.now() + (round === 0 ? warmMs : 0);
        for (let i = 0; i < 3 || Date.now() < warmEnd; i++) {
          check();
          const q = statement(kind);
          await session.query(q.text, q.values);
        }
        const c0 = await cpu();
        const s0 = performance.now();
        let last = c0;
        let n = 0;
        for (; n < perRound || performance.now() - s0 < minMs / rounds; n++) {
          check();
          const q = statement(kind);
          const w = performance.now();
          await session.query(q.text, q.values);
          t.latencyMs.push(performance.now() - w);
          if (perQuery) {
            const now = await cpu();
            t.cpuMs.push((now - last) * 1000);
            last = now;
          }
        }
        t.rounds.push({ cpuS: (await cpu()) - c0, spanMs: performance.now() - s0, n });
      }
    }
    for (const kind of names) {
      const t = templates[kind] as TemplateSamples;
      const ms = t.rounds.map((r) => r3((r.cpuS * 1000) / r.n));
      log(`${kind}: ${t.latencyMs.length} queries, ms CPU each by round ${ms.join(' ')}`);
    }

    const h0 = await cpu();
    const hs = performance.now();
    let checks = 0;
    for (; checks < samples || performance.now() - hs < minMs; checks++) {
      check();
      await session.query('SELECT 1');
    }
    const health = { count: checks, cpuS: (await cpu()) - h0, spanMs: performance.now() - hs };
    const idleCpuMsPerS = (idleBefore + (await idleRate())) / 2;
    await session.end().catch(() => undefined);

    check();
    const cs = performance.now();
    const conn = await measureConnects({
      replica,
      credentials: creds,
      count: samples,
      cpu,
      perSample: perQuery,
      ...(signal ? { signal } : {}),
    });
    check();
    const connects = { ...conn, spanMs: performance.now() - cs };
    log(`connect: ${samples} connects, ${r3((conn.cpuS * 1000) / samples)} ms CPU each`);

    const restarts: RestartSample[] = [];
    for (let i = 0; i < opts.restarts; i++) {
      check();
      const r = await timeRestart(driver, replica, creds);
      restarts.push(r);
      log(
        `restart ${i + 1}/${opts.restarts}: accepts after ${Math.round(r.acceptMs)} ms, streams after ${Math.round(r.streamMs)} ms`,
      );
    }
    return {
      replica: replica.id,
      replicas: driver.endpoints().filter((e) => e.kind === 'replica').length,
      replicaCpus: opts.replicaCpus,
      quotaEnforced: opts.quotaEnforced ?? true,
      driver: driver.kind,
      postgres,
      datasetRows: opts.datasetRows,
      samples,
      warmMs,
      minMs,
      idleCpuMsPerS,
      templates,
      ...(extra.length > 0 ? { extraSql: Object.fromEntries(extra.map((t) => [t.name, t.sql])) } : {}),
      health,
      connects,
      restarts,
      load: { before: loadBefore, after: loadavg()[0] ?? 0, cores: hostCpus().length },
    };
  } finally {
    await session.end().catch(() => undefined);
  }
}

export interface CalibrateFlags {
  out: string;
  name: string;
  cpus?: string | undefined;
  samples: number;
  restarts: number;
  driver: string;
  'base-port': number;
  note?: string | undefined;
  /** A workload file whose own templates are measured too. */
  workload?: string | undefined;
}

function positiveInt(flag: string, n: number, max: number): number {
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new PlbError('BAD_INPUT', `--${flag}: must be an integer from 1 to ${max} (got ${n})`);
  return n;
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
  const m = cal.measured;
  return [
    `calibration (ms of one core) on PostgreSQL ${m.postgres}, replica quota ${m.replicaCpus} cpus`,
    `${m.machine}`,
    t.toString(),
    where,
  ].join('\n');
}

/**
 * `plb calibrate`: checks every flag before anything starts, leases a cluster (the existing one of
 * that name, or one brought up for this command and removed after), measures r1 under the quota,
 * writes the file and prints the summary. Returns the exit code.
 */
export async function executeCalibrate(
  flags: CalibrateFlags,
  io: { log: (line: string) => void; warn: (line: string) => void; stdout: (text: string) => void },
): Promise<{ code: number; calibration?: SimCalibration }> {
  try {
    const samples = positiveInt('samples', flags.samples, CALIBRATE_LIMITS.samples);
    const restarts = positiveInt('restarts', flags.restarts, CALIBRATE_LIMITS.restarts);
    const cpus = flags.cpus === undefined ? undefined : parseCpus('--cpus', flags.cpus);
    const driverChoice = parseDriverChoice(flags.driver);
    // The simulator is what a calibration feeds: it cannot be what one measures.
    // An external cluster is not plb's to kill and restart for a calibration.
    if (driverChoice === 'sim' || driverChoice === 'external')
      throw new PlbError(
        'BAD_INPUT',
        `--driver: calibrate measures a replica plb made: auto, docker or local (got ${driverChoice})`,
      );
    try {
      validateClusterName(flags.name);
    } catch (err) {
      throw new PlbError('BAD_INPUT', `--${formatError(err)}`);
    }
    if (
      !Number.isInteger(flags['base-port']) ||
      flags['base-port'] < 1024 ||
      flags['base-port'] > 65535 - DEFAULT_REPLICAS
    )
      throw new PlbError(
        'BAD_INPUT',
        `--base-port: must be an integer from 1024 to ${65535 - DEFAULT_REPLICAS} (got ${flags['base-port']})`,
      );
    const toStdout = flags.out === '-';
    const templates = flags.workload === undefined ? undefined : calibrationTemplates(flags.workload);
    if (!toStdout) checkWritableFile(flags.out, '--out');
    const stop = handleStopSignals({ warn: io.warn });
    let cal: SimCalibration;
    try {
      const lease = await leaseCluster({
        name: flags.name,
        driver: driverChoice,
        replicas: DEFAULT_REPLICAS,
        sessions: 1,
        sessionsField: '--name',
        over: { basePort: flags['base-port'], ...(cpus !== undefined ? { cpus } : {}) },
        keep: false,
        log: io.warn,
      });
      try {
        cal = await calibrateOn(lease.driver, {
          cpus,
          samples,
          restarts,
          note: flags.note,
          log: io.warn,
          signal: stop.signal,
          ...(templates ? { templates } : {}),
        });
      } finally {
        await lease.release();
      }
    } catch (err) {
      if (stop.signal.aborted) {
        io.warn(`Error: ${formatError(err)}`);
        return { code: stop.code() ?? STOP_SIGNALS.SIGINT };
      }
      throw err;
    } finally {
      stop.dispose();
    }
    const json = `${JSON.stringify(cal, null, 2)}\n`;
    if (toStdout) {
      io.stdout(json);
      io.warn(renderCalibration(cal, 'written to stdout'));
    } else {
      writeFileSafe(flags.out, json, '--out');
      io.log(renderCalibration(cal, `written to ${flags.out}`));
    }
    return { code: 0, calibration: cal };
  } catch (err) {
    io.warn(`Error: ${formatError(err)}`);
    return { code: 1 };
  }
}

/**
 * The state a bench's replica is in after its first seconds, reached before measuring so that
 * none of it lands in the measurement: the primary's (auto)vacuum replayed; every page read once,
 * so cached and with its hint bits set (a point query that first touches a page also checks the
 * commit log and dirties it); and those dirty pages written by a restartpoint. All of it runs in
 * the replica's cgroup: unsettled, it doubled the measured cost of cheap queries.
 */
async function settle(
  driver: ClusterDriver,
  replica: Endpoint,
  creds: Credentials,
  rows: number,
  log: (line: string) => void,
): Promise<void> {
  const primary = driver.endpoints().find((e) => e.kind === 'primary');
  if (!primary) throw new PlbError('CLUSTER_NOT_FOUND', 'the cluster has no primary endpoint');
  const t0 = Date.now();
  const slow = { timeoutMs: 5000, queryTimeoutMs: 300_000 };
  const onPrimary = (sql: string) => withClient(primary, creds, (c) => c.query(sql), slow);
  const replayed = async () => waitCaughtUp(replica, creds, await currentWalLsn(primary, creds));
  await onPrimary('VACUUM ANALYZE plb_items');
  await replayed();
  await withClient(
    replica,
    creds,
    async (c) => {
      const rng = new Rng(2);
      for (let i = 0; i < 3; i++) {
        const q = makeQuery('scan', rows, rng);
        await c.query(q.text, q.values);
      }
    },
    slow,
  );
  // A standby's CHECKPOINT is a restartpoint, which needs a checkpoint replayed since the last one.
  await onPrimary('CHECKPOINT');
  await replayed();
  await withClient(replica, creds, (c) => c.query('CHECKPOINT'), slow);
  log(`vacuum, warm-up scans and checkpoints done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

/** On a leased cluster: r1 ready, at the quota asked for (restored after), dataset there; measure. */
async function calibrateOn(
  driver: ClusterDriver,
  opts: {
    cpus: number | undefined;
    samples: number;
    restarts: number;
    note: string | undefined;
    log: (line: string) => void;
    signal: AbortSignal;
    templates?: TemplateSet;
  },
): Promise<SimCalibration> {
  const replica = driver.endpoints().find((e) => e.id === CALIBRATE_DEFAULTS.replica);
  if (!replica)
    throw new PlbError('CLUSTER_NOT_FOUND', `the cluster has no replica ${CALIBRATE_DEFAULTS.replica}`);
  const creds = await driver.credentials();
  const st = (await driver.status()).find((s) => s.id === replica.id);
  if (st?.paused) await driver.unpause(replica.id);
  else if (!st?.up) await driver.start(replica.id);
  await driver.waitReady(replica.id);
  const rows = DEFAULT_WORKLOAD.datasetRows;
  const ds = await driver.prepareDataset(rows, opts.log);
  if (ds.loaded) opts.log(`dataset loaded and replicated in ${(ds.ms / 1000).toFixed(1)} s`);
  await settle(driver, replica, creds, rows, opts.log);
  if (opts.templates)
    await prepareCalibrationTemplates(driver, replica, creds, opts.templates, rows, opts.log);
  const quota = opts.cpus ?? driver.spec.cpus;
  const changeQuota = quota !== driver.spec.cpus;
  if (changeQuota) await driver.setCpus(replica.id, quota);
  try {
    // The local driver enforces quotas only as root with writable cgroups.
    const quotaEnforced = (driver as { cpusEnforced?: boolean }).cpusEnforced !== false;
    if (!quotaEnforced) opts.log(`warning: ${replica.id}'s CPU quota is recorded but not enforced here`);
    opts.log(`measuring ${replica.id} at ${quota} cpus (${opts.samples} samples per measure)`);
    const m = await measureReplica({
      driver,
      replica,
      credentials: creds,
      replicaCpus: quota,
      quotaEnforced,
      datasetRows: rows,
      samples: opts.samples,
      restarts: opts.restarts,
      log: opts.log,
      signal: opts.signal,
      ...(opts.templates ? { extra: allTemplates(opts.templates).filter((t) => !t.writes) } : {}),
    });
    return summariseCalibration(m, {
      at: new Date().toISOString(),
      machine: machineDescription(),
      ...(opts.note ? { note: opts.note } : {}),
    });
  } finally {
    // An interrupted restart must not leave the replica of someone's cluster down.
    const after = (await driver.status().catch(() => [])).find((s) => s.id === replica.id);
    if (after && !after.up) await driver.start(replica.id).catch(() => undefined);
    if (changeQuota) await driver.setCpus(replica.id, driver.spec.cpus).catch(() => undefined);
  }
}
