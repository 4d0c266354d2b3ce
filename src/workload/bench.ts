import { randomInt } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ClusterDriver, ClusterSpec } from '../cluster/driver.js';
import { DEFAULT_HEALTH, type HealthOptions } from '../cluster/health.js';
import { PlbError } from '../errors.js';
import type { FaultPlan } from '../faults/types.js';
import type { RoleVector } from '../router/types.js';
import { runBench, type BenchDeps, type BenchResult, type RunnerRouter } from './runner.js';
import { MAX_SEED } from './rng.js';
import type { WorkloadSpec } from './spec.js';

/** The package root (for the embedded plans and the version), from dist/workload or src/workload. */
export function packageRoot(): string {
  return fileURLToPath(new URL('../../', import.meta.url));
}

export function plbVersion(): string {
  const pkg = JSON.parse(readFileSync(`${packageRoot()}package.json`, 'utf8')) as { version: string };
  return pkg.version;
}

/** The embedded default plan: the short cascade. */
export function defaultPlanPath(): string {
  const p = `${packageRoot()}plans/demo-cascade.yaml`;
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
  progressEveryS: number;
  driver: ClusterDriver;
  spec: ClusterSpec;
  createRouter: (strategy: string) => BenchDeps['createRouter'];
  createWriter: (run: SeriesRun, index: number) => BenchDeps['createWriter'];
  log: (line: string) => void;
  signal?: AbortSignal;
  configExtras?: Record<string, unknown>;
}

/** Runs one after another on one cluster (each run resets the replicas first). Stops at an interrupt. */
export async function runSeries(
  opts: SeriesOptions,
): Promise<{ results: BenchResult[]; interrupted: boolean }> {
  const results: BenchResult[] = [];
  for (const [i, run] of opts.runs.entries()) {
    if (opts.signal?.aborted) return { results, interrupted: true };
    opts.log(
      `run ${i + 1}/${opts.runs.length}: strategy ${run.strategy}, mix ${run.mix.premium}:${run.mix.freemium}, repeat ${run.repeat}, seed ${run.seed}`,
    );
    const result = await runBench(
      {
        plan: opts.plan,
        planPath: opts.planPath,
        strategy: run.strategy,
        workload: { ...opts.workload, mix: run.mix },
        seed: run.seed,
        health: opts.health ?? DEFAULT_HEALTH,
        oracle: opts.oracle,
        reference: opts.reference,
        partition: opts.partition,
        slowStartMs: opts.slowStartMs,
        replicaCpus: opts.spec.cpus,
        progressEveryS: opts.progressEveryS,
      },
      {
        driver: opts.driver,
        createRouter: opts.createRouter(run.strategy),
        createWriter: opts.createWriter(run, i),
        log: opts.log,
        ...(opts.signal ? { signal: opts.signal } : {}),
        configExtras: { ...opts.configExtras, repeat: run.repeat, cluster: opts.spec },
      },
    );
    results.push(result);
    if (result.interrupted) return { results, interrupted: true };
  }
  return { results, interrupted: false };
}

export type { RunnerRouter };
