import { realClock, within, type Clock } from '../clock/index.js';
import type { Connector } from '../cluster/connector.js';
import type { ClusterDriver } from '../cluster/driver.js';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import { HealthChecker } from '../cluster/health.js';
import { type HealthOptions } from '../run-format/config.js';
import { errorText, PlbError } from '../core/errors.js';
import { replicaStateAfter } from '../faults/actions.js';
import { Injector, type InjectedFault } from '../faults/injector.js';
import type { FaultPlan } from '../run-format/plan.js';
import {
  HARNESS_LOOP_P99_LIMIT_MS,
  type Recorder,
  type ReplicaState,
  type RunWriter,
} from '../metrics/types.js';
import { type RunSummary } from '../run-format/summary.js';
import { nearestRank } from '../metrics/math.js';
import type { RoleVector } from '../router/types.js';
import type { ServiceClass } from '../core/service-class.js';
import { DataSource } from '../workload/data-source.js';
import { Rng } from '../core/rng.js';
import { runClient, runSession, type SessionContext } from '../workload/session-loop.js';
import { splitByMix } from '../workload/spec.js';
import { type WorkloadSpec } from '../run-format/config.js';
import { lagWeighting, ReplicaWeights, startWriteLoad, type WriteLoad } from './write-load.js';
import type { LagWeightOptions } from '../router/lag-weight.js';
import { maxLagFactor } from '../router/max-lag.js';
import { clientZone } from '../router/zones.js';
import type { BalanceOptions } from './balance.js';
import { viaConnector, type ViaOptions } from './via.js';
import { formatHostPort } from '../core/endpoint.js';
import type { SessionRouter } from '../router/types.js';

export interface BenchConfig {
  plan: FaultPlan;
  planPath: string;
  strategy: string;
  workload: WorkloadSpec;
  seed: number;
  health: HealthOptions;
  /** The injector tells the router directly (no detection delay). */
  oracle: boolean;
  reference: RoleVector;
  partition: { premium: number; freemium: number };
  slowStartMs: number;
  /** Replica weights follow replication lag (`--lag-weights`, write runs only). */
  lagWeights?: LagWeightOptions;
  /** Static weights, per-replica quotas, zones, lag eviction (balance.ts); absent: none. */
  balance?: BalanceOptions;
  /** Per replica CPU quota (cores), to turn CPU seconds into a fraction. */
  replicaCpus: number;
  /** Seconds between progress lines (0 = none). */
  progressEveryS: number;
  /** `--strategy via`: sessions go to this balancer, not to the replica a router picked. */
  via?: ViaOptions;
}

export interface BenchDeps {
  driver: ClusterDriver;
  /** onRoleChange: the router reports every role change as it makes it. */
  createRouter: (
    replicaIds: string[],
    onRoleChange: (c: { replica: string; from: string; to: string; reason: string; nowMs: number }) => void,
  ) => SessionRouter;
  createWriter: (replicaIds: string[]) => RunWriter;
  /** The parts that watch, route and break the cluster; defaults are the real ones (`runParts`). */
  createParts?: (x: PartsInputs) => RunParts;
  /** Real time unless simulated. */
  clock?: Clock;
  log: (line: string) => void;
  /** Aborting stops the run gracefully (first Ctrl-C). */
  signal?: AbortSignal;
  /** Extra facts for config.json (versions, cluster spec...). */
  configExtras?: Record<string, unknown>;
}

export interface BenchResult {
  dir: string;
  summary: RunSummary;
  interrupted: boolean;
}

/** What the parts of a run are built from. */
export interface PartsInputs {
  config: BenchConfig;
  driver: ClusterDriver;
  ids: readonly string[];
  connector: Connector;
  clock: Clock;
  router: SessionRouter;
  writer: RunWriter;
  log: (line: string) => void;
  /** A replica's health changed (detected, or told by the oracle). */
  setHealth: (replica: string, state: 'up' | 'down', via: string, cause: string) => void;
  /** A throttle changed a replica's quota (CPU fractions are of the current quota). */
  setQuota: (replica: string, cpus: number) => void;
  /** A throttle's `weight:` changed a replica's static weight. */
  setWeight?: (replica: string, weight: number) => void;
}

export interface RunParts {
  health: HealthChecker;
  ds: DataSource;
  injector: Injector;
}

/** The real parts: health checks and sessions over the connector, faults through the driver. */
export function runParts(x: PartsInputs): RunParts {
  const { config, clock, writer } = x;
  const health = new HealthChecker(
    x.ids,
    x.connector,
    { ...config.health, clock },
    (replica, state, via, cause) => {
      if (!config.oracle) x.setHealth(replica, state, via, cause);
    },
    (f) => writer.recorder.replicaFailure(f.replica, clock.now(), f.cause),
  );
  const ds = new DataSource({
    router: x.router,
    connector: x.connector,
    connectTimeoutMs: config.workload.connectTimeoutMs,
    queryTimeoutMs: config.workload.queryTimeoutMs,
    now: () => clock.now(),
    // A balancer that could not be reached (via) says nothing of any one replica.
    onConnectError: (replica, err) => {
      if (x.ids.includes(replica)) health.reportFailure(replica, err, 'connect');
    },
    onSessionError: (replica, err) => health.reportFailure(replica, err, 'session'),
  });
  const injector = new Injector({
    driver: x.driver,
    events: config.plan.events,
    clock,
    defaultCpus: config.replicaCpus,
    log: x.log,
    onInjected: (f) => onInjected(x, f),
    // Recorded next to the fault; the summary marks its phases invalid and the run incomplete.
    onNotTaken: (f, reason) =>
      writer.event({
        type: 'note',
        tMs: f.tMs,
        what: 'fault-not-taken',
        replica: f.event.replica,
        action: f.event.action,
        error: reason,
      }),
  });
  return { health, ds, injector };
}

/** A fault was applied: recorded, logged, told to the router in oracle mode, quota tracked. */
function onInjected(x: PartsInputs, f: InjectedFault): void {
  x.writer.event({
    type: 'fault',
    tMs: f.tMs,
    issuedMs: f.issuedMs,
    doneMs: f.doneMs,
    replica: f.event.replica,
    action: f.event.action,
    ...(f.event.cpus !== undefined ? { cpus: f.event.cpus } : {}),
    ...(f.error !== undefined ? { error: f.error } : {}),
  });
  x.log(
    `t=${(f.tMs / 1000).toFixed(1)}s ${f.event.action} ${f.event.replica}${f.error ? ` FAILED: ${f.error}` : ''}`,
  );
  const a = f.event.action;
  const state = replicaStateAfter(a);
  if (x.config.oracle && state !== null) x.setHealth(f.event.replica, state, 'oracle', `injected ${a}`);
  if (a === 'throttle' && f.event.cpus !== undefined) x.setQuota(f.event.replica, f.event.cpus);
  if (a === 'throttle' && f.event.weight !== undefined) x.setWeight?.(f.event.replica, f.event.weight);
}

/**
 * One benchmark run: plan + workload -> (driver, router, clients) -> recorder -> run directory.
 * Every measured second is on disk as the run goes; an interrupted run is finished as incomplete.
 * The steps: prepare the cluster, write the config, start the parts and the clients, sample every
 * second until the plan ends (or an interrupt), then wind down, keeping whatever was measured.
 */
export async function runBench(config: BenchConfig, deps: BenchDeps): Promise<BenchResult> {
  const { driver, log } = deps;
  const clock = deps.clock ?? realClock();
  const { primary, replicas, creds } = await prepareCluster(driver, config.plan, config.workload, log);
  const ids = replicas.map((r) => r.id);
  const writer = deps.createWriter(ids);
  const router = deps.createRouter(ids, (c) =>
    writer.event({
      type: 'role',
      tMs: c.nowMs,
      replica: c.replica,
      from: c.from,
      to: c.to,
      reason: c.reason,
    }),
  );
  writeRunConfig(config, deps, writer, ids);
  const weights = new ReplicaWeights(router, config.balance?.weights);

  // Run time starts here: the clock's origin may be earlier (a virtual clock shared by a series).
  const t0 = clock.now();
  const runClock: Clock = {
    kind: clock.kind,
    now: () => clock.now() - t0,
    sleep: (ms, signal) => clock.sleep(ms, signal),
    timer: (ms, fn) => clock.timer(ms, fn),
  };
  writer.event({ type: 'run', tMs: 0, state: 'started' });
  const quota = new Map(ids.map((id) => [id, config.replicaCpus] as const));
  const connector = driver.connector(creds);
  const parts = (deps.createParts ?? runParts)({
    config,
    driver,
    ids,
    connector: config.via ? viaConnector(connector, config.via, creds, replicas) : connector,
    clock: runClock,
    router,
    writer,
    log,
    setHealth: (replica, state, via, cause) => {
      const t = runClock.now();
      if (state === 'down') router.markDown(replica, t);
      else router.markUp(replica, t);
      writer.event({ type: 'detect', tMs: t, replica, state, via, cause });
    },
    setQuota: (replica, cpus) => quota.set(replica, cpus),
    setWeight: (replica, weight) => weights.setBase(replica, weight),
  });
  let stopping = false;
  const zones = config.balance?.clientZones ? config.balance.zones : undefined;
  const ctx: SessionContext = {
    ds: parts.ds,
    recorder: writer.recorder,
    spec: config.workload,
    clock: runClock,
    stopping: () => stopping,
    ...(zones ? { zoneOf: (replica: string) => zones[replica] } : {}),
  };
  await setReplicaCpus(driver, config.balance?.cpus, quota, log);
  parts.health.start();
  parts.injector.start();
  const clients = startClients(ctx, config, new Rng(config.seed));
  const writes = startWriteLoad({
    rate: config.workload.writeRate ?? 0,
    primary,
    replicas,
    creds,
    clock: runClock,
    rng: new Rng(config.seed).fork(WRITER_STREAM),
    writer,
    log,
  });
  const sampler = new Sampler(config, driver, router, writer, runClock, quota, ids, log, writes);
  const maxLagMs = config.balance?.maxLagMs;
  const lagRule =
    config.lagWeights ??
    (maxLagMs !== undefined ? (lagMs: number | null) => maxLagFactor(lagMs, maxLagMs) : undefined);
  if (writes && lagRule) writes.onLag(lagWeighting(router, writer, lagRule, weights));

  const ending = new RunEnding(writer, runClock, log);
  const interrupted = await ending.guard('run', () =>
    sampleUntilEnd(config, sampler, runClock, deps.signal, log),
  );
  const endMs = sampler.stop(config.plan.duration * 1000);
  stopping = true;
  await ending.guard('stopping the injector', () => parts.injector.stop());
  // Sessions finish their current query; a hung one is bounded by the query timeout.
  await within(runClock, config.workload.queryTimeoutMs + 2000, Promise.allSettled(clients.tasks));
  await ending.guard('stopping the writer', () => writes?.stop(endMs));
  parts.health.stop();
  logScheduleLag(clients.scheduleLags(), writer, endMs, log);
  await ending.guard('restoring replicas', async () => {
    const restored = await parts.injector.restore();
    await setReplicaCpus(driver, config.balance?.cpus, quota, log, config.replicaCpus);
    if (restored.length > 0) log(`restored: ${restored.join(', ')}`);
  });
  const summary = await ending.finish(endMs, interrupted === true);
  for (const line of measurementWarnings(summary)) log(line);
  return { dir: writer.dir, summary, interrupted: interrupted === true };
}

/** config.json: everything a reader needs to know what this run was. */
function writeRunConfig(
  config: BenchConfig,
  deps: BenchDeps,
  writer: RunWriter,
  ids: readonly string[],
): void {
  const { plan, workload } = config;
  writer.writeConfig({
    ...deps.configExtras,
    strategy: config.strategy,
    seed: config.seed,
    plan: { ...plan, path: config.planPath },
    mix: workload.mix,
    clients: workload.clients,
    workload,
    health: config.health,
    oracle: config.oracle,
    reference: config.reference,
    partition: config.partition,
    slowStartMs: config.slowStartMs,
    ...(config.lagWeights ? { lagWeights: config.lagWeights } : {}),
    ...(config.balance && Object.keys(config.balance).length > 0 ? { balance: config.balance } : {}),
    replicaCpus: config.replicaCpus,
    replicas: ids,
    driver: deps.driver.kind,
    ...(config.via
      ? {
          via: {
            label: config.via.label,
            endpoints: {
              premium: formatHostPort(config.via.endpoints.premium),
              freemium: formatHostPort(config.via.endpoints.freemium),
            },
          },
        }
      : {}),
  });
}

/** The writer's seeded stream (the clients use forks 1-3, 100+i and 1000+n). */
const WRITER_STREAM = 7;

/** The clients: a closed population that joins over the ramp-up, or open Poisson arrivals. */
function startClients(
  ctx: SessionContext,
  config: BenchConfig,
  rng: Rng,
): { tasks: Promise<unknown>[]; scheduleLags: () => number[] } {
  const { workload, plan } = config;
  const tasks: Promise<unknown>[] = [];
  let lags: number[] = [];
  if (workload.model === 'closed') {
    const rampMs = (workload.rampUpS ?? plan.warmup) * 1000;
    const split = splitByMix(workload.clients, workload.mix);
    const classes: ServiceClass[] = [
      ...Array<ServiceClass>(split.premium).fill('premium'),
      ...Array<ServiceClass>(split.freemium).fill('freemium'),
    ];
    // Clients join as a Poisson process over the ramp-up (clamped so all have joined by its end).
    const arrivals = rng.fork(1);
    shuffle(classes, rng.fork(2));
    const zoneDraws = rng.fork(4);
    const shares = config.balance?.clientZones;
    let at = 0;
    classes.forEach((cls, i) => {
      at += arrivals.exp(rampMs / Math.max(1, classes.length));
      const zone = shares ? clientZone(shares, zoneDraws.next()) : undefined;
      tasks.push(runClient(ctx, cls, rng.fork(100 + i), Math.min(at, rampMs), zone));
    });
  } else {
    tasks.push(
      openArrivals(ctx, workload, rng.fork(3), plan.duration * 1000, config.balance?.clientZones).then(
        (l) => {
          lags = l;
        },
      ),
    );
  }
  return { tasks, scheduleLags: () => lags };
}

/** Samples once a second until the plan's end; true when an interrupt stopped it early. */
async function sampleUntilEnd(
  config: BenchConfig,
  sampler: Sampler,
  clock: Clock,
  signal: AbortSignal | undefined,
  log: (line: string) => void,
): Promise<boolean> {
  const durationMs = config.plan.duration * 1000;
  await sampler.sample();
  while (clock.now() < durationMs) {
    const next = Math.min(durationMs, (Math.floor(clock.now() / 1000) + 1) * 1000);
    await clock.sleep(next - clock.now(), signal);
    if (signal?.aborted) {
      log('interrupted: stopping clients, restoring replicas, keeping what was measured');
      return true;
    }
    await sampler.sample();
  }
  return false;
}

function logScheduleLag(lags: number[], writer: RunWriter, endMs: number, log: (line: string) => void): void {
  if (lags.length === 0) return;
  const sorted = [...lags].sort((a, b) => a - b);
  const lag = {
    meanMs: sorted.reduce((s, x) => s + x, 0) / sorted.length,
    p95Ms: nearestRank(sorted, 95) ?? 0,
    maxMs: sorted[sorted.length - 1] ?? 0,
  };
  writer.event({ type: 'note', tMs: endMs, what: 'schedule-lag', ...lag });
  log(
    `open model: ${sorted.length} sessions scheduled; start lag mean ${lag.meanMs.toFixed(1)} ms, p95 ${lag.p95Ms.toFixed(1)} ms, max ${lag.maxMs.toFixed(1)} ms`,
  );
}

/**
 * Errors anywhere in a run are recorded and make it not complete; the first is rethrown after the
 * run directory is finished. Every step of the ending runs whatever failed before it.
 */
class RunEnding {
  private readonly errors: string[] = [];
  private thrown: unknown;
  private failed = false;

  constructor(
    private readonly writer: RunWriter,
    private readonly clock: Clock,
    private readonly log: (line: string) => void,
  ) {}

  async guard<T>(what: string, step: () => Promise<T> | T): Promise<T | undefined> {
    try {
      return await step();
    } catch (err) {
      if (!this.failed) this.thrown = err;
      this.failed = true;
      const message = `${what}: ${errorText(err)}`;
      this.errors.push(message);
      this.log(`error: ${message}`);
      try {
        this.writer.event({ type: 'note', tMs: this.clock.now(), what: 'error', message });
      } catch {
        // The run directory itself failed: the error still goes into the summary.
      }
      return undefined;
    }
  }

  async finish(endMs: number, interrupted: boolean): Promise<RunSummary> {
    const state = interrupted ? 'interrupted' : this.errors.length > 0 ? 'failed' : 'finished';
    await this.guard('closing the run', () => {
      this.writer.event({ type: 'run', tMs: endMs, state });
      this.writer.tick(endMs);
    });
    const summary = this.writer.finish(endMs, !interrupted, this.errors);
    if (this.failed) throw this.thrown;
    return summary;
  }
}

/** Once a second: replica CPU (and lag with writes on), the router's view, the harness, timeline flush, progress. */
class Sampler {
  private lastCpu: Record<string, number> | null = null;
  private lastCpuAt: number;
  private lastProgress = 0;
  /** The client process's own load; meaningless in virtual time, so only on the real clock. */
  private readonly harness: HarnessMonitor | undefined;

  constructor(
    private readonly config: BenchConfig,
    private readonly driver: ClusterDriver,
    private readonly router: SessionRouter,
    private readonly writer: RunWriter,
    private readonly clock: Clock,
    private readonly quota: ReadonlyMap<string, number>,
    private readonly ids: readonly string[],
    private readonly log: (line: string) => void,
    /** With the write workload on: replication lag, sampled alongside CPU. */
    private readonly writes?: WriteLoad,
  ) {
    this.lastCpuAt = clock.now();
    this.harness = clock.kind === 'real' ? new HarnessMonitor(() => clock.now(), writer.recorder) : undefined;
  }

  async sample(): Promise<void> {
    const { writer, clock } = this;
    const t = clock.now();
    const h = this.harness?.sampleCpu();
    if (h) writer.recorder.harnessCpu(h.midMs, h.cpu);
    let cpu: Record<string, number> = {};
    const lag = this.writes
      ?.sampleLag(t)
      .catch((err: unknown) => this.log(`lag sample failed: ${errorText(err)}`));
    try {
      cpu = await this.driver.cpuSeconds();
    } catch (err) {
      this.log(`cpu sample failed: ${errorText(err)}`);
    }
    await lag;
    const tAfter = clock.now();
    const fractions: Record<string, number | null> = {};
    const dt = (tAfter - this.lastCpuAt) / 1000;
    for (const id of this.ids) {
      const cur = cpu[id];
      const prev = this.lastCpu?.[id];
      fractions[id] =
        cur === undefined || prev === undefined || dt <= 0 || cur < prev
          ? null
          : (cur - prev) / dt / (this.quota.get(id) ?? 1);
    }
    // A fraction covers [lastCpuAt, tAfter]: stamp it at the middle, so a sample taken just after
    // a fault (covering the second before it) is not counted in the fault's phase.
    writer.recorder.cpu((this.lastCpuAt + tAfter) / 2, fractions);
    this.lastCpu = cpu;
    this.lastCpuAt = tAfter;
    const state: Record<string, ReplicaState> = {};
    for (const s of this.router.snapshot())
      state[s.id] = {
        ...s.sessions,
        role: s.role,
        healthy: s.healthy,
        ...(s.weight !== undefined ? { weight: s.weight } : {}),
      };
    writer.recorder.replicaState(t, state);
    writer.tick(t);
    this.progress(t);
  }

  private progress(t: number): void {
    const every = this.config.progressEveryS;
    if (every <= 0 || t - this.lastProgress < every * 1000) return;
    this.lastProgress = t;
    const p = this.writer.progress(t, every);
    const f = (c: { p95: number | null; goodput: number }): string =>
      `p95 ${c.p95 === null ? '-' : c.p95.toFixed(1)} ms ${c.goodput.toFixed(0)} q/s`;
    this.log(
      `[${this.config.strategy} ${p.phase} ${(t / 1000).toFixed(0)}/${this.config.plan.duration}s] premium ${f(p.premium)} | freemium ${f(p.freemium)}`,
    );
  }

  /** Stops the harness monitor; returns the run's end time (the plan's end at most). */
  stop(durationMs: number): number {
    this.harness?.stop();
    return Math.min(this.clock.now(), durationMs);
  }
}

/** Lines that say when a run was not a clean measurement: the harness fell behind, false detections. */
export function measurementWarnings(summary: RunSummary): string[] {
  const out: string[] = [];
  for (const p of summary.phases) {
    const h = p.harness;
    if (h?.saturated)
      out.push(
        `warning: phase ${p.name}: client event-loop delay p99 ${h.loopP99Ms} ms (> ${HARNESS_LOOP_P99_LIMIT_MS} ms): the harness, not only the replicas, set the pace (client CPU up to ${Math.round((h.cpuMax ?? 0) * 100)}% of a core)`,
      );
  }
  const d = summary.detectionCounts;
  if (d && d.unexplained > 0)
    out.push(
      `warning: ${d.unexplained} of ${d.down + d.up} detections are not explained by an injected fault (false detections)`,
    );
  return out;
}

/**
 * The client process's own load: CPU (user + system) as a fraction of one core, sampled by the
 * sampler once a second, and event-loop delay, from a 10 ms timer that records how late it ran
 * (a harness that falls behind inflates every latency it measures). Raw delays go to the
 * recorder, so a phase's p99 is exact, not a summary of per-second summaries.
 */
const LOOP_PERIOD_MS = 10;

class HarnessMonitor {
  private cpu = process.cpuUsage();
  private at: number;
  private last: number;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly now: () => number,
    recorder: Recorder,
  ) {
    this.at = now();
    this.last = this.at;
    this.timer = setInterval(() => {
      const t = now();
      recorder.loopDelay(t, Math.max(0, t - this.last - LOOP_PERIOD_MS));
      this.last = t;
    }, LOOP_PERIOD_MS);
  }

  /** CPU over the interval since the last sample, stamped at its middle (like the CPU fractions). */
  sampleCpu(): { midMs: number; cpu: number } {
    const t = this.now();
    const used = process.cpuUsage(this.cpu);
    this.cpu = process.cpuUsage();
    const wallUs = Math.max(1, (t - this.at) * 1000);
    const midMs = (this.at + t) / 2;
    this.at = t;
    return { midMs, cpu: (used.user + used.system) / wallUs };
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/**
 * Before a run (or a calibration): the cluster has the plan's replicas, every replica is up and
 * unpaused, and the dataset is loaded and replicated.
 */
export async function prepareCluster(
  driver: ClusterDriver,
  plan: FaultPlan,
  workload: WorkloadSpec,
  log: (line: string) => void,
): Promise<{ primary: Endpoint; replicas: Endpoint[]; creds: Credentials }> {
  const endpoints = driver.endpoints();
  const primary = endpoints.find((e) => e.kind === 'primary');
  const replicas = endpoints.filter((e) => e.kind === 'replica');
  if (!primary) throw new PlbError('CLUSTER_NOT_FOUND', 'the cluster has no primary endpoint');
  if (replicas.length < plan.replicas) {
    throw new PlbError(
      'BAD_INPUT',
      `plan ${plan.name} needs ${plan.replicas} replicas but the cluster has ${replicas.length}`,
      { hint: `plb cluster up --replicas ${plan.replicas}` },
    );
  }
  const creds = await driver.credentials();
  await resetCluster(driver, replicas, log);
  const ds0 = await driver.prepareDataset(workload.datasetRows, log);
  if (ds0.loaded) log(`dataset loaded and replicated in ${(ds0.ms / 1000).toFixed(1)} s`);
  return { primary, replicas, creds };
}

/** Open model: sessions arrive as a Poisson process at `rate` per second, whatever happens to them. */
async function openArrivals(
  ctx: SessionContext,
  spec: WorkloadSpec,
  rng: Rng,
  durationMs: number,
  zoneShares?: Readonly<Record<string, number>>,
): Promise<number[]> {
  const lags: number[] = [];
  const zoneDraws = rng.fork(4);
  const running = new Set<Promise<unknown>>();
  let next = 0;
  let n = 0;
  const premiumShare = spec.mix.premium / (spec.mix.premium + spec.mix.freemium);
  while (!ctx.stopping()) {
    next += rng.exp(1000 / spec.rate);
    if (next >= durationMs) break;
    await ctx.clock.sleep(next - ctx.clock.now());
    if (ctx.stopping()) break;
    const lag = Math.max(0, ctx.clock.now() - next);
    lags.push(lag);
    const cls: ServiceClass = rng.next() < premiumShare ? 'premium' : 'freemium';
    if (running.size >= spec.maxOpenSessions) {
      ctx.recorder.admissionFailed(cls, ctx.clock.now(), 'overload');
      continue;
    }
    const zone = zoneShares ? clientZone(zoneShares, zoneDraws.next()) : undefined;
    const p = runSession(ctx, cls, rng.fork(1000 + n++), next, zone);
    running.add(p);
    void p.finally(() => running.delete(p));
  }
  await Promise.allSettled([...running]);
  return lags;
}

/**
 * Every replica up, unpaused and replaying before a run starts (the previous run may have left one
 * down, or, killed hard, with its replay paused: the dataset wait would never end).
 */
/**
 * The plan's per-replica CPU quotas (`cpus:`), set before the clients start, through the driver's
 * throttle (every driver's setCpus); `to` given: put back to that quota at the end.
 */
async function setReplicaCpus(
  driver: ClusterDriver,
  cpus: Readonly<Record<string, number>> | undefined,
  quota: Map<string, number>,
  log: (l: string) => void,
  to?: number,
): Promise<void> {
  if (!cpus) return;
  for (const [id, c] of Object.entries(cpus)) {
    await driver.setCpus(id, to ?? c);
    quota.set(id, to ?? c);
  }
  if (to === undefined)
    log(
      `cpus: ${Object.entries(cpus)
        .map(([id, c]) => `${id}=${c}`)
        .join(', ')}${driver.cpusEnforced ? '' : ' (not enforced by this driver)'}`,
    );
}

async function resetCluster(
  driver: ClusterDriver,
  replicas: readonly Endpoint[],
  log: (l: string) => void,
): Promise<void> {
  const status = await driver.status();
  for (const r of replicas) {
    const s = status.find((x) => x.id === r.id);
    if (s?.paused) {
      log(`unpausing ${r.id}`);
      await driver.unpause(r.id);
    } else if (!s?.up) {
      log(`starting ${r.id} (it was down)`);
      await driver.start(r.id);
    }
    // Resuming a replay that runs is a no-op; the simulated cluster has no replay.
    if (driver.kind !== 'sim') await driver.setReplayPaused(r.id, false);
  }
}

function shuffle<T>(xs: T[], rng: Rng): void {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    const a = xs[i] as T;
    xs[i] = xs[j] as T;
    xs[j] = a;
  }
}
