/**
 * `plb calibrate`: leases a cluster, readies one replica (prepare-cluster.ts, then the state a
 * bench's replica reaches in its first seconds), measures it (calibrate-measure.ts) and writes
 * the calibration (calibrate-summary.ts).
 */
import type { ClusterDriver } from '../../cluster/driver.js';
import { kernelTickMs } from './kernel-tick.js';
import { checkBasePort } from '../../cluster/ports.js';
import { DEFAULT_REPLICAS, parseCpus, parseDriverChoice } from '../../cluster/select.js';
import { checkCalibration, type SimCalibration } from '../../cluster/sim/calibration.js';
import { validateClusterName } from '../../cluster/state.js';
import { allTemplates, type TemplateSet } from '../../cluster/templates.js';
import { formatError, PlbError } from '../../core/errors.js';
import { checkWritableFile, writeFileSafe } from '../../core/safe-write.js';
import { DEFAULT_WORKLOAD } from '../../workload/spec.js';
import { handleStopSignals, STOP_SIGNALS } from '../../cli/stop-signals.js';
import { measureAtLoad } from './calibrate-at-load.js';
import { measureReplica, settle } from './calibrate-measure.js';
import {
  CALIBRATE_DEFAULTS,
  CALIBRATE_LIMITS,
  machineDescription,
  renderCalibration,
  summariseCalibration,
} from './calibrate-summary.js';
import { calibrationTemplates, prepareCalibrationTemplates } from './calibrate-templates.js';
import { leaseCluster } from '../cluster-lease.js';
import { prepareCluster } from '../prepare-cluster.js';

export interface CalibrateFlags {
  out: string;
  name: string;
  cpus?: string | undefined;
  samples: number;
  restarts: number;
  driver: string;
  'base-port': number;
  note?: string | undefined;
  /** A workload file whose own templates are measured too. */
  workload?: string | undefined;
}

function positiveInt(flag: string, n: number, max: number): number {
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new PlbError('BAD_INPUT', `--${flag}: must be an integer from 1 to ${max} (got ${n})`);
  return n;
}

/**
 * `plb calibrate`: checks every flag before anything starts, leases a cluster (the existing one of
 * that name, or one brought up for this command and removed after), measures r1 under the quota,
 * writes the file and prints the summary. Returns the exit code.
 */
export async function executeCalibrate(
  flags: CalibrateFlags,
  io: { log: (line: string) => void; warn: (line: string) => void; stdout: (text: string) => void },
): Promise<{ code: number; calibration?: SimCalibration }> {
  try {
    const samples = positiveInt('samples', flags.samples, CALIBRATE_LIMITS.samples);
    const restarts = positiveInt('restarts', flags.restarts, CALIBRATE_LIMITS.restarts);
    const cpus = flags.cpus === undefined ? undefined : parseCpus('--cpus', flags.cpus);
    const driverChoice = parseDriverChoice(flags.driver);
    // The simulator is what a calibration feeds: it cannot be what one measures.
    // An external cluster is not plb's to kill and restart for a calibration.
    if (driverChoice === 'sim' || driverChoice === 'external')
      throw new PlbError(
        'BAD_INPUT',
        `--driver: calibrate measures a replica plb made: auto, docker or local (got ${driverChoice})`,
      );
    try {
      validateClusterName(flags.name);
    } catch (err) {
      throw new PlbError('BAD_INPUT', `--${formatError(err)}`);
    }
    checkBasePort(flags['base-port'], DEFAULT_REPLICAS);
    const toStdout = flags.out === '-';
    const templates = flags.workload === undefined ? undefined : calibrationTemplates(flags.workload);
    if (!toStdout) checkWritableFile(flags.out, '--out');
    const stop = handleStopSignals({ warn: io.warn });
    let cal: SimCalibration;
    try {
      const lease = await leaseCluster({
        name: flags.name,
        driver: driverChoice,
        replicas: DEFAULT_REPLICAS,
        sessions: 1,
        sessionsField: '--name',
        over: { basePort: flags['base-port'], ...(cpus !== undefined ? { cpus } : {}) },
        keep: false,
        log: io.warn,
      });
      try {
        cal = await calibrateOn(lease.driver, {
          cpus,
          samples,
          restarts,
          note: flags.note,
          log: io.warn,
          signal: stop.signal,
          ...(templates ? { templates } : {}),
        });
      } finally {
        await lease.release();
      }
    } catch (err) {
      if (stop.signal.aborted) {
        io.warn(`Error: ${formatError(err)}`);
        return { code: stop.code() ?? STOP_SIGNALS.SIGINT };
      }
      throw err;
    } finally {
      stop.dispose();
    }
    const json = `${JSON.stringify(cal, null, 2)}\n`;
    if (toStdout) {
      io.stdout(json);
      io.warn(renderCalibration(cal, 'written to stdout'));
    } else {
      writeFileSafe(flags.out, json, '--out');
      io.log(renderCalibration(cal, `written to ${flags.out}`));
    }
    return { code: 0, calibration: cal };
  } catch (err) {
    io.warn(`Error: ${formatError(err)}`);
    return { code: 1 };
  }
}
/** On a leased cluster: r1 ready, at the quota asked for (restored after), dataset there; measure. */
async function calibrateOn(
  driver: ClusterDriver,
  opts: {
    cpus: number | undefined;
    samples: number;
    restarts: number;
    note: string | undefined;
    log: (line: string) => void;
    signal: AbortSignal;
    templates?: TemplateSet;
  },
): Promise<SimCalibration> {
  const rows = DEFAULT_WORKLOAD.datasetRows;
  // The bench's preparation: every replica up, unpaused and replaying, the dataset loaded.
  const { creds } = await prepareCluster(
    driver,
    { replicas: 1, neededBy: 'plb calibrate', datasetRows: rows },
    opts.log,
  );
  const replica = driver.endpoints().find((e) => e.id === CALIBRATE_DEFAULTS.replica);
  if (!replica)
    throw new PlbError('CLUSTER_NOT_FOUND', `the cluster has no replica ${CALIBRATE_DEFAULTS.replica}`);
  await driver.waitReady(replica.id);
  await settle(driver, replica, creds, rows, opts.log);
  if (opts.templates)
    await prepareCalibrationTemplates(driver, replica, creds, opts.templates, rows, opts.log);
  const quota = opts.cpus ?? driver.spec.cpus;
  const changeQuota = quota !== driver.spec.cpus;
  if (changeQuota) await driver.setCpus(replica.id, quota);
  try {
    // The local driver enforces quotas only as root with writable cgroups.
    const quotaEnforced = (driver as { cpusEnforced?: boolean }).cpusEnforced !== false;
    if (!quotaEnforced) opts.log(`warning: ${replica.id}'s CPU quota is recorded but not enforced here`);
    opts.log(`measuring ${replica.id} at ${quota} cpus (${opts.samples} samples per measure)`);
    const m = await measureReplica({
      driver,
      replica,
      credentials: creds,
      replicaCpus: quota,
      quotaEnforced,
      datasetRows: rows,
      samples: opts.samples,
      restarts: opts.restarts,
      log: opts.log,
      signal: opts.signal,
      ...(opts.templates ? { extra: allTemplates(opts.templates).filter((t) => !t.writes) } : {}),
    });
    const sequential = summariseCalibration(m, {
      at: new Date().toISOString(),
      machine: machineDescription(),
      tick: kernelTickMs(),
      ...(opts.note ? { note: opts.note } : {}),
    });
    const companions = driver.endpoints().filter((e) => e.kind === 'replica' && e.id !== replica.id);
    opts.log(
      `measuring ${replica.id} at load (plb's mix, 16 sessions at 70 % of its quota; ${companions.length} other replicas loaded alike)`,
    );
    const atLoad = await measureAtLoad({
      driver,
      replica,
      credentials: creds,
      companions,
      replicas: companions.length + 1,
      cpusPerReplica: quota,
      sequential,
    });
    return checkCalibration({ ...sequential, atLoad }, 'measured');
  } finally {
    // An interrupted restart must not leave the replica of someone's cluster down.
    const after = (await driver.status().catch(() => [])).find((s) => s.id === replica.id);
    if (after && !after.up) await driver.start(replica.id).catch(() => undefined);
    if (changeQuota) await driver.setCpus(replica.id, driver.spec.cpus).catch(() => undefined);
  }
}
