/** The flags of `plb bench run` and `plb bench matrix` (and `plb paper run`), with their help. */
import { Flags } from '@oclif/core';
import { checkBasePort } from '../../cluster/ports.js';
import { DEFAULT_BASE_PORT, parseCpus, parseDriverChoice, type DriverChoice } from '../../cluster/select.js';
import { DEFAULT_CLUSTER_NAME } from '../../cluster/state.js';
import { MAX_SEED } from '../../core/rng.js';
import { DEFAULT_TARGET_CPU } from '../../workload/calibrate.js';
import { DEFAULT_WORKLOAD, parseMix, queryWeightsLabel } from '../../workload/spec.js';
import type { HealthOptions, WorkloadSpec } from '../../run-format/config.js';
import {
  healthFlags,
  HELP_GROUPS,
  parseHealthFlags,
  positive,
  routerFlags,
  type HealthFlagValues,
} from '../../cli/router-flags.js';
import {
  admissionFlags,
  parseAdmissionFlags,
  type AdmissionFlagValues,
  type AdmissionSettings,
} from './admission-options.js';
import { balanceFlags, parseBalanceFlags, type BalanceFlagValues, type BalanceSettings } from './balance.js';
import { modelFlags, parseModelFlags, type ModelFlagValues, type ModelSettings } from './model-options.js';
import {
  parseRoutersFlags,
  routersFlags,
  type RoutersFlagValues,
  type RoutersSettings,
} from './routers-options.js';
import {
  checkBenchValue,
  LIMITS,
  nonNegativeInteger,
  parseWorkloadFlags,
  type WorkloadFlagValues,
  type WorkloadSettings,
} from './checks.js';
import { BENCH_STRATEGY_LIST, parseStrategies } from '../../cli/strategy-flags.js';
import { resolveRouterSettings, type RouterFlagValues, type RouterSettings } from './router-settings.js';
import { parseVia, parseViaLabel, type ViaEndpoints } from '../via.js';
import { checkedNumber, checkedString, listFlag } from './flag-kinds.js';

/** `--strategy` and `--mix` of both bench commands (the old matrix names are deprecated aliases). */
export function seriesFlags(defaults: { strategy: string[]; repeat: number; repeatHelp: string }) {
  return {
    strategy: listFlag({
      description: `${BENCH_STRATEGY_LIST}; a comma list runs each in turn (side by side, and against rr)`,
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

/** Flags shared by `bench run` and `bench matrix` (and seriesFlags). --json comes with enableJsonFlag. */
export const benchFlags = {
  plan: Flags.string({
    description: 'fault plan (YAML); default: the embedded demo cascade',
    helpGroup: HELP_GROUPS.workload,
  }),
  clients: checkedNumber({
    description: `closed model: concurrent clients T (at most ${LIMITS.clients})`,
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
  ...routersFlags,
  readings: checkedString({
    description:
      "plb readings of the paper's repair rules: a preset (plb, paper) and/or key=value over it: donors=above-target|mixed-first, canonicalize=borrowed|all, reference=literal|floored, repair=target|none|shared (none and shared: ablations), hold=none|dwell (borrow and return only after the condition held 2 s), floors=mixed|classes (K+=4: 2:1:1 or 2:0:2), lend=always|normal (borrowing in every phase or only with every replica up), reclaim=none|premium (premium under pressure takes back what it lent); borrowing thresholds are --borrow",
    default: 'paper',
    helpGroup: HELP_GROUPS.router,
  }),
  ...healthFlags,
  oracle: Flags.boolean({
    description: 'the injector tells the router about faults (no detection delay)',
    default: false,
    helpGroup: HELP_GROUPS.health,
  }),
  'shutdown-sessions': Flags.boolean({
    description:
      "HAProxy's on-marked-down shutdown-sessions: a replica marked down has its sessions ended at once, and their clients reconnect elsewhere (off: each waits for an error or its query timeout)",
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
    description:
      'with --driver sim: calibration file (default: the shipped calibration/default.json), or a real run directory made with --think-time auto: the shipped calibration priced at the costs that run measured',
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
  ...modelFlags,
};

export interface BenchFlagValues
  extends BalanceFlagValues,
    AdmissionFlagValues,
    ModelFlagValues,
    RoutersFlagValues,
    RouterFlagValues,
    HealthFlagValues,
    WorkloadFlagValues {
  plan?: string | undefined;
  strategies: string;
  mixes: string;
  repeat: number;
  out: string;
  oracle: boolean;
  /** --shutdown-sessions (absent: off). */
  'shutdown-sessions'?: boolean;
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

interface ClusterSettings {
  name: string;
  driver: DriverChoice;
  cpus?: number;
  basePort: number;
  keep: boolean;
  calibration?: string;
  clusterFile?: string;
}

interface OutputSettings {
  out: string;
  progress: number;
  metricsPort?: number;
  json: boolean;
  wide: boolean;
}

/** A bench's flags parsed, group by group, each by the module that defines it: what resolveBench takes. */
export interface BenchSettings {
  strategies: string[];
  mixes: WorkloadSpec['mix'][];
  repeat: number;
  plan?: string;
  workload: WorkloadSettings;
  router: RouterSettings;
  health: HealthOptions;
  oracle: boolean;
  /** A replica marked down has its sessions ended at once. */
  shutdownSessions: boolean;
  balance: BalanceSettings;
  admission: AdmissionSettings;
  cluster: ClusterSettings;
  output: OutputSettings;
  /** `--via` and `--via-label`: checked against the strategies by resolveBench. */
  via: { endpoints?: ViaEndpoints; label?: string };
  /** `--on-failure`, `--sim-cpu`: only what differs from today's models. */
  models: ModelSettings;
  routers: RoutersSettings;
}

/** The flags' text parsed by each group's parser (a flag left out: its default); `names`: the list flags' names, for errors. */
export function parseBenchFlags(
  flags: BenchFlagValues,
  names: { strategies: string; mixes: string } = { strategies: 'strategy', mixes: 'mix' },
): BenchSettings {
  const strategies = parseStrategies(flags.strategies, names.strategies);
  const mixes = flags.mixes.split(',').map((m) => parseMix(m, `--${names.mixes}`));
  const repeat = positive('repeat', flags.repeat, true, LIMITS.repeat);
  const workload = parseWorkloadFlags(flags);
  const router = resolveRouterSettings(flags);
  const health = parseHealthFlags(flags);
  const driver = parseDriverChoice(flags.driver);
  const cpus = flags.cpus === undefined ? undefined : parseCpus('--cpus', flags.cpus);
  const basePort = checkBasePort(flags['base-port'], 0);
  const progress = nonNegativeInteger('progress', flags.progress, 86_400);
  const metricsPort = flags['metrics-port'];
  if (metricsPort !== undefined) checkBenchValue('metrics-port', metricsPort);
  const endpoints = flags.via === undefined ? undefined : parseVia(flags.via);
  const label = flags['via-label'] === undefined ? undefined : parseViaLabel(flags['via-label']);
  return {
    strategies,
    mixes,
    repeat,
    ...(flags.plan === undefined ? {} : { plan: flags.plan }),
    workload,
    router,
    health,
    oracle: flags.oracle,
    shutdownSessions: flags['shutdown-sessions'] ?? false,
    balance: parseBalanceFlags(flags),
    admission: parseAdmissionFlags(flags),
    cluster: {
      name: flags.name,
      driver,
      ...(cpus === undefined ? {} : { cpus }),
      basePort,
      keep: flags['keep-cluster'],
      ...(flags.calibration === undefined ? {} : { calibration: flags.calibration }),
      ...(flags['cluster-file'] === undefined ? {} : { clusterFile: flags['cluster-file'] }),
    },
    output: {
      out: flags.out,
      progress,
      ...(metricsPort === undefined ? {} : { metricsPort }),
      json: flags.json,
      wide: flags.wide ?? false,
    },
    via: { ...(endpoints ? { endpoints } : {}), ...(label === undefined ? {} : { label }) },
    models: parseModelFlags(flags),
    routers: parseRoutersFlags(flags),
  };
}
