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
import { cpus as hostCpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { ClusterDriver } from '../../cluster/driver.js';
import type { Credentials, Endpoint } from '../../core/endpoint.js';
import {
  connect,
  currentWalLsn,
  pollUntil,
  replicaReplication,
  waitCaughtUp,
  withClient,
} from '../../cluster/pg-util.js';
import { PlbError } from '../../core/errors.js';
import { measureConnects, replicaCpu } from '../../workload/calibrate.js';
import { makeQuery } from '../../workload/statements.js';
import { Rng } from '../../core/rng.js';
import { type QueryKind } from '../../run-format/config.js';
import { instantiate, type Template } from '../../cluster/templates.js';
import {
  CALIBRATE_DEFAULTS,
  KINDS,
  median,
  r3,
  type RestartSample,
  type SimMeasurement,
  type TemplateSamples,
} from './calibrate-summary.js';

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

/**
 * The state a bench's replica is in after its first seconds, reached before measuring so that
 * none of it lands in the measurement: the primary's (auto)vacuum replayed; every page read once,
 * so cached and with its hint bits set (a point query that first touches a page also checks the
 * commit log and dirties it); and those dirty pages written by a restartpoint. All of it runs in
 * the replica's cgroup: unsettled, it doubled the measured cost of cheap queries.
 */
export async function settle(
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
