/**
 * One benchmark run: plan + workload -> (driver, router, clients) -> recorder -> run directory.
 * The same runner serves the real clock and the simulator's virtual one.
 */
import { join } from 'node:path';
import { realClock, within, type Clock } from '../clock/index.js';
import type { ClusterDriver } from '../cluster/driver.js';
import { errorText } from '../core/errors.js';
import { Rng } from '../core/rng.js';
import { measurementWarnings } from '../metrics/summary/measurement-warnings.js';
import { RUN_FILES } from '../metrics/store/run-writer.js';
import { Sampler } from '../metrics/samplers/sampler.js';
import type { RunWriter } from '../metrics/types.js';
import { maxLagFactor } from '../router/max-lag.js';
import type { BenchConfig } from '../run-format/config.js';
import type { RunSummary } from '../run-format/summary.js';
import { logScheduleLag, startClients } from '../workload/arrivals.js';
import type { SessionContext } from '../workload/session-loop.js';
import { benchNeeds, prepareCluster } from './prepare-cluster.js';
import { RunEnding } from './run-ending.js';
import {
  runParts,
  setReplicaCpus,
  type InstanceParts,
  type PartsInputs,
  type RunParts,
} from './run-parts.js';
import { RouterFleet } from './router-fleet.js';
import { openViewReader, viewLine, ViewPoller } from './view-poller.js';
import { routerFor, type RouterFactory } from './options/router-settings.js';
import { templateRunParts } from './templates-run.js';
import { laggingTicks, WorkerPool, t0Epoch } from './workers/worker-pool.js';
import { NodeLog, nodeShare } from './workers/node-log.js';
import { checkStartAhead, claimInjector, joinCluster, untilStart } from './workers/node.js';
import { viaConnector, viaOptionsOf } from './via.js';
import { lagWeighting, startWriteLoad } from './write-load.js';
import { ReplicaWeights } from '../router/lag-weight.js';

export interface BenchDeps {
  driver: ClusterDriver;
  /** The run's router; default: the one its config describes (router-settings.ts). */
  createRouter?: RouterFactory;
  createWriter: (replicaIds: string[]) => RunWriter;
  /** The parts that watch, route and break the cluster; defaults are the real ones (`runParts`). */
  createParts?: (x: PartsInputs) => RunParts;
  /** Real time unless simulated. */
  clock?: Clock;
  log: (line: string) => void;
  /** Seconds between progress lines (0 or absent: none). */
  progressEveryS?: number;
  /** Aborting stops the run gracefully (first Ctrl-C). */
  signal?: AbortSignal;
}

export interface BenchResult {
  dir: string;
  summary: RunSummary;
  interrupted: boolean;
}

/** The writer's seeded stream (the clients use forks 1-4, 100+i and 1000+n). */
const WRITER_STREAM = 7;

/**
 * One benchmark run. Every measured second is on disk as the run goes; an interrupted run is
 * finished as incomplete. The steps: prepare the cluster, write the config, start the parts and
 * the clients, sample every second until the plan ends (or an interrupt), then wind down, keeping
 * whatever was measured.
 */
export async function runBench(config: BenchConfig, deps: BenchDeps): Promise<BenchResult> {
  const { driver, log } = deps;
  const clock = deps.clock ?? realClock();
  const { plan, workload } = config;
  // --worker-index: one node of several; index 0 alone prepares the cluster and injects (node.ts).
  const share = nodeShare(config.routers);
  const injects = share === undefined || share.index === 0;
  const { primary, replicas, creds } = injects
    ? await prepareCluster(driver, benchNeeds(plan, workload), log)
    : await joinCluster(driver, plan.replicas);
  const ids = replicas.map((r) => r.id);
  if (share) checkStartAhead(share.startAtMs);
  const releaseClaim =
    share?.index === 0 ? await claimInjector(primary, creds, config.health.timeoutMs) : undefined;
  // The replica view: every replica read once before anything is written (a view it cannot give: one line).
  const reader = await openViewReader(driver, creds, ids, config);
  const base = deps.createWriter(ids);
  const node = share ? new NodeLog(base, share, config.routers?.count ?? 1) : undefined;
  const writer = node?.writer ?? base;
  const fleet = new RouterFleet(config, ids, deps.createRouter ?? routerFor(config), writer);
  // config.json: the configuration as it was resolved, and what only the run knows.
  writer.writeConfig({
    ...config,
    mix: workload.mix,
    clients: workload.clients,
    replicas: ids,
    driver: driver.kind,
  });
  const weights = new ReplicaWeights(fleet, config.balance?.weights);
  // --workers: the routers and sessions in W processes; here the plan, the faults, the recorder.
  let nowMs = (): number => 0;
  const lost: string[] = [];
  const pool =
    fleet.spec.workers === undefined || share
      ? undefined
      : new WorkerPool({
          config,
          count: fleet.spec.workers,
          endpoints: driver.endpoints(),
          creds,
          ids,
          writer,
          book: fleet.book,
          log,
          onLost: (reason) => {
            lost.push(reason);
            log(`error: ${reason}`);
            writer.event({ type: 'note', tMs: nowMs(), what: 'worker-lost', message: reason });
          },
        });
  await pool?.fork();

  // Run time starts here (a node: at the shared --start-at); the clock's origin may be earlier (a virtual clock shared by a series).
  const t0 = share ? await untilStart(share.startAtMs, clock) : clock.now();
  const runClock: Clock = {
    kind: clock.kind,
    now: () => clock.now() - t0,
    sleep: (ms, signal) => clock.sleep(ms, signal),
    timer: (ms, fn) => clock.timer(ms, fn),
    after: (ms, fn) => clock.after(ms, fn),
  };
  nowMs = runClock.now;
  writer.event({ type: 'run', tMs: 0, state: 'started' });
  const quota = new Map(ids.map((id) => [id, config.replicaCpus] as const));
  const connector = driver.connector(creds);
  const parts = (deps.createParts ?? runParts)({
    config,
    driver,
    ids,
    connector: config.via ? viaConnector(connector, viaOptionsOf(config.via), creds, replicas) : connector,
    clock: runClock,
    routers: fleet.routers,
    writer,
    log,
    setHealth: (j, replica, state, via, cause) =>
      fleet.setHealth(j, replica, state, via, cause, runClock.now()),
    setQuota: (replica, cpus) => quota.set(replica, cpus),
    setWeight: (replica, weight) => weights.setBase(replica, weight),
  });
  let stopping = false;
  const zones = config.balance?.clientZones ? config.balance.zones : undefined;
  const tpl = templateRunParts(connector, workload, runClock);
  const first = parts.instances[0] as InstanceParts;
  const ctx: SessionContext = {
    ds: first.ds,
    recorder: writer.recorder,
    spec: workload,
    clock: runClock,
    stopping: () => stopping,
    templates: tpl.latencies,
    ...(tpl.primary ? { primary: tpl.primary } : {}),
    ...(zones ? { zoneOf: (replica: string) => zones[replica] } : {}),
  };
  // Instance i: its router's data source, and (several instances) a recorder that also books it.
  const contexts = Array.from(
    { length: fleet.spec.count },
    (_, i): SessionContext => ({
      ...ctx,
      ds: (parts.instances[fleet.routerOf(i)] ?? first).ds,
      ...(node
        ? { recorder: node.recorder(i, fleet.book?.recorderFor(i, base.recorder) ?? base.recorder) }
        : fleet.book
          ? { recorder: fleet.book.recorderFor(i, writer.recorder) }
          : {}),
    }),
  );
  // --workers: each worker polls for its own routers; the parent's reader only checked the view (and the strategy).
  const observers = reader ? fleet.observers() : [];
  if (pool) await reader?.close();
  const poller =
    reader && !pool ? new ViewPoller(reader, ids, observers, runClock, fleet.spec.viewIntervalMs) : undefined;
  const owns = (i: number): boolean => share === undefined || i % share.count === share.index;
  if (injects) await setReplicaCpus(driver, config.balance?.cpus, quota, log);
  if (!pool) parts.instances.forEach((p, j) => owns(j) && p.health.start());
  if (injects) parts.injector.start();
  poller?.start();
  pool?.start(t0Epoch(runClock.now()));
  const clients = pool
    ? { tasks: [], scheduleLags: () => [] }
    : startClients(
        contexts,
        workload,
        { warmupS: plan.warmup, durationS: plan.duration },
        new Rng(config.seed),
        config.balance?.clientZones,
        share ? owns : undefined,
      );
  const writes = startWriteLoad({
    rate: injects ? (workload.writeRate ?? 0) : 0,
    primary,
    replicas,
    creds,
    clock: runClock,
    rng: new Rng(config.seed).fork(WRITER_STREAM),
    writer,
    log,
  });
  const sampler = new Sampler({
    driver,
    router: fleet.sampled,
    // Workers: the routers live there (no disagreement sampled here); a second is written once their values are in.
    perSecond: (t) => (pool || share ? undefined : fleet.perSecond(t)),
    writer: pool ? laggingTicks(writer, pool) : writer,
    clock: runClock,
    quota,
    ids,
    log,
    progressEveryS: deps.progressEveryS ?? 0,
    label: config.strategy,
    durationS: plan.duration,
    ...(writes ? { sampleLag: (t: number) => writes.sampleLag(t) } : {}),
  });
  const maxLagMs = config.balance?.maxLagMs;
  const lagRule =
    config.lagWeights ??
    (maxLagMs !== undefined ? (lagMs: number | null) => maxLagFactor(lagMs, maxLagMs) : undefined);
  if (writes && lagRule) writes.onLag(lagWeighting(fleet, writer, lagRule, weights));

  const ending = new RunEnding(writer, runClock, log);
  const interrupted = await ending.guard('run', () => sampler.untilEnd(deps.signal));
  const endMs = sampler.stop();
  stopping = true;
  await pool?.stop(workload.queryTimeoutMs + 10_000);
  for (const reason of lost) ending.lost(reason);
  for (const p of parts.instances) p.admission?.stop();
  await poller?.stop();
  if (poller) log(viewLine(poller));
  await ending.guard('stopping the injector', () => parts.injector.stop());
  // Sessions finish their current query; a hung one is bounded by the query timeout.
  await within(runClock, workload.queryTimeoutMs + 2000, Promise.allSettled(clients.tasks));
  await ending.guard('stopping the writer', () => writes?.stop(endMs));
  for (const p of parts.instances) p.health.stop();
  logScheduleLag(clients.scheduleLags(), writer, endMs, log);
  await ending.guard('restoring replicas', async () => {
    if (!injects) return;
    const restored = await parts.injector.restore();
    await setReplicaCpus(driver, config.balance?.cpus, quota, log, config.replicaCpus);
    if (restored.length > 0) log(`restored: ${restored.join(', ')}`);
  });
  await releaseClaim?.();
  const summary = await ending.finish(endMs, interrupted === true);
  if (pool) summary.workers = pool.summary();
  if (node) summary.workers = node.summary(summary.complete);
  fleet.finish(summary, join(writer.dir, RUN_FILES.summary));
  await tpl.finish(summary, join(writer.dir, RUN_FILES.summary)).catch((err: unknown) => {
    log(`per-template figures not written: ${errorText(err)}`);
  });
  for (const line of measurementWarnings(summary)) log(line);
  return { dir: writer.dir, summary, interrupted: interrupted === true };
}
