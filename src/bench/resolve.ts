/**
 * A bench's flags resolved, once and before anything starts, into config.json's fields (the
 * configuration every run of the series shares) and what the command does around the runs:
 * which cluster, which runs, where the output goes. Every check names its flag; nothing is
 * started on bad input.
 */
import { checkBasePort } from '../cluster/ports.js';
import { parseCpus, parseDriverChoice, type DriverChoice } from '../cluster/select.js';
import type { TemplateSet } from '../cluster/templates.js';
import { checkPlanHooks, loadClusterFile, type ExternalCluster } from '../cluster/external/file.js';
import { PlbError } from '../core/errors.js';
import { MAX_SIM_REPLICAS } from '../core/replica-ids.js';
import { checkSeed } from '../core/rng.js';
import { ensureWritableDir } from '../core/safe-write.js';
import type { ServiceClass } from '../core/service-class.js';
import { loadPlan } from '../faults/plan.js';
import type { ClassWorkload, WorkloadSpec } from '../run-format/config.js';
import type { FaultPlan } from '../run-format/plan.js';
import { checkTemplateSet } from '../workload/preflight.js';
import { DEFAULT_WORKLOAD, parseMix, parsePerClass, parseQueryWeights } from '../workload/spec.js';
import { loadWorkloadDocument } from '../workload/workload-file.js';
import { parseWriteRate, refuseLagWithSim } from '../workload/writer.js';
import { parseHealthFlags, positive } from '../cli/router-flags.js';
import { parseStrategies } from '../cli/strategy-flags.js';
import { VIA } from '../core/strategies.js';
import { resolveAdmission } from './admission-options.js';
import { parseSessionLifetime, resolveBalance } from './balance.js';
import {
  checkBenchValue,
  lagWeightsFlag,
  LIMITS,
  parseQueriesPerSession,
  parseThinkTime,
  targetCpu,
} from './checks.js';
import type { BenchFlagValues } from './flags.js';
import { resolveRouterSettings } from './router-settings.js';
import { defaultPlanPath, expandSeries, newSeed, type SeriesConfig, type SeriesRun } from './series.js';
import { defaultViaLabel, parseVia, parseViaLabel, viaRecord, viaStrategy, type ViaOptions } from './via.js';

export interface ResolvedBench {
  /** config.json's fields the runs share, but the replicas' quota (the cluster's, once leased). */
  config: Omit<SeriesConfig, 'replicaCpus'>;
  runs: SeriesRun[];
  seed: number;
  /** The strategies as the runs and reports name them (a via run: via:<label>). */
  strategies: string[];
  /** `--think-time auto`: the CPU the reference phase aims at. */
  autoThink?: { targetCpu: number };
  cluster: {
    name: string;
    driver: DriverChoice;
    basePort: number;
    cpus?: number;
    keep: boolean;
    /** --driver sim: the calibration file. */
    calibration?: string;
    external?: ExternalCluster;
  };
}

/**
 * Checks every flag (a direct caller's too, by the same functions as the command line's parser)
 * and resolves them. The only thing it creates is the --out folder, last.
 */
export function resolveBench(
  flags: BenchFlagValues,
  names: { strategies: string; mixes: string } = { strategies: 'strategy', mixes: 'mix' },
): ResolvedBench {
  const strategies = parseStrategies(flags.strategies, names.strategies);
  const mixes = flags.mixes.split(',').map((m) => parseMix(m, `--${names.mixes}`));
  for (const name of ['repeat', 'clients', 'dataset-rows', 'fall', 'rise', 'base-port', 'progress'] as const)
    checkBenchValue(name, flags[name]);
  const { classes, autoThink, templates } = resolveClasses(flags);
  if (templates) checkTemplateSet(templates, flags['dataset-rows']);
  const targetCpuValue = targetCpu(flags['target-cpu']);
  const rate = positive('rate', Number(flags.rate), false, LIMITS.rate);
  const router = resolveRouterSettings(flags);
  const health = parseHealthFlags(flags);
  const driver = parseDriverChoice(flags.driver);
  const cpus = flags.cpus === undefined ? undefined : parseCpus('--cpus', flags.cpus);
  if (flags.seed !== undefined) checkSeed(flags.seed, '--seed');
  const planPath = flags.plan ?? defaultPlanPath();
  const sim = driver === 'sim';
  if (flags.calibration !== undefined && !sim)
    throw new PlbError('BAD_INPUT', '--calibration: only with --driver sim');
  const via = resolveVia(strategies, flags, names.strategies, sim);
  const plan = loadPlan(planPath, sim ? { maxReplicas: MAX_SIM_REPLICAS } : {});
  checkBasePort(flags['base-port'], plan.replicas);
  const external = externalClusterFor(driver, flags['cluster-file'], plan);
  const writeRate = parseWriteRate(flags['write-rate'] ?? 0);
  if (sim) refuseLagWithSim(writeRate, plan);
  const lagWeights = lagWeightsFlag(flags['lag-weights'] ?? 'off');
  if (lagWeights && !(writeRate > 0))
    throw new PlbError(
      'BAD_INPUT',
      '--lag-weights: needs --write-rate (lag is measured only with writes on)',
    );
  const balance = resolveBalance(flags, plan, writeRate);
  const lifetimeMs =
    flags['max-session-lifetime'] === undefined
      ? undefined
      : parseSessionLifetime(flags['max-session-lifetime']);
  const seed = flags.seed ?? newSeed();
  if (flags['metrics-port'] !== undefined) checkBenchValue('metrics-port', flags['metrics-port']);
  const admission = resolveAdmission(flags, {
    sessions: flags.model === 'open' ? DEFAULT_WORKLOAD.maxOpenSessions : flags.clients,
    replicas: plan.replicas,
  });
  // Last check, the only one that creates something: the folder the run directories go into.
  ensureWritableDir(flags.out, '--out');
  const workload: WorkloadSpec = {
    ...DEFAULT_WORKLOAD,
    model: flags.model === 'open' ? 'open' : 'closed',
    clients: flags.clients,
    rate,
    datasetRows: flags['dataset-rows'],
    ...(writeRate > 0 ? { writeRate } : {}),
    ...(lifetimeMs !== undefined ? { maxSessionLifetimeMs: lifetimeMs } : {}),
    classes,
    ...(templates ? { templates } : {}),
  };
  // A via run is named after its balancer (via:<label>), so its report group says which one.
  const named = strategies.map((s) => (s === VIA && via ? viaStrategy(via.label) : s));
  return {
    config: {
      plan: { ...plan, path: planPath },
      workload,
      health,
      oracle: flags.oracle,
      ...router,
      ...(lagWeights ? { lagWeights } : {}),
      ...(Object.keys(balance).length > 0 ? { balance } : {}),
      admission,
      ...(via ? { via: viaRecord(via) } : {}),
      ...(flags.workload !== undefined ? { workloadFile: flags.workload } : {}),
    },
    runs: expandSeries(named, mixes, flags.repeat, seed),
    seed,
    strategies: named,
    ...(autoThink ? { autoThink: { targetCpu: targetCpuValue } } : {}),
    cluster: {
      name: flags.name,
      driver,
      basePort: flags['base-port'],
      ...(cpus !== undefined ? { cpus } : {}),
      keep: flags['keep-cluster'],
      ...(flags.calibration !== undefined ? { calibration: flags.calibration } : {}),
      ...(external ? { external } : {}),
    },
  };
}

/**
 * Each class's session shape: the defaults, then --workload's file, then the flags given (a flag
 * naming one class leaves the other as it was). `auto` keeps the think times as the ratio the
 * calibration scales.
 */
export function resolveClasses(
  flags: Pick<BenchFlagValues, 'queries-per-session' | 'think-time' | 'query-mix' | 'workload'>,
): {
  classes: WorkloadSpec['classes'];
  autoThink: boolean;
  templates?: TemplateSet;
} {
  const doc = flags.workload === undefined ? undefined : loadWorkloadDocument(flags.workload);
  const file = doc?.classes ?? {};
  const templates = doc?.templates.set;
  if (templates && flags['query-mix'] !== undefined)
    throw new PlbError(
      'BAD_INPUT',
      `--query-mix: weighs plb's own point/range/scan templates; ${flags.workload} has its own (set their weights in its queryWeights)`,
    );
  const qps =
    flags['queries-per-session'] === undefined
      ? {}
      : parseQueriesPerSession(String(flags['queries-per-session']));
  const think = flags['think-time'] === undefined ? {} : parseThinkTime(flags['think-time']);
  const weights =
    flags['query-mix'] === undefined
      ? {}
      : parsePerClass(flags['query-mix'], '--query-mix', (w) => parseQueryWeights(w, '--query-mix'));
  const one = (cls: ServiceClass): ClassWorkload => {
    const d = DEFAULT_WORKLOAD.classes[cls];
    const f = file[cls] ?? {};
    return {
      queriesPerSession: qps[cls] ?? f.queriesPerSession ?? d.queriesPerSession,
      thinkTimeMs: (think === 'auto' ? undefined : think[cls]) ?? f.thinkTimeMs ?? d.thinkTimeMs,
      queryWeights: { ...(weights[cls] ?? f.queryWeights ?? d.queryWeights) },
    };
  };
  return {
    classes: { premium: one('premium'), freemium: one('freemium') },
    autoThink: think === 'auto',
    ...(templates ? { templates } : {}),
  };
}

/**
 * --driver external: the cluster file, read and checked against the plan (every hook it needs)
 * before anything starts; --cluster-file is refused with any other driver.
 */
function externalClusterFor(
  driver: string,
  file: string | undefined,
  plan: FaultPlan,
): ExternalCluster | undefined {
  if (driver !== 'external') {
    if (file !== undefined) throw new PlbError('BAD_INPUT', '--cluster-file: only with --driver external');
    return undefined;
  }
  if (file === undefined) throw new PlbError('BAD_INPUT', '--cluster-file: required with --driver external');
  const cluster = loadClusterFile(file);
  checkPlanHooks(cluster, plan);
  return cluster;
}

/** --strategy via needs --via, and --via (or --via-label) needs via among the strategies. */
function resolveVia(
  strategies: readonly string[],
  flags: Pick<BenchFlagValues, 'via' | 'via-label'>,
  field: string,
  sim: boolean,
): ViaOptions | undefined {
  const wanted = strategies.includes(VIA);
  if (!wanted) {
    if (flags.via !== undefined || flags['via-label'] !== undefined)
      throw new PlbError('BAD_INPUT', `--via: only with --${field} via (add via to the list)`);
    return undefined;
  }
  if (flags.via === undefined)
    throw new PlbError('BAD_INPUT', `--${field} via: needs --via host:port (the balancer to go through)`);
  if (sim) throw new PlbError('BAD_INPUT', `--${field} via: needs a real cluster (--driver docker or local)`);
  const endpoints = parseVia(flags.via);
  const label =
    flags['via-label'] === undefined ? defaultViaLabel(endpoints) : parseViaLabel(flags['via-label']);
  return { label, endpoints };
}
