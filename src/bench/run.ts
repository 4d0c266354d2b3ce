import { performance } from 'node:perf_hooks';
import type { ClusterDriver, Credentials, Endpoint } from '../cluster/driver.js';
import { HealthChecker, type HealthOptions } from '../cluster/health.js';
import { PlbError } from '../errors.js';
import { Injector, type InjectedFault } from '../faults/injector.js';
import type { FaultPlan } from '../faults/types.js';
import {
  HARNESS_LOOP_P99_LIMIT_MS,
  type Recorder,
  type RunSummary,
  type RunWriter,
} from '../metrics/types.js';
import type { RoleVector, ServiceClass } from '../router/types.js';
import { DataSource, asError } from '../workload/data-source.js';
import { ensureDataset } from '../workload/dataset.js';
import { Rng } from '../workload/rng.js';
import { runClient, runSession, type SessionContext } from '../workload/session-loop.js';
import { splitByMix, type WorkloadSpec } from '../workload/spec.js';

/** The part of the router the runner uses (src/router createRouter()). */
export interface RunnerRouter {
  admit(cls: ServiceClass, nowMs: number): { replica: string };
  release(replica: string, cls: ServiceClass, nowMs: number): void;
  markDown(replica: string, nowMs: number): void;
  markUp(replica: string, nowMs: number): void;
  snapshot(): ReadonlyArray<{
    id: string;
    healthy: boolean;
    role: string;
    sessions: { premium: number; freemium: number };
  }>;
}

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
  /** Per replica CPU quota (cores), to turn CPU seconds into a fraction. */
  replicaCpus: number;
  /** Seconds between progress lines (0 = none). */
  progressEveryS: number;
}

export interface BenchDeps {
  driver: ClusterDriver;
  /** onRoleChange: the router reports every role change as it makes it. */
  createRouter: (
    replicaIds: string[],
    onRoleChange: (c: { replica: string; from: string; to: string; reason: string; nowMs: number }) => void,
  ) => RunnerRouter;
  createWriter: (replicaIds: string[]) => RunWriter;
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

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * One benchmark run: plan + workload -> (driver, router, clients) -> recorder -> run directory.
 * Every measured second is on disk as the run goes; an interrupted run is finished as incomplete.
 */
export async function runBench(config: BenchConfig, deps: BenchDeps): Promise<BenchResult> {
  const { driver, log } = deps;
  const { plan, workload } = config;
  const { replicas, creds } = await prepareCluster(driver, plan, workload, log);

  const ids = replicas.map((r) => r.id);
  const ports = new Map(replicas.map((r) => [r.id, r.port] as const));
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
  const rng = new Rng(config.seed);
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
    replicaCpus: config.replicaCpus,
    replicas: ids,
  });

  const t0 = performance.now();
  const now = (): number => performance.now() - t0;
  const durationMs = plan.duration * 1000;
  let stopping = false;
  writer.event({ type: 'run', tMs: 0, state: 'started' });

  const setHealth = (replica: string, state: 'up' | 'down', via: string, cause: string): void => {
    const t = now();
    if (state === 'down') router.markDown(replica, t);
    else router.markUp(replica, t);
    writer.event({ type: 'detect', tMs: t, replica, state, via, cause });
  };

  const health = new HealthChecker(
    ports,
    creds,
    { ...config.health, now },
    (replica, state, via, cause) => {
      if (!config.oracle) setHealth(replica, state, via, cause);
    },
    (f) => writer.recorder.replicaFailure(f.replica, now(), f.cause),
  );
  const ds = new DataSource({
    router,
    ports,
    credentials: creds,
    connectTimeoutMs: workload.connectTimeoutMs,
    queryTimeoutMs: workload.queryTimeoutMs,
    now,
    onConnectError: (replica, err) => health.reportFailure(replica, err, 'connect'),
    onSessionError: (replica, err) => health.reportFailure(replica, err, 'session'),
  });
  const injector = new Injector({
    driver,
    events: plan.events,
    now,
    defaultCpus: config.replicaCpus,
    log,
    onInjected: (f: InjectedFault) => {
      writer.event({
        type: 'fault',
        tMs: f.tMs,
        issuedMs: f.issuedMs,
        doneMs: f.doneMs,
        replica: f.event.replica,
        action: f.event.action,
        ...(f.event.cpus !== undefined ? { cpus: f.event.cpus } : {}),
        ...(f.error !== undefined ? { error: f.error } : {}),
      });
      log(
        `t=${(f.tMs / 1000).toFixed(1)}s ${f.event.action} ${f.event.replica}${f.error ? ` FAILED: ${f.error}` : ''}`,
      );
      if (config.oracle) {
        const a = f.event.action;
        if (a === 'down' || a === 'stop' || a === 'pause')
          setHealth(f.event.replica, 'down', 'oracle', `injected ${a}`);
        if (a === 'rejoin' || a === 'unpause') setHealth(f.event.replica, 'up', 'oracle', `injected ${a}`);
      }
      if (f.event.action === 'throttle' && f.event.cpus !== undefined)
        quota.set(f.event.replica, f.event.cpus);
    },
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

  const ctx: SessionContext = {
    ds,
    recorder: writer.recorder,
    spec: workload,
    now,
    stopping: () => stopping,
  };
  const quota = new Map(ids.map((id) => [id, config.replicaCpus] as const));
  const tasks: Promise<unknown>[] = [];
  const rampMs = (workload.rampUpS ?? plan.warmup) * 1000;
  let scheduleLags: number[] = [];

  health.start();
  injector.start();
  if (workload.model === 'closed') {
    const split = splitByMix(workload.clients, workload.mix);
    const classes: ServiceClass[] = [
      ...Array<ServiceClass>(split.premium).fill('premium'),
      ...Array<ServiceClass>(split.freemium).fill('freemium'),
    ];
    // Clients join as a Poisson process over the ramp-up (clamped so all have joined by its end).
    const arrivals = rng.fork(1);
    const order = rng.fork(2);
    shuffle(classes, order);
    let at = 0;
    classes.forEach((cls, i) => {
      at += arrivals.exp(rampMs / Math.max(1, classes.length));
      tasks.push(runClient(ctx, cls, rng.fork(100 + i), Math.min(at, rampMs)));
    });
  } else {
    tasks.push(
      openArrivals(ctx, workload, rng.fork(3), durationMs).then((lags) => {
        scheduleLags = lags;
      }),
    );
  }

  // The sampler: CPU, router view, the harness itself, timeline flush, progress line.
  let lastCpu: Record<string, number> | null = null;
  let lastCpuAt = now();
  let lastProgress = 0;
  const harness = new HarnessMonitor(now, writer.recorder);
  const sample = async (): Promise<void> => {
    const t = now();
    const h = harness.sampleCpu();
    writer.recorder.harnessCpu(h.midMs, h.cpu);
    let cpu: Record<string, number> = {};
    try {
      cpu = await driver.cpuSeconds();
    } catch (err) {
      log(`cpu sample failed: ${asError(err).message}`);
    }
    const tAfter = now();
    const fractions: Record<string, number | null> = {};
    const dt = (tAfter - lastCpuAt) / 1000;
    for (const id of ids) {
      const cur = cpu[id];
      const prev = lastCpu?.[id];
      fractions[id] =
        cur === undefined || prev === undefined || dt <= 0 || cur < prev
          ? null
          : (cur - prev) / dt / (quota.get(id) ?? 1);
    }
    // A fraction covers [lastCpuAt, tAfter]: stamp it at the middle, so a sample taken just after
    // a fault (covering the second before it) is not counted in the fault's phase.
    writer.recorder.cpu((lastCpuAt + tAfter) / 2, fractions);
    lastCpu = cpu;
    lastCpuAt = tAfter;
    const state: Record<string, { premium: number; freemium: number; role: string; healthy: boolean }> = {};
    for (const s of router.snapshot()) state[s.id] = { ...s.sessions, role: s.role, healthy: s.healthy };
    writer.recorder.replicaState(t, state);
    writer.tick(t);
    if (config.progressEveryS > 0 && t - lastProgress >= config.progressEveryS * 1000) {
      lastProgress = t;
      const p = writer.progress(t, config.progressEveryS);
      const f = (c: { p95: number | null; goodput: number }): string =>
        `p95 ${c.p95 === null ? '-' : c.p95.toFixed(1)} ms ${c.goodput.toFixed(0)} q/s`;
      log(
        `[${config.strategy} ${p.phase} ${(t / 1000).toFixed(0)}/${plan.duration}s] premium ${f(p.premium)} | freemium ${f(p.freemium)}`,
      );
    }
  };

  let interrupted = false;
  // Errors anywhere in the run: recorded, and the run is not complete. The first is rethrown.
  const errors: string[] = [];
  let thrown: unknown;
  const guard = async (what: string, step: () => Promise<unknown> | unknown): Promise<void> => {
    try {
      await step();
    } catch (err) {
      thrown ??= err;
      const message = `${what}: ${asError(err).message}`;
      errors.push(message);
      log(`error: ${message}`);
      try {
        writer.event({ type: 'note', tMs: now(), what: 'error', message });
      } catch {
        // The run directory itself failed: the error still goes into the summary.
      }
    }
  };
  const aborted = new Promise<void>((resolve) => {
    if (deps.signal?.aborted) resolve();
    deps.signal?.addEventListener('abort', () => resolve(), { once: true });
  });
  await guard('run', async () => {
    await sample();
    while (now() < durationMs) {
      const next = Math.min(durationMs, (Math.floor(now() / 1000) + 1) * 1000);
      const woke = await Promise.race([sleep(next - now()).then(() => false), aborted.then(() => true)]);
      if (woke) {
        interrupted = true;
        log('interrupted: stopping clients, restoring replicas, keeping what was measured');
        break;
      }
      await sample();
    }
  });
  // Every step of the ending runs whatever failed before it: faults reverted, what was measured kept.
  harness.stop();
  const endMs = Math.min(now(), durationMs);
  stopping = true;
  await guard('stopping the injector', () => injector.stop());
  // Sessions finish their current query; a hung one is bounded by the query timeout.
  await Promise.race([Promise.allSettled(tasks), sleep(workload.queryTimeoutMs + 2000)]);
  health.stop();
  if (scheduleLags.length > 0) {
    const sorted = [...scheduleLags].sort((a, b) => a - b);
    const lag = {
      meanMs: sorted.reduce((s, x) => s + x, 0) / sorted.length,
      p95Ms: sorted[Math.floor(sorted.length * 0.95)] ?? 0,
      maxMs: sorted[sorted.length - 1] ?? 0,
    };
    writer.event({ type: 'note', tMs: endMs, what: 'schedule-lag', ...lag });
    log(
      `open model: ${sorted.length} sessions scheduled; start lag mean ${lag.meanMs.toFixed(1)} ms, p95 ${lag.p95Ms.toFixed(1)} ms, max ${lag.maxMs.toFixed(1)} ms`,
    );
  }
  await guard('restoring replicas', async () => {
    const restored = await injector.restore();
    if (restored.length > 0) log(`restored: ${restored.join(', ')}`);
  });
  const state = interrupted ? 'interrupted' : errors.length > 0 ? 'failed' : 'finished';
  await guard('closing the run', () => {
    writer.event({ type: 'run', tMs: endMs, state });
    writer.tick(endMs);
  });
  const summary = writer.finish(endMs, !interrupted, errors);
  if (thrown !== undefined) throw thrown;
  for (const line of measurementWarnings(summary)) log(line);
  return { dir: writer.dir, summary, interrupted };
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
  const ds0 = await ensureDataset(primary, replicas, creds, workload.datasetRows, log);
  if (ds0.loaded) log(`dataset loaded and replicated in ${(ds0.ms / 1000).toFixed(1)} s`);
  return { primary, replicas, creds };
}

/** Open model: sessions arrive as a Poisson process at `rate` per second, whatever happens to them. */
async function openArrivals(
  ctx: SessionContext,
  spec: WorkloadSpec,
  rng: Rng,
  durationMs: number,
): Promise<number[]> {
  const lags: number[] = [];
  const running = new Set<Promise<unknown>>();
  let next = 0;
  let n = 0;
  const premiumShare = spec.mix.premium / (spec.mix.premium + spec.mix.freemium);
  while (!ctx.stopping()) {
    next += rng.exp(1000 / spec.rate);
    if (next >= durationMs) break;
    const wait = next - ctx.now();
    if (wait > 0) await sleep(wait);
    if (ctx.stopping()) break;
    const lag = Math.max(0, ctx.now() - next);
    lags.push(lag);
    const cls: ServiceClass = rng.next() < premiumShare ? 'premium' : 'freemium';
    if (running.size >= spec.maxOpenSessions) {
      ctx.recorder.admissionFailed(cls, ctx.now(), 'overload');
      continue;
    }
    const p = runSession(ctx, cls, rng.fork(1000 + n++), next);
    running.add(p);
    void p.finally(() => running.delete(p));
  }
  await Promise.allSettled([...running]);
  return lags;
}

/** Every replica up and unpaused before a run starts (the previous run may have left one down). */
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
