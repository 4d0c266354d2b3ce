/**
 * The one check of every bench value that has one, by flag name: the command line's parser
 * (flags.ts) and a direct caller of executeBench (resolve.ts) both go through it. Each throws a
 * BAD_INPUT naming the flag.
 */
import { PlbError } from '../../core/errors.js';
import { checkSeed } from '../../core/rng.js';
import { checkBasePort } from '../../cluster/ports.js';
import { parseCpus } from '../../cluster/select.js';
import type { LagWeightOptions } from '../../router/lag-weight.js';
import { parseLagWeights, parseReadings } from '../../cli/router-values.js';
import { parseMix, parsePerClass, parseQueryWeights, type PerClass } from '../../workload/spec.js';
import { parseWriteRate } from '../../workload/writer.js';
import { loadWorkloadDocument, loadWorkloadFile } from '../../workload/workload-file.js';
import { positive, ROUTER_CHECKS } from '../../cli/router-flags.js';
import { durationMsFlag } from '../../cli/flags.js';
import { parseStrategies } from '../../cli/strategy-flags.js';
import { ADMISSION_CHECKS } from './admission-options.js';
import { BALANCE_CHECKS } from './balance.js';
import { MODEL_CHECKS } from './model-options.js';
import { ROUTERS_CHECKS } from './routers-options.js';
import { parseVia, parseViaLabel } from '../via.js';

/** Upper bounds of the flags: past them a run cannot work here, and would only exhaust the machine. */
export const LIMITS = {
  clients: 100_000,
  repeat: 1000,
  /** Open model, sessions per second. */
  rate: 100_000,
  datasetRows: 100_000_000,
} as const;

/** `--lag-weights`: off, or low:high:floor. */
function lagWeightsFlag(text: string): LagWeightOptions | undefined {
  return text.trim() === 'off' ? undefined : parseLagWeights(text);
}

export function nonNegativeInteger(name: string, n: number, max: number): number {
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

function parseQueryMix(text: string): PerClass<QueryWeights> {
  return parsePerClass(text, '--query-mix', (w) => parseQueryWeights(w, '--query-mix'));
}

function parseThinkTime(text: string): PerClass<number> | 'auto' {
  return text.trim() === 'auto'
    ? 'auto'
    : parsePerClass(text, '--think-time', (v) => durationMsFlag('think-time', v));
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
  'query-mix': (v) => parseQueryMix(String(v)),
  workload: (v) => loadWorkloadFile(String(v)),
  'target-cpu': (v) => targetCpu(String(v)),
  readings: (v) => parseReadings(String(v), '--readings'),
  ...ROUTER_CHECKS,
  cpus: (v) => parseCpus('--cpus', String(v)),
  // The plan's replicas are not known yet: resolve.ts checks again with them.
  'base-port': (v) => checkBasePort(Number(v), 0),
  progress: (v) => nonNegativeInteger('progress', Number(v), 86_400),
  'metrics-port': (v) => positive('metrics-port', Number(v), true, 65535),
  via: (v) => parseVia(String(v)),
  'via-label': (v) => parseViaLabel(String(v)),
  ...BALANCE_CHECKS,
  ...ADMISSION_CHECKS,
  ...MODEL_CHECKS,
  ...ROUTERS_CHECKS,
};

/** Checks one bench value (as the command line gave it, or a caller passed it). */
export function checkBenchValue(name: string, value: string | number): unknown {
  const check = BENCH_CHECKS[name];
  return check ? check(value) : value;
}

type QueryWeights = ReturnType<typeof parseQueryWeights>;
type WorkloadDocument = ReturnType<typeof loadWorkloadDocument>;

/** The workload group parsed (a flag left out: its default, or absent where the run's own applies). */
export interface WorkloadSettings {
  model: 'closed' | 'open';
  clients: number;
  /** Open model: sessions per second. */
  rate: number;
  seed?: number;
  datasetRows: number;
  writeRate: number;
  lagWeights?: LagWeightOptions;
  queriesPerSession?: PerClass<number>;
  thinkTime?: PerClass<number> | 'auto';
  queryMix?: PerClass<QueryWeights>;
  /** --workload: the file's path and what it says. */
  workload?: { path: string; doc: WorkloadDocument };
  targetCpu: number;
}

/** The workload group's values as the command line (or a direct caller) gives them. */
export interface WorkloadFlagValues {
  clients: number;
  model: string;
  rate: string;
  seed?: number | undefined;
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
}

/** The session-shape flags alone (resolveClasses' text interface). */
export function parseClassFlags(
  flags: Pick<WorkloadFlagValues, 'queries-per-session' | 'think-time' | 'query-mix' | 'workload'>,
): Pick<WorkloadSettings, 'queriesPerSession' | 'thinkTime' | 'queryMix' | 'workload'> {
  const path = flags.workload;
  const qps = flags['queries-per-session'];
  const think = flags['think-time'];
  const mix = flags['query-mix'];
  return {
    ...(path === undefined ? {} : { workload: { path, doc: loadWorkloadDocument(path) } }),
    ...(qps === undefined ? {} : { queriesPerSession: parseQueriesPerSession(String(qps)) }),
    ...(think === undefined ? {} : { thinkTime: parseThinkTime(think) }),
    ...(mix === undefined ? {} : { queryMix: parseQueryMix(mix) }),
  };
}

/** The workload group from its text; BAD_INPUT naming the flag. */
export function parseWorkloadFlags(flags: WorkloadFlagValues): WorkloadSettings {
  const clients = positive('clients', flags.clients, true, LIMITS.clients);
  const datasetRows = positive('dataset-rows', flags['dataset-rows'], true, LIMITS.datasetRows);
  const classes = parseClassFlags(flags);
  const targetCpuValue = targetCpu(flags['target-cpu']);
  const rate = positive('rate', Number(flags.rate), false, LIMITS.rate);
  if (flags.seed !== undefined) checkSeed(flags.seed, '--seed');
  const lagWeights = lagWeightsFlag(flags['lag-weights'] ?? 'off');
  return {
    model: flags.model === 'open' ? 'open' : 'closed',
    clients,
    rate,
    ...(flags.seed === undefined ? {} : { seed: flags.seed }),
    datasetRows,
    writeRate: parseWriteRate(flags['write-rate'] ?? 0),
    ...(lagWeights ? { lagWeights } : {}),
    ...classes,
    targetCpu: targetCpuValue,
  };
}
