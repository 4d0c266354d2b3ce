/**
 * A bench's parsed flags (flags.ts, each group by its own parser) resolved, once and before
 * anything starts, into config.json's fields (the configuration every run of the series shares)
 * and what the command does around the runs: which cluster, which runs. The checks here are the
 * ones across flags and against the plan; each names its flag; nothing is started on bad input.
 */
import { checkBasePort } from '../../cluster/ports.js';
import type { DriverChoice } from '../../cluster/select.js';
import type { TemplateSet } from '../../cluster/templates.js';
import { checkPlanHooks, loadClusterFile, type ExternalCluster } from '../../cluster/external/file.js';
import { checkNetFaultsPossible } from '../../cluster/net/preflight.js';
import {
  driverApplies,
  FAULT_ACTION_SPECS,
  type DriverKind,
  type NetworkAction,
} from '../../run-format/fault-actions.js';
import { PlbError } from '../../core/errors.js';
import { MAX_SIM_REPLICAS } from '../../core/replica-ids.js';
import { ensureWritableDir } from '../../core/safe-write.js';
import type { ServiceClass } from '../../core/service-class.js';
import { loadPlan } from '../../faults/plan.js';
import type { ClassWorkload, WorkloadSpec } from '../../run-format/config.js';
import type { FaultPlan } from '../../run-format/plan.js';
import { checkTemplateSet } from '../../workload/preflight.js';
import { DEFAULT_WORKLOAD } from '../../workload/spec.js';
import { refuseLagWithSim } from '../../workload/writer.js';
import { VIA } from '../../router/strategy-registry.js';
import { resolveAdmission } from './admission-options.js';
import { checkModelSettings } from './model-options.js';
import { checkNodeSeries, checkRoutersSettings } from './routers-options.js';
import { balanceOptions } from './balance.js';
import { parseClassFlags, type WorkloadSettings } from './checks.js';
import { parseBenchFlags, type BenchFlagValues, type BenchSettings } from './flags.js';
import { defaultPlanPath, expandSeries, newSeed, type SeriesConfig, type SeriesRun } from '../series.js';
import { defaultViaLabel, viaRecord, viaStrategy, type ViaOptions } from '../via.js';

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
    /** --sim-cpu pooled: a down replica's quota goes to those up. */
    simCpu?: 'pooled';
    external?: ExternalCluster;
  };
}

/**
 * Resolves the parsed flags against each other and the plan. The only thing it creates is the
 * --out folder, last.
 */
export function resolveBench(
  flags: BenchSettings,
  names: { strategies: string } = { strategies: 'strategy' },
): ResolvedBench {
  const { strategies, workload: w, cluster: c } = flags;
  const { classes, autoThink, templates } = classesOf(w);
  if (templates) checkTemplateSet(templates, w.datasetRows);
  const planPath = flags.plan ?? defaultPlanPath();
  const sim = c.driver === 'sim';
  checkModelSettings(flags.models, { model: w.model, sim });
  if (c.calibration !== undefined && !sim)
    throw new PlbError('BAD_INPUT', '--calibration: only with --driver sim');
  const via = resolveVia(strategies, flags.via, names.strategies, sim);
  const plan = loadPlan(planPath, sim ? { maxReplicas: MAX_SIM_REPLICAS } : {});
  checkBasePort(c.basePort, plan.replicas);
  const external = externalClusterFor(c.driver, c.clusterFile, plan);
  checkPlanDriver(c.driver, plan);
  const { writeRate, lagWeights } = w;
  if (sim) refuseLagWithSim(writeRate, plan);
  if (lagWeights && !(writeRate > 0))
    throw new PlbError(
      'BAD_INPUT',
      '--lag-weights: needs --write-rate (lag is measured only with writes on)',
    );
  const balance = balanceOptions(flags.balance, { plan, writeRate, lagWeights: lagWeights !== undefined });
  checkRoutersSettings(flags.routers, {
    via: via !== undefined,
    strategies,
    zones: balance.zones !== undefined,
    sim,
    oracle: flags.oracle === true,
    templates: templates !== undefined,
  });
  const lifetimeMs = flags.balance.sessionLifetimeMs;
  const seed = w.seed ?? newSeed();
  const admission = resolveAdmission(flags.admission, {
    sessions: w.model === 'open' ? DEFAULT_WORKLOAD.maxOpenSessions : w.clients,
    replicas: plan.replicas,
  });
  checkNodeSeries(flags.routers.config, strategies.length * flags.mixes.length * flags.repeat, autoThink);
  // Last check, the only one that creates something: the folder the run directories go into.
  ensureWritableDir(flags.output.out, '--out');
  const workload: WorkloadSpec = {
    ...DEFAULT_WORKLOAD,
    model: w.model,
    clients: w.clients,
    rate: w.rate,
    datasetRows: w.datasetRows,
    ...(writeRate > 0 ? { writeRate } : {}),
    ...(lifetimeMs !== undefined ? { maxSessionLifetimeMs: lifetimeMs } : {}),
    ...(flags.models.onFailure !== undefined ? { onFailure: flags.models.onFailure } : {}),
    classes,
    ...(templates ? { templates } : {}),
  };
  // A via run is named after its balancer (via:<label>), so its report group says which one.
  const named = strategies.map((s) => (s === VIA && via ? viaStrategy(via.label) : s));
  return {
    config: {
      plan: { ...plan, path: planPath },
      workload,
      health: flags.health,
      oracle: flags.oracle,
      shutdownSessions: flags.shutdownSessions,
      ...flags.router,
      ...(lagWeights ? { lagWeights } : {}),
      ...(Object.keys(balance).length > 0 ? { balance } : {}),
      admission,
      ...(via ? { via: viaRecord(via) } : {}),
      ...(w.workload !== undefined ? { workloadFile: w.workload.path } : {}),
      routers: flags.routers.config,
    },
    runs: expandSeries(named, flags.mixes, flags.repeat, seed),
    seed,
    strategies: named,
    ...(autoThink ? { autoThink: { targetCpu: w.targetCpu } } : {}),
    cluster: {
      name: c.name,
      driver: c.driver,
      basePort: c.basePort,
      ...(c.cpus !== undefined ? { cpus: c.cpus } : {}),
      keep: c.keep,
      ...(c.calibration !== undefined ? { calibration: c.calibration } : {}),
      ...(flags.models.simCpu !== undefined ? { simCpu: flags.models.simCpu } : {}),
      ...(external ? { external } : {}),
    },
  };
}

/** resolveBench from the flags' text (a direct caller's), parsed by each group's parser. */
export function resolveBenchFlags(
  flags: BenchFlagValues,
  names: { strategies: string; mixes: string } = { strategies: 'strategy', mixes: 'mix' },
): ResolvedBench {
  return resolveBench(parseBenchFlags(flags, names), names);
}

/** resolveClasses from the flags' text, through the same parsers. */
export function resolveClasses(flags: Parameters<typeof parseClassFlags>[0]): ReturnType<typeof classesOf> {
  return classesOf(parseClassFlags(flags));
}

/**
 * Each class's session shape: the defaults, then --workload's file, then the flags given (a flag
 * naming one class leaves the other as it was). `auto` keeps the think times as the ratio the
 * calibration scales.
 */
function classesOf(w: Pick<WorkloadSettings, 'queriesPerSession' | 'thinkTime' | 'queryMix' | 'workload'>): {
  classes: WorkloadSpec['classes'];
  autoThink: boolean;
  templates?: TemplateSet;
} {
  const file = w.workload?.doc.classes ?? {};
  const templates = w.workload?.doc.templates.set;
  if (templates && w.queryMix !== undefined)
    throw new PlbError(
      'BAD_INPUT',
      `--query-mix: weighs plb's own point/range/scan templates; ${w.workload?.path} has its own (set their weights in its queryWeights)`,
    );
  const qps = w.queriesPerSession ?? {};
  const think = w.thinkTime ?? {};
  const weights = w.queryMix ?? {};
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

/**
 * Every event's action is one the driver applies (network faults: the local and external drivers
 * today), and a local run with network faults can add its rules: refused here, before anything
 * starts. `auto` may become docker, so a plan that needs another driver names it.
 */
function checkPlanDriver(driver: DriverChoice, plan: FaultPlan): void {
  const kind: DriverKind = driver === 'auto' ? 'docker' : driver;
  const e = plan.events.find((ev) => !driverApplies(ev.action, kind));
  if (e !== undefined) {
    const need = FAULT_ACTION_SPECS[e.action].drivers?.join(' or ') ?? '';
    throw new PlbError(
      'BAD_INPUT',
      `plan line ${e.line}: ${e.action} ${e.replica}: the ${driver === 'auto' ? 'default (docker)' : driver} driver does not apply ${e.action}`,
      { hint: `--driver ${need}` },
    );
  }
  const network = plan.events.filter((ev) => FAULT_ACTION_SPECS[ev.action].network === true);
  if ((kind === 'local' || kind === 'docker') && network.length > 0)
    checkNetFaultsPossible(new Set(network.map((ev) => ev.action as NetworkAction)), kind);
}

/** --strategy via needs --via, and --via (or --via-label) needs via among the strategies. */
function resolveVia(
  strategies: readonly string[],
  given: BenchSettings['via'],
  field: string,
  sim: boolean,
): ViaOptions | undefined {
  const wanted = strategies.includes(VIA);
  if (!wanted) {
    if (given.endpoints !== undefined || given.label !== undefined)
      throw new PlbError('BAD_INPUT', `--via: only with --${field} via (add via to the list)`);
    return undefined;
  }
  if (given.endpoints === undefined)
    throw new PlbError('BAD_INPUT', `--${field} via: needs --via host:port (the balancer to go through)`);
  if (sim) throw new PlbError('BAD_INPUT', `--${field} via: needs a real cluster (--driver docker or local)`);
  return { label: given.label ?? defaultViaLabel(given.endpoints), endpoints: given.endpoints };
}
