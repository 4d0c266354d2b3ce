import { performance } from 'node:perf_hooks';
import { strategyQueues } from '../router/strategy-registry.js';
import { randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../core/package-info.js';
import type { ClusterDriver } from '../cluster/driver.js';
import { PlbError } from '../core/errors.js';
import type { ServiceClass } from '../core/service-class.js';
import { VirtualClock } from '../clock/virtual.js';
import { simDriverOf } from '../cluster/sim/index.js';
import { meanQueryCpuMs, templatesCpuMs } from '../cluster/sim/demand.js';
import type { SimDriver } from '../cluster/sim/driver.js';
import { calibrateThinkTime, thinkTimesFor, type ClassThinkInputs } from '../workload/calibrate.js';
import { MAX_SEED, Rng } from '../core/rng.js';
import { runBench, type BenchDeps, type BenchResult } from './run.js';
import { benchNeeds, prepareCluster } from './prepare-cluster.js';
import { splitByMix } from '../workload/spec.js';
import { classTemplates } from '../workload/statements.js';
import type { BenchConfig, WorkloadSpec } from '../run-format/config.js';
import { isViaStrategy } from './via.js';

/** The embedded default plan: the short cascade. */
export function defaultPlanPath(): string {
  const p = join(packageRoot(), 'plans', 'demo-cascade.yaml');
  if (!existsSync(p)) throw new PlbError('INTERNAL', `the embedded demo plan is missing: ${p}`);
  return p;
}

export function newSeed(): number {
  return randomInt(0, MAX_SEED + 1);
}

export interface SeriesRun {
  strategy: string;
  mix: WorkloadSpec['mix'];
  repeat: number;
  seed: number;
}

/** strategies x mixes x repeats, in the order they run; seeds differ per repeat, not per strategy. */
export function expandSeries(
  strategies: readonly string[],
  mixes: readonly WorkloadSpec['mix'][],
  repeat: number,
  seed: number,
): SeriesRun[] {
  const runs: SeriesRun[] = [];
  for (const mix of mixes) {
    for (let r = 0; r < repeat; r++) {
      // Same seed for every strategy of one repeat: the strategies see the same arrival schedule.
      // Wraps past 2^32-1, so every repeat's seed stays one the generator takes as it is.
      const s = (seed + r) % (MAX_SEED + 1);
      for (const strategy of strategies) runs.push({ strategy, mix, repeat: r + 1, seed: s });
    }
  }
  return runs;
}

/** What every run of a series shares: config.json's fields but each run's strategy and seed. */
export type SeriesConfig = Omit<BenchConfig, 'strategy' | 'seed' | 'repeat'>;

export interface SeriesOptions {
  /** Resolved once (resolve.ts); a run adds its strategy, mix, seed and repeat (runConfig). */
  config: SeriesConfig;
  runs: SeriesRun[];
  progressEveryS: number;
  driver: ClusterDriver;
  createWriter: (run: SeriesRun, index: number) => BenchDeps['createWriter'];
  log: (line: string) => void;
  signal?: AbortSignal;
  /** `--think-time auto`: calibrate once, before the first run, so every run gets the same load. */
  autoThink?: { targetCpu: number };
}

/**
 * One run's config: the series' with the run's strategy, mix, seed and repeat. The admission
 * options and the via balancer belong to the strategies that use them.
 */
export function runConfig(config: SeriesConfig, run: SeriesRun): BenchConfig {
  const { admission, via, ...shared } = config;
  return {
    ...shared,
    strategy: run.strategy,
    seed: run.seed,
    repeat: run.repeat,
    workload: { ...config.workload, mix: run.mix },
    ...(admission && strategyQueues(run.strategy) ? { admission } : {}),
    ...(via && isViaStrategy(run.strategy) ? { via } : {}),
  };
}

/**
 * `--think-time auto`: one calibration on the first replica (calibrate.ts), whose think time then
 * serves every run of the series (strategies must see the same offered load).
 */
async function withCalibratedThinkTime(opts: SeriesOptions): Promise<SeriesConfig> {
  if (!opts.autoThink) return opts.config;
  const sim = simDriverOf(opts.driver);
  if (sim) return simulatedThinkTime(opts, sim, opts.autoThink.targetCpu);
  const { plan, workload } = opts.config;
  const { replicas, creds } = await prepareCluster(opts.driver, benchNeeds(plan, workload), opts.log);
  const first = replicas[0];
  if (!first) throw new PlbError('CLUSTER_NOT_FOUND', 'the cluster has no replica to calibrate on');
  const cal = await calibrateThinkTime({
    driver: opts.driver,
    replica: first,
    credentials: creds,
    workload,
    replicas: plan.replicas,
    cpusPerReplica: opts.config.replicaCpus,
    targetCpu: opts.autoThink.targetCpu,
    rng: new Rng(opts.runs[0]?.seed ?? 1).fork(7),
  });
  opts.log(
    `think time auto: ${thinkLabel(cal.classThinkTimeMs)} for ${workload.clients} clients at ${Math.round(cal.targetCpu * 100)}% replica CPU (${first.id}: ${cal.cpuPerQueryMs} ms CPU a query, ${cal.cpuPerConnectMs} ms a connect; target ${cal.targetQps} q/s; calibration ${(cal.tookMs / 1000).toFixed(1)} s)`,
  );
  if (cal.shortfall) opts.log(`warning: ${cal.shortfall}`);
  return { ...opts.config, workload: withThinkTime(workload, cal.classThinkTimeMs), calibration: { ...cal } };
}

function withThinkTime(workload: WorkloadSpec, thinkTimeMs: Record<ServiceClass, number>): WorkloadSpec {
  const think = (c: ServiceClass) => ({ ...workload.classes[c], thinkTimeMs: thinkTimeMs[c] });
  return { ...workload, classes: { premium: think('premium'), freemium: think('freemium') } };
}

/** `250 ms`, or `premium 100 ms, freemium 400 ms` when the classes differ. */
function thinkLabel(t: Record<ServiceClass, number>): string {
  return t.premium === t.freemium ? `${t.premium} ms` : `premium ${t.premium} ms, freemium ${t.freemium} ms`;
}

/**
 * `--think-time auto` on a simulated cluster: nothing to measure, the calibration says what a
 * query and a connect cost. The fixed latencies (connect, per-query protocol overhead) are added
 * to the connect's wall time, the one fixed part of a session cycle thinkTimeFor() takes.
 */
function simulatedThinkTime(opts: SeriesOptions, sim: SimDriver, targetCpu: number): SeriesConfig {
  const cal = sim.calibration;
  const { workload, plan } = opts.config;
  const cpus = opts.config.replicaCpus;
  const u = Math.min(0.99, Math.max(0.01, targetCpu));
  const cpuPerQueryMs = meanQueryCpuMs(cal, workload, {
    premium: classTemplates(workload, 'premium'),
    freemium: classTemplates(workload, 'freemium'),
  });
  const connectWallMs = cal.connect.latencyMs + cal.connect.cpuMs / cpus / (1 - u);
  const split = splitByMix(workload.clients, workload.mix);
  // Each class its own cost a query (its template weights) and fixed wall time.
  const cls = (c: ServiceClass): ClassThinkInputs => {
    const w = workload.classes[c];
    return {
      clients: split[c],
      queriesPerSession: w.queriesPerSession,
      cpuPerQueryS: templatesCpuMs(cal, classTemplates(workload, c)) / 1000,
      fixedWallS: (connectWallMs + Math.max(1, w.queriesPerSession) * cal.queryOverheadMs) / 1000,
      baseThinkMs: w.thinkTimeMs,
    };
  };
  const result = thinkTimesFor({
    classes: { premium: cls('premium'), freemium: cls('freemium') },
    replicas: plan.replicas,
    cpusPerReplica: cpus,
    targetCpu,
    cpuPerConnectS: cal.connect.cpuMs / 1000,
  });
  opts.log(
    `think time auto (simulated): ${thinkLabel(result.thinkTimeMs)} for ${workload.clients} clients at ${Math.round(u * 100)}% replica CPU (${cpuPerQueryMs.toFixed(3)} ms CPU a query, ${cal.connect.cpuMs} ms a connect, from the calibration; target ${result.targetQps} q/s)`,
  );
  if (result.shortfall) opts.log(`warning: ${result.shortfall}`);
  return {
    ...opts.config,
    workload: withThinkTime(workload, result.thinkTimeMs),
    calibration: {
      ...result,
      thinkTimeMs: result.thinkTimeMs.premium,
      classThinkTimeMs: result.thinkTimeMs,
      targetCpu,
      source: 'simulator calibration',
      cpuPerQueryMs: Math.round(cpuPerQueryMs * 1000) / 1000,
      cpuPerConnectMs: cal.connect.cpuMs,
      connectWallMs: Math.round(connectWallMs * 1000) / 1000,
    },
  };
}

/**
 * Runs one after another on one cluster (each run resets the replicas first). Stops at an
 * interrupt. A simulated cluster's whole series runs in its virtual time.
 */
export async function runSeries(
  opts: SeriesOptions,
): Promise<{ results: BenchResult[]; interrupted: boolean }> {
  const sim = simDriverOf(opts.driver);
  if (sim === undefined) return series(opts, undefined);
  const clock = sim.clock;
  if (!(clock instanceof VirtualClock))
    throw new PlbError('INTERNAL', 'a simulated cluster must run on a virtual clock');
  const wall0 = performance.now();
  const cpu0 = process.cpuUsage();
  const [fired0, instants0] = [clock.fired, clock.instants];
  const out = await clock.run(() => series(opts, sim));
  const wallS = (performance.now() - wall0) / 1000;
  const used = process.cpuUsage(cpu0);
  const cpuS = (used.user + used.system) / 1e6;
  const fired = clock.fired - fired0;
  // Stderr only: the run directories hold nothing that depends on the machine's speed.
  opts.log(
    `simulated: ${fired} timer events at ${clock.instants - instants0} instants in ${wallS.toFixed(1)} s wall, ${cpuS.toFixed(1)} s CPU (${Math.round(fired / Math.max(cpuS, 1e-9))} events per CPU second)`,
  );
  return out;
}

async function series(
  opts: SeriesOptions,
  sim: SimDriver | undefined,
): Promise<{ results: BenchResult[]; interrupted: boolean }> {
  const results: BenchResult[] = [];
  const calibrated = await withCalibratedThinkTime(opts);
  const config: SeriesConfig = sim
    ? { ...calibrated, simCalibration: { path: sim.calibrationPath, contents: { ...sim.calibration } } }
    : calibrated;
  for (const [i, run] of opts.runs.entries()) {
    if (opts.signal?.aborted) return { results, interrupted: true };
    opts.log(
      `run ${i + 1}/${opts.runs.length}: strategy ${run.strategy}, mix ${run.mix.premium}:${run.mix.freemium}, repeat ${run.repeat}, seed ${run.seed}`,
    );
    sim?.beginRun(run.seed);
    const result = await runBench(runConfig(config, run), {
      driver: opts.driver,
      createWriter: opts.createWriter(run, i),
      log: opts.log,
      progressEveryS: opts.progressEveryS,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(sim ? { clock: sim.clock } : {}),
    });
    results.push(result);
    if (result.interrupted) return { results, interrupted: true };
  }
  return { results, interrupted: false };
}
