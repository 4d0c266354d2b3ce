import { VirtualClock } from '../../clock/virtual.js';
import { PlbError } from '../../core/errors.js';
import { MAX_SIM_REPLICAS } from '../../core/replica-ids.js';
import type { ClusterDriver } from '../driver.js';
import type { ClusterSpec } from '../../run-format/cluster-record.js';
import { DEFAULT_CLUSTER } from '../driver.js';
import { connectionsFor } from '../sizing.js';
import { chargedCosts, defaultCalibrationPath, loadCalibration, type SimCalibration } from './calibration.js';
import { calibrationFromRun, isRunCalibration } from './calibration-from-run.js';
import { SimDriver } from './driver.js';

/** The simulated cluster a driver runs, or undefined for a real one. */
export function simDriverOf(driver: ClusterDriver): SimDriver | undefined {
  return driver instanceof SimDriver ? driver : undefined;
}

/**
 * A simulated cluster for one bench, on its own virtual clock. Sized like a real one (every
 * replica holds every session), without a real server's ceiling on max_connections.
 */
export function createSimCluster(opts: {
  name: string;
  replicas: number;
  sessions: number;
  /** Many routers: connections of plb's own beyond the reserve (sizing.ts routerConnections). */
  plbConnections?: number;
  over: Partial<ClusterSpec>;
  stateDir: string;
  calibrationPath?: string;
  /** --sim-cpu (default quota: each replica its own). */
  cpuPool?: 'quota' | 'pooled';
}): { driver: SimDriver; clock: VirtualClock; calibration: { path: string; contents: SimCalibration } } {
  if (!Number.isInteger(opts.replicas) || opts.replicas < 1 || opts.replicas > MAX_SIM_REPLICAS)
    throw new PlbError(
      'BAD_INPUT',
      `replicas: must be an integer from 1 to ${MAX_SIM_REPLICAS} with --driver sim, got ${opts.replicas}`,
    );
  const cpus = opts.over.cpus ?? DEFAULT_CLUSTER.cpus;
  const primaryCpus = opts.over.primaryCpus ?? DEFAULT_CLUSTER.primaryCpus;
  if (!(cpus > 0) || !(primaryCpus > 0)) throw new PlbError('BAD_INPUT', `cpus: must be > 0, got ${cpus}`);
  const spec: ClusterSpec = {
    name: opts.name,
    replicas: opts.replicas,
    basePort: opts.over.basePort ?? DEFAULT_CLUSTER.basePort,
    cpus,
    primaryCpus,
    memoryMb: 0,
    maxConnections: opts.over.maxConnections ?? connectionsFor(opts.sessions, opts.plbConnections),
    stateDir: opts.stateDir,
    id: `sim-${opts.name}`,
  };
  const path = opts.calibrationPath ?? defaultCalibrationPath();
  const contents = isRunCalibration(path)
    ? calibrationFromRun(path, loadCalibration())
    : loadCalibration(path);
  const clock = new VirtualClock();
  // The driver charges the costs at load; config.json records the file as it is.
  return {
    driver: new SimDriver(spec, clock, chargedCosts(contents), path, 0, opts.cpuPool ?? 'quota'),
    clock,
    calibration: { path, contents },
  };
}
