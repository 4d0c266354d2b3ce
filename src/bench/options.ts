import { Flags } from '@oclif/core';
import { DEFAULT_HEALTH, type HealthOptions } from '../cluster/health.js';
import { DEFAULT_BASE_PORT, parseCpus, parseDriverChoice } from '../cluster/select.js';
import { DEFAULT_CLUSTER_NAME } from '../cluster/state.js';
import { formatError, PlbError } from '../errors.js';
import { ensureWritableDir } from '../safe-write.js';
import { loadPlan, MAX_SIM_REPLICAS, parseDuration } from '../faults/plan.js';
import { createRunWriter } from '../metrics/index.js';
import {
  createRouter,
  DEFAULT_BORROWING,
  isStrategyName,
  parsePartition,
  parseRoleVector,
  resolveBorrowing,
} from '../router/index.js';
import type { BorrowingOptions } from '../router/types.js';
import type { StrategyName } from '../router/types.js';
import { renderComparison, writeReports } from '../report/index.js';
import { renderBenchResults } from '../report/side-by-side.js';
import { handleStopSignals, STOP_SIGNALS, type StopSignalDeps } from './stop-signals.js';
import { defaultPlanPath, expandSeries, newSeed, runSeries } from './series.js';
import { checkSeed, MAX_SEED } from '../workload/rng.js';
import type { BenchResult } from './run.js';
import { packageVersion } from '../package-info.js';
import { leaseCluster } from './cluster-lease.js';
import { DEFAULT_WORKLOAD, parseMix, type WorkloadSpec } from '../workload/spec.js';
import { DEFAULT_TARGET_CPU } from '../workload/calibrate.js';

/** Flags shared by `bench run` and `bench matrix`. */
export const benchFlags = {
  plan: Flags.string({ description: 'fault plan (YAML); default: the embedded demo cascade' }),
  clients: Flags.integer({
    description: 'closed model: concurrent clients T',
    default: DEFAULT_WORKLOAD.clients,
  }),
  model: Flags.string({ description: 'arrival model', options: ['closed', 'open'], default: 'closed' }),
  rate: Flags.string({
    description: 'open model: sessions per second',
    default: String(DEFAULT_WORKLOAD.rate),
  }),
  seed: Flags.integer({
    description: `seed of every random choice: an integer 0..${MAX_SEED} (the generator's 32-bit seed; default: a new one, printed)`,
  }),
  out: Flags.string({ description: 'folder for run directories', default: 'runs' }),
  'dataset-rows': Flags.integer({
    description: 'rows in the generated dataset',
    default: DEFAULT_WORKLOAD.datasetRows,
  }),
  'queries-per-session': Flags.integer({
    description: 'mean queries per session (both classes)',
    default: DEFAULT_WORKLOAD.classes.premium.queriesPerSession,
  }),
  'think-time': Flags.string({
    description:
      'mean think time between queries, e.g. 250ms; auto: calibrated so the reference phase sits at --target-cpu',
    default: `${DEFAULT_WORKLOAD.classes.premium.thinkTimeMs}ms`,
  }),
  'target-cpu': Flags.string({
    description:
      'with --think-time auto: mean replica CPU (fraction of its quota) the reference phase aims at',
    default: String(DEFAULT_TARGET_CPU),
  }),
  reference: Flags.string({
    description: 'plb reference split premium:mixed:freemium (K=5)',
    default: '2:1:2',
  }),
  partition: Flags.string({ description: 'static partition premium:freemium', default: '3:2' }),
  borrow: Flags.string({
    description:
      'plb borrowing: premium:freemium pressure ratios (a class borrows a replica of the other role when its own best replica is that many times as loaded), or off',
    default: '1.5:2',
  }),
  'slow-start': Flags.string({
    description: 'plb/wlc slow-start ramp of a rejoining replica',
    default: '10s',
  }),
  'health-interval': Flags.string({
    description: 'health check interval',
    default: `${DEFAULT_HEALTH.intervalMs}ms`,
  }),
  fall: Flags.integer({
    description: 'failed checks that mark a replica down',
    default: DEFAULT_HEALTH.fall,
  }),
  rise: Flags.integer({ description: 'good checks that mark it up again', default: DEFAULT_HEALTH.rise }),
  'hang-timeout': Flags.string({
    description:
      'a replica that answers nothing, not even its health check, this long is taken for down (overload and slowness never are)',
    default: `${DEFAULT_HEALTH.hangMs}ms`,
  }),
  oracle: Flags.boolean({
    description: 'the injector tells the router about faults (no detection delay)',
    default: false,
  }),
  progress: Flags.integer({ description: 'seconds between progress lines (0: none)', default: 5 }),
  name: Flags.string({ description: 'cluster name', default: DEFAULT_CLUSTER_NAME }),
  driver: Flags.string({
    description: 'when no cluster exists: docker, local or auto; sim: simulated replicas in virtual time',
    options: ['auto', 'docker', 'local', 'sim'],
    default: 'auto',
  }),
  cpus: Flags.string({ description: 'when no cluster exists: CPU quota per replica' }),
  'base-port': Flags.integer({
    description: 'when no cluster exists: primary port',
    default: DEFAULT_BASE_PORT,
  }),
  'keep-cluster': Flags.boolean({ description: 'keep a cluster this command brought up', default: false }),
  calibration: Flags.string({
    description: 'with --driver sim: calibration file (default: the shipped calibration/default.json)',
  }),
  json: Flags.boolean({ description: 'print the summaries as JSON instead of tables', default: false }),
};

export interface BenchFlagValues {
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
  'queries-per-session': number;
  'think-time': string;
  'target-cpu': string;
  'hang-timeout': string;
  reference: string;
  partition: string;
  'slow-start': string;
  borrow: string;
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
  calibration?: string | undefined;
}

function durationMsFlag(name: string, value: string): number {
  const s = parseDuration(value);
  if (s === undefined || !(s >= 0))
    throw new PlbError('BAD_INPUT', `--${name}: expected a duration like 10s or 500ms (got "${value}")`);
  return s * 1000;
}

function positive(name: string, n: number, integer = true, max = Infinity): number {
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new PlbError(
      'BAD_INPUT',
      `--${name}: must be a positive ${integer ? 'integer' : 'number'} (got ${n})`,
    );
  }
  if (n > max) throw new PlbError('BAD_INPUT', `--${name}: must be at most ${max} (got ${n})`);
  return n;
}

/** Upper bounds of the flags: past them a run cannot work here, and would only exhaust the machine. */
export const LIMITS = {
  clients: 100_000,
  repeat: 1000,
  /** Open model, sessions per second. */
  rate: 100_000,
  datasetRows: 100_000_000,
} as const;

/** '1.5:2' -> pressure ratios for premium and freemium (return ratios follow), 'off' -> false. */
export function parseBorrowing(text: string): BorrowingOptions | false {
  if (text.trim() === 'off') return false;
  const m = /^\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(text);
  if (!m)
    throw new PlbError(
      'BAD_INPUT',
      `--borrow: expected premium:freemium ratios like 1.5:2, or off (got "${text}")`,
    );
  const ratio = (cls: 'premium' | 'freemium', v: number) => {
    if (!(v > 1)) throw new PlbError('BAD_INPUT', `--borrow: the ${cls} ratio must be > 1 (got ${v})`);
    // Keep a band between borrowing and returning: returnRatio * pressureRatio > 1.
    return { pressureRatio: v, returnRatio: Math.max(DEFAULT_BORROWING[cls].returnRatio, 1.25 / v) };
  };
  const options: BorrowingOptions = {
    premium: ratio('premium', Number(m[1])),
    freemium: ratio('freemium', Number(m[2])),
  };
  resolveBorrowing(options);
  return options;
}

function parseStrategies(text: string, field: string): StrategyName[] {
  const list = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (list.length === 0) throw new PlbError('BAD_INPUT', `--${field}: name at least one strategy`);
  for (const s of list) {
    if (!isStrategyName(s))
      throw new PlbError('BAD_INPUT', `--${field}: unknown strategy "${s}" (plb, rr, static, lc, wlc)`);
  }
  return list as StrategyName[];
}

/**
 * Validates every flag before anything starts (nothing half-started on bad input), then leases a
 * cluster, runs the series and renders it. Returns the exit code (0; 130, 143 or 129 when stopped by
 * SIGINT, SIGTERM or SIGHUP).
 */
export async function executeBench(
  flags: BenchFlagValues,
  io: { log: (line: string) => void; warn: (line: string) => void },
  names: { strategies: string; mixes: string } = { strategies: 'strategies', mixes: 'mixes' },
  signalDeps: Pick<StopSignalDeps, 'exit' | 'target'> = {},
): Promise<number> {
  try {
    const strategies = parseStrategies(flags.strategies, names.strategies);
    const mixes = flags.mixes.split(',').map((m) => parseMix(m, `--${names.mixes}`));
    positive('repeat', flags.repeat, true, LIMITS.repeat);
    positive('clients', flags.clients, true, LIMITS.clients);
    positive('dataset-rows', flags['dataset-rows'], true, LIMITS.datasetRows);
    positive('queries-per-session', flags['queries-per-session']);
    const autoThink = flags['think-time'].trim() === 'auto';
    const thinkTimeMs = autoThink
      ? DEFAULT_WORKLOAD.classes.premium.thinkTimeMs
      : durationMsFlag('think-time', flags['think-time']);
    const targetCpu = positive('target-cpu', Number(flags['target-cpu']), false);
    if (targetCpu >= 1)
      throw new PlbError(
        'BAD_INPUT',
        `--target-cpu: must be below 1 (a fraction of the quota), got ${targetCpu}`,
      );
    const rate = positive('rate', Number(flags.rate), false, LIMITS.rate);
    const reference = parseRoleVector(flags.reference, '--reference');
    const partition = parsePartition(flags.partition, '--partition');
    const slowStartMs = durationMsFlag('slow-start', flags['slow-start']);
    const borrowing = parseBorrowing(flags.borrow);
    const health: HealthOptions = {
      ...DEFAULT_HEALTH,
      intervalMs: positive(
        'health-interval',
        durationMsFlag('health-interval', flags['health-interval']),
        false,
      ),
      fall: positive('fall', flags.fall),
      rise: positive('rise', flags.rise),
      hangMs: positive('hang-timeout', durationMsFlag('hang-timeout', flags['hang-timeout']), false),
    };
    health.timeoutMs = health.intervalMs;
    const driverChoice = parseDriverChoice(flags.driver);
    const cpus = flags.cpus === undefined ? undefined : parseCpus('cpus', flags.cpus);
    if (flags.seed !== undefined) checkSeed(flags.seed, '--seed');
    const planPath = flags.plan ?? defaultPlanPath();
    const sim = driverChoice === 'sim';
    if (flags.calibration !== undefined && !sim)
      throw new PlbError('BAD_INPUT', '--calibration: only with --driver sim');
    const plan = loadPlan(planPath, sim ? { maxReplicas: MAX_SIM_REPLICAS } : {});
    const seed = flags.seed ?? newSeed();
    // Last check, the only one that creates something: the folder the run directories go into.
    ensureWritableDir(flags.out, '--out');
    const cls = (c: WorkloadSpec['classes']['premium']): WorkloadSpec['classes']['premium'] => ({
      ...c,
      queriesPerSession: flags['queries-per-session'],
      thinkTimeMs,
    });
    const workload: WorkloadSpec = {
      ...DEFAULT_WORKLOAD,
      model: flags.model === 'open' ? 'open' : 'closed',
      clients: flags.clients,
      rate,
      datasetRows: flags['dataset-rows'],
      classes: {
        premium: cls(DEFAULT_WORKLOAD.classes.premium),
        freemium: cls(DEFAULT_WORKLOAD.classes.freemium),
      },
    };
    const runs = expandSeries(strategies, mixes, flags.repeat, seed);
    io.log(
      `seed ${seed}; plan ${plan.name} (${plan.duration} s, ${plan.events.length} events); ${runs.length} run(s)`,
    );

    // First Ctrl-C, SIGTERM or SIGHUP: stop gracefully; the second: exit at once.
    const stop = handleStopSignals({ warn: io.warn, ...signalDeps });
    let outcome;
    try {
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
          progressEveryS: flags.progress,
          driver: lease.driver,
          spec: lease.spec,
          createRouter: (strategy) => (ids, onRoleChange) =>
            createRouter({
              strategy: strategy as StrategyName,
              replicas: ids,
              reference,
              partition,
              slowStartMs,
              borrowing,
              onRoleChange,
            }),
          createWriter: (run) => (ids) =>
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
          log: io.warn,
          signal: stop.signal,
          ...(autoThink ? { autoThink: { targetCpu } } : {}),
          configExtras: {
            plbVersion: packageVersion(),
            node: process.version,
            driver: lease.driver.kind,
            borrowing: resolveBorrowing(borrowing),
          },
        });
      } finally {
        await lease.release();
      }
    } finally {
      stop.dispose();
    }
    await renderOutcome(outcome.results, strategies, runs.length, flags.json, io);
    for (const r of outcome.results) {
      io.warn(`run directory: ${r.dir}${r.summary.complete ? '' : ' (incomplete)'}`);
    }
    return outcome.interrupted ? (stop.code() ?? STOP_SIGNALS.SIGINT) : 0;
  } catch (err) {
    io.warn(`Error: ${formatError(err)}`);
    return 1;
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
  io: { log: (line: string) => void; warn: (line: string) => void },
): Promise<void> {
  if (results.length === 0) return;
  const baseline = strategies.includes('rr') ? 'rr' : (strategies[0] ?? 'rr');
  const compare = strategies.length > 1 && strategies.includes('rr');
  const onePerStrategy = planned === strategies.length;
  if (json) io.log(renderBenchResults(results, { json: true }));
  else if (onePerStrategy) {
    io.log(renderBenchResults(results, { json: false }));
    if (compare)
      io.log(
        renderComparison(
          results.map((r) => r.summary),
          { baseline },
        ),
      );
  }
  try {
    const report = await writeReports(
      results.map((r) => r.dir),
      { format: 'table', baseline },
    );
    if (!json && !onePerStrategy) {
      io.log(report.text);
      if (compare) io.log(renderComparison(report.groups, { baseline }));
    }
    for (const f of report.htmlFiles) io.warn(`html: ${f}`);
  } catch (err) {
    // The runs are on disk whatever happens here: a report failure must not lose them.
    io.warn(`report failed: ${formatError(err)} (plb report <run-dir> retries)`);
  }
}
