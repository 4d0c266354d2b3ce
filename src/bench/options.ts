import { parseLagWeights, parsePartition, parseReadings, parseRoleVector } from '../cli/router-values.js';
import { Flags } from '@oclif/core';
import { DEFAULT_HEALTH } from '../cluster/health.js';
import { type HealthOptions } from '../run-format/config.js';
import { DEFAULT_BASE_PORT, parseCpus, parseDriverChoice } from '../cluster/select.js';
import { DEFAULT_CLUSTER_NAME } from '../cluster/state.js';
import { formatError, PlbError } from '../core/errors.js';
import { errorLine, exitCodeOf } from '../core/fail.js';
import { ensureWritableDir } from '../core/safe-write.js';
import { loadPlan } from '../faults/plan.js';
import { MAX_SIM_REPLICAS } from '../core/replica-ids.js';
import { createRunWriter, type RunWriter } from '../metrics/index.js';
import { createLiveMetrics, type LiveMetrics } from '../metrics/live-metrics.js';
import { startMetricsServer } from '../metrics/metrics-server.js';
import { createRouter, isStrategyName, resolveBorrowing } from '../router/index.js';
import type { StrategyName } from '../router/types.js';
import type { ServiceClass } from '../core/service-class.js';
import { renderComparison, renderReport, writeReports } from '../report/index.js';
import { colourEnabled } from '../core/table-style.js';
import { trackSeries } from './series-progress.js';
import { renderBenchResults } from './results.js';
import { paperFigures } from '../report/paper-figures.js';
import { paperSection } from '../report/paper-render.js';
import { headlineLines } from '../report/headline.js';
import { handleStopSignals, STOP_SIGNALS, type StopSignalDeps } from '../cli/stop-signals.js';
import { defaultPlanPath, expandSeries, newSeed, runSeries } from './series.js';
import { checkSeed, MAX_SEED } from '../core/rng.js';
import { parseWriteRate, refuseLagWithSim } from '../workload/writer.js';
import { type LagWeightOptions } from '../router/lag-weight.js';
import type { BenchResult } from './run.js';
import { packageVersion } from '../core/package-info.js';
import { leaseCluster, observeWriters } from './cluster-lease.js';
import {
  BALANCE_CHECKS,
  balanceFlags,
  parseSessionLifetime,
  resolveBalance,
  weightedReplicas,
  type BalanceFlagValues,
} from './balance.js';
import { collectEnvironment } from './environment.js';
import {
  ADMISSION_CHECKS,
  admissionFlags,
  resolveAdmission,
  type AdmissionFlagValues,
} from './admission-options.js';
import {
  DEFAULT_WORKLOAD,
  parseMix,
  parsePerClass,
  parseQueryWeights,
  queryWeightsLabel,
  type PerClass,
} from '../workload/spec.js';
import { type ClassWorkload, type WorkloadSpec } from '../run-format/config.js';
import { loadWorkloadDocument, loadWorkloadFile } from '../workload/workload-file.js';
import { checkTemplateSet } from '../workload/preflight.js';
import type { TemplateSet } from '../cluster/templates.js';
import { checkPlanHooks, loadClusterFile, type ExternalCluster } from '../cluster/external/index.js';
import type { FaultPlan } from '../run-format/plan.js';
import { DEFAULT_TARGET_CPU } from '../workload/calibrate.js';
import {
  defaultViaLabel,
  isViaStrategy,
  parseVia,
  parseViaLabel,
  VIA,
  ViaAdmissions,
  viaStrategy,
  type ViaOptions,
} from './via.js';
import {
  durationMsFlag,
  healthFlags,
  HELP_GROUPS,
  parseBorrowing,
  positive,
  ROUTER_CHECKS,
  routerFlags,
} from '../cli/router-flags.js';

/**
 * A flag whose value is checked when the command line is read, by the same function executeBench
 * uses for a caller that passes values directly: one validation layer, one error line naming the
 * flag, exit 1, and nothing started. The value keeps the type executeBench takes.
 */
const checkedString = Flags.custom<string>({
  parse: async (input, _ctx, opts) => {
    checkBenchValue(opts.name, input);
    return input;
  },
});
const checkedNumber = Flags.custom<number>({
  parse: async (input, _ctx, opts) => {
    const n = input.trim() === '' ? NaN : Number(input);
    checkBenchValue(opts.name, n);
    return n;
  },
});

/** The list flags: a comma list, or the flag given several times. */
const listFlag = Flags.custom<string>({
  multiple: true,
  delimiter: ',',
  parse: async (input, _ctx, opts) => {
    checkBenchValue(opts.name, input);
    return input;
  },
});

/** `--strategy` and `--mix` of both bench commands (the old matrix names are deprecated aliases). */
export function seriesFlags(defaults: { strategy: string[]; repeat: number; repeatHelp: string }) {
  return {
    strategy: listFlag({
      description: `${STRATEGY_LIST}; a comma list runs each in turn (side by side, and against rr)`,
      default: defaults.strategy,
      aliases: ['strategies'],
      deprecateAliases: true,
      helpGroup: HELP_GROUPS.router,
    }),
    mix: listFlag({
      description: 'premium:freemium share of clients (or sessions); a comma list runs each mix',
      default: ['25:75'],
      aliases: ['mixes'],
      deprecateAliases: true,
      helpGroup: HELP_GROUPS.workload,
    }),
    repeat: checkedNumber({
      description: defaults.repeatHelp,
      default: defaults.repeat,
      helpGroup: HELP_GROUPS.workload,
    }),
  };
}

/**
 * The series flags of a preset (`plb paper run`): no defaults, so the preset fills in what the
 * command line leaves out and a value given there always wins.
 */
export function presetSeriesFlags() {
  return {
    strategy: listFlag({
      description: "strategies, a comma list (default: the experiment's)",
      helpGroup: HELP_GROUPS.router,
    }),
    mix: listFlag({
      description: "premium:freemium mixes, a comma list (default: the experiment's)",
      helpGroup: HELP_GROUPS.workload,
    }),
    clients: checkedNumber({
      description: "closed model: concurrent clients T (default: the experiment's)",
      helpGroup: HELP_GROUPS.workload,
    }),
    'think-time': checkedString({
      description:
        'mean think time between queries, e.g. 250ms; auto: calibrated so the reference phase sits at --target-cpu',
      default: 'auto',
      helpGroup: HELP_GROUPS.workload,
    }),
  };
}

const STRATEGY_LIST = 'plb, rr, static, lc, wlc, plb-admit, lc-queue, or via (an external balancer, --via)';

/** Flags shared by `bench run` and `bench matrix` (and seriesFlags). --json comes with enableJsonFlag. */
export const benchFlags = {
  plan: Flags.string({
    description: 'fault plan (YAML); default: the embedded demo cascade',
    helpGroup: HELP_GROUPS.workload,
  }),
  clients: checkedNumber({
    description: `closed model: concurrent clients T (at most ${100_000})`,
    default: DEFAULT_WORKLOAD.clients,
    helpGroup: HELP_GROUPS.workload,
  }),
  model: Flags.string({
    description: 'arrival model',
    options: ['closed', 'open'],
    default: 'closed',
    helpGroup: HELP_GROUPS.workload,
  }),
  rate: checkedString({
    description: 'open model: sessions per second',
    default: String(DEFAULT_WORKLOAD.rate),
    helpGroup: HELP_GROUPS.workload,
  }),
  seed: checkedNumber({
    description: `seed of every random choice: an integer 0..${MAX_SEED} (the generator's 32-bit seed; default: a new one, printed)`,
    helpGroup: HELP_GROUPS.workload,
  }),
  'dataset-rows': checkedNumber({
    description: 'rows in the generated dataset',
    default: DEFAULT_WORKLOAD.datasetRows,
    helpGroup: HELP_GROUPS.workload,
  }),
  'write-rate': checkedNumber({
    description:
      'rows/s upserted on the primary during the run, so the standbys replay WAL and their lag is measured (0: read-only; not with --driver sim)',
    default: 0,
    helpGroup: HELP_GROUPS.workload,
  }),
  'lag-weights': checkedString({
    description:
      'with --write-rate: weights follow replication lag, low:high:floor (full weight up to low, linear to floor% at high, drained above), or off',
    default: 'off',
    helpGroup: HELP_GROUPS.router,
  }),
  'queries-per-session': checkedString({
    description: `mean queries per session: one value for both classes, or premium=5,freemium=40 (default ${DEFAULT_WORKLOAD.classes.premium.queriesPerSession}, or --workload's)`,
    helpGroup: HELP_GROUPS.workload,
  }),
  'think-time': checkedString({
    description: `mean think time between queries: 250ms, or premium=250ms,freemium=1s (default ${DEFAULT_WORKLOAD.classes.premium.thinkTimeMs}ms, or --workload's); auto: scaled so the reference phase sits at --target-cpu (both classes by one factor)`,
    helpGroup: HELP_GROUPS.workload,
  }),
  'query-mix': checkedString({
    description: `weights of the point:range:scan queries: 0.5:0.3:0.2, or premium=0.7:0.3:0,freemium=0.1:0.3:0.6 (default ${queryWeightsLabel(DEFAULT_WORKLOAD.classes.premium.queryWeights)}, or --workload's)`,
    helpGroup: HELP_GROUPS.workload,
  }),
  workload: checkedString({
    description:
      'workload file (YAML): per-class queriesPerSession, thinkTime and queryWeights, and your own SQL templates (see docs/workloads.md); flags given override it',
    helpGroup: HELP_GROUPS.workload,
  }),
  'target-cpu': checkedString({
    description:
      'with --think-time auto: mean replica CPU (fraction of its quota) the reference phase aims at',
    default: String(DEFAULT_TARGET_CPU),
    helpGroup: HELP_GROUPS.workload,
  }),
  ...routerFlags,
  readings: checkedString({
    description:
      "plb readings of the paper's repair rules: a preset (plb, paper) and/or key=value over it: donors=above-target|mixed-first, canonicalize=borrowed|all, reference=literal|floored, repair=target|none|shared (none and shared: ablations), hold=none|dwell (borrow and return only after the condition held 2 s); borrowing thresholds are --borrow",
    default: 'plb',
    helpGroup: HELP_GROUPS.router,
  }),
  ...healthFlags,
  oracle: Flags.boolean({
    description: 'the injector tells the router about faults (no detection delay)',
    default: false,
    helpGroup: HELP_GROUPS.health,
  }),
  name: Flags.string({
    description: 'cluster name',
    default: DEFAULT_CLUSTER_NAME,
    helpGroup: HELP_GROUPS.cluster,
  }),
  driver: Flags.string({
    description:
      'when no cluster exists: docker, local or auto; sim: simulated replicas in virtual time; external: the cluster of --cluster-file',
    options: ['auto', 'docker', 'local', 'sim', 'external'],
    default: 'auto',
    helpGroup: HELP_GROUPS.cluster,
  }),
  cpus: checkedString({
    description: 'when no cluster exists: CPU quota per replica',
    helpGroup: HELP_GROUPS.cluster,
  }),
  'base-port': checkedNumber({
    description: 'when no cluster exists: primary port',
    default: DEFAULT_BASE_PORT,
    helpGroup: HELP_GROUPS.cluster,
  }),
  'keep-cluster': Flags.boolean({
    description: 'keep a cluster this command brought up',
    default: false,
    helpGroup: HELP_GROUPS.cluster,
  }),
  out: Flags.string({
    description: 'folder for run directories',
    default: 'runs',
    helpGroup: HELP_GROUPS.output,
  }),
  progress: checkedNumber({
    description:
      'seconds between progress lines within a run (0: none); a series also prints runs done, elapsed and ETA as each run starts',
    default: 5,
    helpGroup: HELP_GROUPS.output,
  }),
  'metrics-port': checkedNumber({
    description: 'serve live Prometheus metrics on 127.0.0.1:<port>/metrics while the runs go',
    helpGroup: HELP_GROUPS.output,
  }),
  wide: Flags.boolean({
    description: 'tables with every column (default: compact, about 100 columns)',
    default: false,
    helpGroup: HELP_GROUPS.output,
  }),
  calibration: Flags.string({
    description: 'with --driver sim: calibration file (default: the shipped calibration/default.json)',
    helpGroup: HELP_GROUPS.cluster,
  }),
  'cluster-file': Flags.string({
    description:
      'with --driver external: YAML file of the servers, password source and fault hooks (examples/external/)',
    helpGroup: HELP_GROUPS.cluster,
  }),
  via: checkedString({
    description:
      'with --strategy via: the balancer sessions connect to, host:port, or premium=host:port,freemium=host:port for a class-aware one (plb proxy); each session asks the replica it landed on who it is',
    helpGroup: HELP_GROUPS.router,
  }),
  'via-label': checkedString({
    description:
      "with --strategy via: the balancer's name in reports (strategy via:<label>); default: the --via endpoint",
    helpGroup: HELP_GROUPS.router,
  }),
  ...balanceFlags,
  ...admissionFlags,
};

/** `--metrics-port`: the live registry and its server (closed at the end of the command). */
interface LiveServer {
  metrics: LiveMetrics;
  close(): Promise<void>;
}

async function startLiveMetrics(port: number, warn: (line: string) => void): Promise<LiveServer> {
  const metrics = createLiveMetrics();
  const server = await startMetricsServer(port, () => metrics.text());
  warn(`live metrics: http://127.0.0.1:${server.port}/metrics`);
  return {
    metrics,
    close: async (): Promise<void> => {
      await server.close();
      metrics.close();
    },
  };
}

function withLiveMetrics(
  live: { metrics: LiveMetrics } | null,
  run: { strategy: string; mix: { premium: number; freemium: number } },
  writer: RunWriter,
): RunWriter {
  return live
    ? live.metrics.tee(writer, { strategy: run.strategy, mix: `${run.mix.premium}:${run.mix.freemium}` })
    : writer;
}

export interface BenchFlagValues extends BalanceFlagValues, AdmissionFlagValues {
  plan?: string | undefined;
  strategies: string;
  mixes: string;
  repeat: number;
  clients: number;
  model: string;
  rate: string;
  seed?: number | undefined;
  out: string;
  'dataset-rows': number;
  /** Rows/s written on the primary (absent or 0: read-only). */
  'write-rate'?: number | undefined;
  /** low:high:floor like 200ms:800ms:10%, or off (absent: off). */
  'lag-weights'?: string | undefined;
  /** One value for both classes or `premium=..,freemium=..`; absent: --workload's, else the default. */
  'queries-per-session'?: string | number | undefined;
  'think-time'?: string | undefined;
  'query-mix'?: string | undefined;
  /** Workload file (YAML), overridden by the three above. */
  workload?: string | undefined;
  'target-cpu': string;
  'hang-timeout': string;
  reference: string;
  partition: string;
  'slow-start': string;
  borrow: string;
  /** plb readings (parseReadings); default 'plb'. */
  readings?: string | undefined;
  'health-interval': string;
  fall: number;
  rise: number;
  oracle: boolean;
  progress: number;
  name: string;
  driver: string;
  cpus?: string | undefined;
  'base-port': number;
  'keep-cluster': boolean;
  json: boolean;
  /** Tables with every column (default compact). */
  wide?: boolean;
  /** Live Prometheus metrics on 127.0.0.1:<port>/metrics (absent: none). */
  'metrics-port'?: number | undefined;
  calibration?: string | undefined;
  /** --driver external: the cluster file. */
  'cluster-file'?: string | undefined;
  /** `--strategy via`: the balancer's endpoint(s), and its name in reports. */
  via?: string | undefined;
  'via-label'?: string | undefined;
}

/** `--lag-weights`: off, or low:high:floor. */
function lagWeightsFlag(text: string): LagWeightOptions | undefined {
  return text.trim() === 'off' ? undefined : parseLagWeights(text);
}

/** Upper bounds of the flags: past them a run cannot work here, and would only exhaust the machine. */
export const LIMITS = {
  clients: 100_000,
  repeat: 1000,
  /** Open model, sessions per second. */
  rate: 100_000,
  datasetRows: 100_000_000,
} as const;

/** The router's strategies, and via (an external balancer, src/bench/via.ts). */
function parseStrategies(text: string, field: string): string[] {
  const list = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (list.length === 0) throw new PlbError('BAD_INPUT', `--${field}: name at least one strategy`);
  for (const s of list) {
    if (!isStrategyName(s) && s !== VIA)
      throw new PlbError('BAD_INPUT', `--${field}: unknown strategy "${s}" (${STRATEGY_LIST})`);
  }
  return list;
}

function nonNegativeInteger(name: string, n: number, max: number): number {
  if (!Number.isInteger(n) || n < 0 || n > max)
    throw new PlbError('BAD_INPUT', `--${name}: must be an integer from 0 to ${max} (got ${n})`);
  return n;
}

function targetCpu(text: string): number {
  const t = positive('target-cpu', Number(text), false);
  if (t >= 1)
    throw new PlbError('BAD_INPUT', `--target-cpu: must be below 1 (a fraction of the quota), got ${t}`);
  return t;
}

function parseQueriesPerSession(text: string): PerClass<number> {
  return parsePerClass(text, '--queries-per-session', (v) =>
    positive('queries-per-session', v === '' ? NaN : Number(v)),
  );
}

function parseThinkTime(text: string): PerClass<number> | 'auto' {
  return text.trim() === 'auto'
    ? 'auto'
    : parsePerClass(text, '--think-time', (v) => durationMsFlag('think-time', v));
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

/** The one check of every bench value that has one, by flag name; throws BAD_INPUT naming the flag. */
const BENCH_CHECKS: Record<string, (v: string | number) => unknown> = {
  strategy: (v) => parseStrategies(String(v), 'strategy'),
  mix: (v) => parseMix(String(v), '--mix'),
  repeat: (v) => positive('repeat', Number(v), true, LIMITS.repeat),
  clients: (v) => positive('clients', Number(v), true, LIMITS.clients),
  rate: (v) => positive('rate', Number(v), false, LIMITS.rate),
  seed: (v) => checkSeed(Number(v), '--seed'),
  'dataset-rows': (v) => positive('dataset-rows', Number(v), true, LIMITS.datasetRows),
  'write-rate': (v) => parseWriteRate(Number(v)),
  'lag-weights': (v) => lagWeightsFlag(String(v)),
  'queries-per-session': (v) => parseQueriesPerSession(String(v)),
  'think-time': (v) => parseThinkTime(String(v)),
  'query-mix': (v) => parsePerClass(String(v), '--query-mix', (w) => parseQueryWeights(w, '--query-mix')),
  workload: (v) => loadWorkloadFile(String(v)),
  'target-cpu': (v) => targetCpu(String(v)),
  readings: (v) => parseReadings(String(v), '--readings'),
  ...ROUTER_CHECKS,
  cpus: (v) => parseCpus('--cpus', String(v)),
  'base-port': (v) => positive('base-port', Number(v), true, 65535),
  progress: (v) => nonNegativeInteger('progress', Number(v), 86_400),
  'metrics-port': (v) => positive('metrics-port', Number(v), true, 65535),
  via: (v) => parseVia(String(v)),
  'via-label': (v) => parseViaLabel(String(v)),
  ...BALANCE_CHECKS,
  ...ADMISSION_CHECKS,
};

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

/** Checks one bench value (as the command line gave it, or a caller passed it). */
export function checkBenchValue(name: string, value: string | number): unknown {
  const check = BENCH_CHECKS[name];
  return check ? check(value) : value;
}

/**
 * Validates every flag before anything starts (nothing half-started on bad input), then leases a
 * cluster, runs the series and renders it. Returns the exit code (0; 130, 143 or 129 when stopped by
 * SIGINT, SIGTERM or SIGHUP).
 */
export async function executeBench(
  flags: BenchFlagValues,
  io: { log: (line: string) => void; warn: (line: string) => void; error?: (err: unknown) => void },
  names: { strategies: string; mixes: string } = { strategies: 'strategy', mixes: 'mix' },
  signalDeps: Pick<StopSignalDeps, 'exit' | 'target'> = {},
): Promise<number> {
  try {
    // The command line was checked as it was read (benchFlags); a direct caller is checked here,
    // by the same functions, before anything starts.
    const strategies = parseStrategies(flags.strategies, names.strategies);
    const mixes = flags.mixes.split(',').map((m) => parseMix(m, `--${names.mixes}`));
    for (const name of [
      'repeat',
      'clients',
      'dataset-rows',
      'fall',
      'rise',
      'base-port',
      'progress',
    ] as const)
      checkBenchValue(name, flags[name]);
    const { classes, autoThink, templates } = resolveClasses(flags);
    if (templates) checkTemplateSet(templates, flags['dataset-rows']);
    const targetCpuValue = targetCpu(flags['target-cpu']);
    const rate = positive('rate', Number(flags.rate), false, LIMITS.rate);
    const reference = parseRoleVector(flags.reference, '--reference');
    const partition = parsePartition(flags.partition, '--partition');
    const slowStartMs = durationMsFlag('slow-start', flags['slow-start']);
    const borrowing = parseBorrowing(flags.borrow);
    const readings = parseReadings(flags.readings ?? 'plb', '--readings');
    const health: HealthOptions = {
      ...DEFAULT_HEALTH,
      intervalMs: positive(
        'health-interval',
        durationMsFlag('health-interval', flags['health-interval']),
        false,
      ),
      fall: flags.fall,
      rise: flags.rise,
      hangMs: positive('hang-timeout', durationMsFlag('hang-timeout', flags['hang-timeout']), false),
    };
    health.timeoutMs = health.intervalMs;
    const driverChoice = parseDriverChoice(flags.driver);
    const cpus = flags.cpus === undefined ? undefined : parseCpus('--cpus', flags.cpus);
    if (flags.seed !== undefined) checkSeed(flags.seed, '--seed');
    const planPath = flags.plan ?? defaultPlanPath();
    const sim = driverChoice === 'sim';
    if (flags.calibration !== undefined && !sim)
      throw new PlbError('BAD_INPUT', '--calibration: only with --driver sim');
    const via = resolveVia(strategies, flags, names.strategies, sim);
    const plan = loadPlan(planPath, sim ? { maxReplicas: MAX_SIM_REPLICAS } : {});
    const external = externalClusterFor(driverChoice, flags['cluster-file'], plan);
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
    const runs = expandSeries(named, mixes, flags.repeat, seed);
    // With --json, stdout holds the JSON alone.
    (flags.json ? io.warn : io.log)(
      `seed ${seed}; plan ${plan.name} (${plan.duration} s, ${plan.events.length} events); ${runs.length} run(s)`,
    );

    // Several runs: a progress line (done/total, elapsed, ETA) as each starts; a bar at a terminal.
    const progress =
      runs.length > 1
        ? trackSeries({
            total: runs.length,
            planS: plan.duration,
            emit: io.warn,
            bar: colourEnabled(process.stderr),
          })
        : null;
    // First Ctrl-C, SIGTERM or SIGHUP: stop gracefully; the second: exit at once.
    const stop = handleStopSignals({ warn: io.warn, ...signalDeps });
    let outcome;
    let live: LiveServer | null = null;
    try {
      // Before the cluster: a port in use is one line and nothing started.
      if (flags['metrics-port'] !== undefined) live = await startLiveMetrics(flags['metrics-port'], io.warn);
      const lease = await leaseCluster({
        name: flags.name,
        driver: driverChoice,
        replicas: plan.replicas,
        sessions: workload.model === 'closed' ? workload.clients : workload.maxOpenSessions,
        sessionsField: workload.model === 'closed' ? '--clients' : '--model open (max open sessions)',
        over: { basePort: flags['base-port'], ...(cpus !== undefined ? { cpus } : {}) },
        keep: flags['keep-cluster'],
        log: io.warn,
        ...(flags.calibration !== undefined ? { calibration: flags.calibration } : {}),
        ...(external ? { external } : {}),
      });
      const simClock = lease.sim?.clock;
      try {
        outcome = await runSeries({
          plan,
          planPath,
          runs,
          workload,
          health,
          oracle: flags.oracle,
          reference,
          partition,
          slowStartMs,
          ...(lagWeights ? { lagWeights } : {}),
          balance,
          admission,
          progressEveryS: flags.progress,
          driver: lease.driver,
          spec: lease.spec,
          createRouter: (strategy) => (ids, onRoleChange) =>
            isViaStrategy(strategy)
              ? new ViaAdmissions(ids)
              : createRouter({
                  strategy: strategy as StrategyName,
                  replicas: weightedReplicas(ids, balance.weights),
                  ...(balance.zones ? { zones: balance.zones, zoneSpill: balance.zoneSpill } : {}),
                  reference,
                  partition,
                  slowStartMs,
                  borrowing,
                  readings,
                  admission,
                  onRoleChange,
                }),
          createWriter: observeWriters(lease, (run, index) => {
            progress?.runStarted(index);
            return (ids) =>
              withLiveMetrics(
                live,
                run,
                createRunWriter({
                  outDir: flags.out,
                  strategy: run.strategy,
                  plan: plan.name,
                  seed: run.seed,
                  clients: workload.clients,
                  mix: run.mix,
                  replicas: ids,
                  refWindowS: plan.referenceWindow,
                  warmupS: plan.warmup,
                  // Simulated: the start time is virtual (ms since the series began), so a seed repeats.
                  ...(simClock ? { clock: () => new Date(simClock.now()) } : {}),
                }),
              );
          }),
          log: io.warn,
          signal: stop.signal,
          ...(autoThink ? { autoThink: { targetCpu: targetCpuValue } } : {}),
          ...(via ? { via } : {}),
          configExtras: {
            plbVersion: packageVersion(),
            environment: await collectEnvironment(lease.driver),
            driver: lease.driver.kind,
            cpusEnforced: lease.driver.cpusEnforced,
            ...lease.config,
            borrowing: resolveBorrowing(borrowing),
            ...(flags.workload !== undefined ? { workloadFile: flags.workload } : {}),
            readings,
          },
        });
      } finally {
        await lease.release();
      }
    } finally {
      stop.dispose();
      await live?.close();
    }
    if (!outcome.interrupted) progress?.finished();
    await renderOutcome(outcome.results, named, runs.length, flags.json, flags.wide ?? false, io);
    for (const r of outcome.results) {
      io.warn(`run directory: ${r.dir}${r.summary.complete ? '' : ' (incomplete)'}`);
    }
    return outcome.interrupted ? (stop.code() ?? STOP_SIGNALS.SIGINT) : 0;
  } catch (err) {
    if (io.error) io.error(err);
    else io.warn(`Error: ${errorLine(err)}`);
    return exitCodeOf(err);
  }
}

/**
 * One run per strategy: the phase tables side by side, then the change against rr. Repeats or
 * several mixes: the aggregated report (median and IQR). Always: report.html in every run directory.
 */
async function renderOutcome(
  results: readonly BenchResult[],
  strategies: readonly string[],
  planned: number,
  json: boolean,
  wide: boolean,
  io: { log: (line: string) => void; warn: (line: string) => void },
): Promise<void> {
  if (results.length === 0) return;
  const baseline = strategies.includes('rr') ? 'rr' : (strategies[0] ?? 'rr');
  const compare = strategies.length > 1 && strategies.includes('rr');
  const onePerStrategy = planned === strategies.length;
  if (json) io.log(renderBenchResults(results, { json: true }));
  else if (onePerStrategy) {
    io.log(renderBenchResults(results, { json: false, wide }));
    if (compare)
      io.log(
        renderComparison(
          results.map((r) => r.summary),
          { baseline, wide },
        ),
      );
  }
  try {
    const report = await writeReports(
      results.map((r) => r.dir),
      { format: 'table', baseline },
    );
    if (!json && !onePerStrategy) {
      io.log(wide ? renderReport(report.groups, { baseline, wide }) : report.text);
      if (compare) io.log(renderComparison(report.groups, { baseline, wide }));
    }
    // The side-by-side tables above leave out the paper's figures: a paper experiment gets them here.
    if (!json && onePerStrategy) {
      const paper = paperSection(paperFigures(report.groups), 'table', wide);
      if (paper.length > 0) io.log(paper.join('\n\n'));
    }
    // The series ends with its answer: intervals and verdicts, and whether every run was valid.
    const headline = headlineLines(report.groups, baseline);
    if (!json && headline.length > 0) io.log(headline.join('\n'));
    for (const f of report.htmlFiles) io.warn(`html: ${f}`);
  } catch (err) {
    // The runs are on disk whatever happens here: a report failure must not lose them.
    io.warn(`report failed: ${formatError(err)} (plb report <run-dir> retries)`);
  }
}
