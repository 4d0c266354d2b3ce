import { randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../core/package-info.js';
import type { ClusterDriver } from '../cluster/driver.js';
import type { ClusterSpec } from '../run-format/cluster-record.js';
import { DEFAULT_HEALTH } from '../cluster/health.js';
import { type HealthOptions } from '../run-format/config.js';
import { PlbError } from '../core/errors.js';
import type { FaultPlan } from '../run-format/plan.js';
import type { RoleVector } from '../router/types.js';
import type { ServiceClass } from '../core/service-class.js';
import { VirtualClock } from '../clock/virtual.js';
import { classQueryCpuMs, meanQueryCpuMs, simDriverOf, type SimDriver } from '../cluster/sim/index.js';
import { calibrateThinkTime, thinkTimesFor, type ClassThinkInputs } from '../workload/calibrate.js';
import { MAX_SEED, Rng } from '../core/rng.js';
import { prepareCluster, runBench, type BenchDeps, type BenchResult } from './run.js';
import { splitByMix } from '../workload/spec.js';
import { type WorkloadSpec } from '../run-format/config.js';
import type { BalanceOptions } from './balance.js';
import type { LagWeightOptions } from '../router/lag-weight.js';
import { isViaStrategy, type ViaOptions } from './via.js';

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

export interface SeriesOptions {
  plan: FaultPlan;
  planPath: string;
  runs: SeriesRun[];
  workload: WorkloadSpec;
  health?: HealthOptions;
  oracle: boolean;
  reference: RoleVector;
  partition: { premium: number; freemium: number };
  slowStartMs: number;
  /** Replica weights follow replication lag (write runs only). */
  lagWeights?: LagWeightOptions;
  /** Static weights, per-replica quotas, zones, lag eviction (balance.ts). */
  balance?: BalanceOptions;
  progressEveryS: number;
  driver: ClusterDriver;
  spec: ClusterSpec;
  createRouter: (strategy: string) => BenchDeps['createRouter'];
  createWriter: (run: SeriesRun, index: number) => BenchDeps['createWriter'];
  log: (line: string) => void;
  signal?: AbortSignal;
  configExtras?: Record<string, unknown>;
  /** `--think-time auto`: calibrate once, before the first run, so every run gets the same load. */
  autoThink?: { targetCpu: number };
  /** `--strategy via`: the balancer the via runs go through. */
  via?: ViaOptions;
}

/**
 * `--think-time auto`: one calibration on the first replica (calibrate.ts), whose think time then
 * serves every run of the series (strategies must see the same offered load).
 */
async function withCalibratedThinkTime(
  opts: SeriesOptions,
): Promise<{ workload: WorkloadSpec; extras: Record<string, unknown> }> {
  if (!opts.autoThink) return { workload: opts.workload, extras: {} };
  const sim = simDriverOf(opts.driver);
  if (sim) return simulatedThinkTime(opts, sim, opts.autoThink.targetCpu);
  const { replicas, creds } = await prepareCluster(opts.driver, opts.plan, opts.workload, opts.log);
  const first = replicas[0];
  if (!first) throw new PlbError('CLUSTER_NOT_FOUND', 'the cluster has no replica to calibrate on');
  const cal = await calibrateThinkTime({
    driver: opts.driver,
    replica: first,
    credentials: creds,
    workload: opts.workload,
    replicas: opts.plan.replicas,
    cpusPerReplica: opts.spec.cpus,
    targetCpu: opts.autoThink.targetCpu,
    rng: new Rng(opts.runs[0]?.seed ?? 1).fork(7),
  });
  opts.log(
    `think time auto: ${thinkLabel(cal.classThinkTimeMs)} for ${opts.workload.clients} clients at ${Math.round(cal.targetCpu * 100)}% replica CPU (${first.id}: ${cal.cpuPerQueryMs} ms CPU a query, ${cal.cpuPerConnectMs} ms a connect; target ${cal.targetQps} q/s; calibration ${(cal.tookMs / 1000).toFixed(1)} s)`,
  );
  if (cal.shortfall) opts.log(`warning: ${cal.shortfall}`);
  return { workload: withThinkTime(opts.workload, cal.classThinkTimeMs), extras: { calibration: cal } };
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
function simulatedThinkTime(
  opts: SeriesOptions,
  sim: SimDriver,
  targetCpu: number,
): { workload: WorkloadSpec; extras: Record<string, unknown> } {
  const cal = sim.calibration;
  const { workload } = opts;
  const cpus = opts.spec.cpus;
  const u = Math.min(0.99, Math.max(0.01, targetCpu));
  const cpuPerQueryMs = meanQueryCpuMs(cal, workload);
  const connectWallMs = cal.connect.latencyMs + cal.connect.cpuMs / cpus / (1 - u);
  const split = splitByMix(workload.clients, workload.mix);
  // Each class its own cost a query (its template weights) and fixed wall time.
  const cls = (c: ServiceClass): ClassThinkInputs => {
    const w = workload.classes[c];
    return {
      clients: split[c],
      queriesPerSession: w.queriesPerSession,
      cpuPerQueryS: classQueryCpuMs(cal, w.queryWeights) / 1000,
      fixedWallS: (connectWallMs + Math.max(1, w.queriesPerSession) * cal.queryOverheadMs) / 1000,
      baseThinkMs: w.thinkTimeMs,
    };
  };
  const result = thinkTimesFor({
    classes: { premium: cls('premium'), freemium: cls('freemium') },
    replicas: opts.plan.replicas,
    cpusPerReplica: cpus,
    targetCpu,
    cpuPerConnectS: cal.connect.cpuMs / 1000,
  });
  opts.log(
    `think time auto (simulated): ${thinkLabel(result.thinkTimeMs)} for ${workload.clients} clients at ${Math.round(u * 100)}% replica CPU (${cpuPerQueryMs.toFixed(3)} ms CPU a query, ${cal.connect.cpuMs} ms a connect, from the calibration; target ${result.targetQps} q/s)`,
  );
  if (result.shortfall) opts.log(`warning: ${result.shortfall}`);
  return {
    workload: withThinkTime(workload, result.thinkTimeMs),
    extras: {
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
  return clock.run(() => series(opts, sim));
}

async function series(
  opts: SeriesOptions,
  sim: SimDriver | undefined,
): Promise<{ results: BenchResult[]; interrupted: boolean }> {
  const results: BenchResult[] = [];
  const { workload, extras } = await withCalibratedThinkTime(opts);
  const simExtras = sim ? { simCalibration: { path: sim.calibrationPath, contents: sim.calibration } } : {};
  for (const [i, run] of opts.runs.entries()) {
    if (opts.signal?.aborted) return { results, interrupted: true };
    opts.log(
      `run ${i + 1}/${opts.runs.length}: strategy ${run.strategy}, mix ${run.mix.premium}:${run.mix.freemium}, repeat ${run.repeat}, seed ${run.seed}`,
    );
    sim?.beginRun(run.seed);
    const result = await runBench(
      {
        plan: opts.plan,
        planPath: opts.planPath,
        strategy: run.strategy,
        workload: { ...workload, mix: run.mix },
        seed: run.seed,
        health: opts.health ?? DEFAULT_HEALTH,
        oracle: opts.oracle,
        reference: opts.reference,
        partition: opts.partition,
        slowStartMs: opts.slowStartMs,
        ...(opts.lagWeights ? { lagWeights: opts.lagWeights } : {}),
        ...(opts.balance ? { balance: opts.balance } : {}),
        replicaCpus: opts.spec.cpus,
        progressEveryS: opts.progressEveryS,
        ...(opts.via && isViaStrategy(run.strategy) ? { via: opts.via } : {}),
      },
      {
        driver: opts.driver,
        createRouter: opts.createRouter(run.strategy),
        createWriter: opts.createWriter(run, i),
        log: opts.log,
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(sim ? { clock: sim.clock } : {}),
        configExtras: {
          ...opts.configExtras,
          ...extras,
          ...simExtras,
          repeat: run.repeat,
          cluster: opts.spec,
        },
      },
    );
    results.push(result);
    if (result.interrupted) return { results, interrupted: true };
  }
  return { results, interrupted: false };
}
