import type { ClusterDriver } from '../cluster/driver.js';
import type { ClusterSpec } from '../run-format/cluster-record.js';
import { acquireClusterLock } from '../cluster/lock.js';
import {
  bringUp,
  clusterSpec,
  DEFAULT_MAX_CONNECTIONS,
  openCluster,
  removeOwned,
  type DriverChoice,
} from '../cluster/select.js';
import { createSimCluster } from '../cluster/sim/index.js';
import type { SimCalibration } from '../cluster/sim/calibration.js';
import { checkCapacity, connectionsFor, CONNECTION_RESERVE, MAX_MAX_CONNECTIONS } from '../cluster/sizing.js';
import { defaultStateDir, readClusterRecord } from '../cluster/state.js';
import type { VirtualClock } from '../clock/virtual.js';
import { PlbError } from '../core/errors.js';
import { ExternalDriver, primaryMaxConnections, type HookRecord } from '../cluster/external/index.js';
import { externalConfig, type ExternalCluster } from '../cluster/external/file.js';
import type { RunEvent, RunWriter } from '../metrics/types.js';

export interface ClusterLease {
  driver: ClusterDriver;
  spec: ClusterSpec;
  /** True when this command brought the cluster up (and so takes it down again). */
  owned: boolean;
  /** Takes down what this command brought up (by its id, nothing else) and frees the lock. */
  release(): Promise<void>;
  /** A simulated cluster: the virtual clock its whole series runs on, and its calibration. */
  sim?: { clock: VirtualClock; calibration: { path: string; contents: SimCalibration } };
  /** What config.json records of this cluster beyond the driver and spec (an external cluster's). */
  config?: Record<string, unknown>;
  /** Lets the cluster add to each run's writer (an external cluster's hook events). */
  observeWriter?: (writer: RunWriter) => RunWriter;
}

/** The run writers `make` creates, each passed through the lease's observeWriter (when it has one). */
export function observeWriters<A extends unknown[]>(
  lease: Pick<ClusterLease, 'observeWriter'>,
  make: (...args: A) => (ids: string[]) => RunWriter,
): (...args: A) => (ids: string[]) => RunWriter {
  const observe = lease.observeWriter;
  if (!observe) return make;
  return (...args) => {
    const create = make(...args);
    return (ids) => observe(create(ids));
  };
}

/**
 * The cluster a benchmark runs on: the existing one of that name (from `plb cluster up`), or a new
 * one brought up for this command and removed when it ends (unless keep is set). Either way the
 * cluster's lock is held until release, so no other bench, up or down touches it meanwhile.
 */
export async function leaseCluster(opts: {
  name: string;
  driver: DriverChoice;
  replicas: number;
  /** Most sessions open at once: with one survivor, one replica holds them all. */
  sessions: number;
  /** The flag that sets `sessions`, for the error when an existing cluster is too small. */
  sessionsField: string;
  /** Many routers: their further checkers' and readers' connections (sizing.ts routerConnections). */
  plbConnections?: number;
  over: Partial<ClusterSpec>;
  keep: boolean;
  log: (line: string) => void;
  /** --driver sim: the calibration file (default: the shipped one). */
  calibration?: string;
  /** --driver sim, --sim-cpu pooled: a down replica's quota goes to those up. */
  simCpu?: 'pooled';
  /** --driver external: the cluster file, read (and checked against the plan) by the caller. */
  external?: ExternalCluster;
  /**
   * --worker-index past 0: a node that changes nothing (no faults, no reset) joins the cluster
   * without its lock (index 0 holds it), and never brings one up.
   */
  join?: boolean;
}): Promise<ClusterLease> {
  const stateDir = opts.over.stateDir ?? defaultStateDir();
  if (opts.driver === 'sim') return leaseSimCluster({ ...opts, stateDir });
  if (opts.driver === 'external') {
    if (!opts.external) throw new PlbError('BAD_INPUT', '--cluster-file: required with --driver external');
    return leaseExternalCluster({ ...opts, external: opts.external, stateDir, join: opts.join === true });
  }
  const most = MAX_MAX_CONNECTIONS - CONNECTION_RESERVE;
  if (opts.sessions > most)
    throw new PlbError(
      'BAD_INPUT',
      `${opts.sessionsField}: at most ${most} sessions on a docker or local cluster (max_connections up to ${MAX_MAX_CONNECTIONS}), got ${opts.sessions}`,
      { hint: '--driver sim simulates more' },
    );
  const lock = opts.join ? { release: () => undefined } : acquireClusterLock(stateDir, opts.name);
  try {
    const record = readClusterRecord(stateDir, opts.name);
    if (!record && opts.join)
      throw new PlbError(
        'BAD_INPUT',
        `--worker-index: no cluster ${opts.name} to join (index 0 or plb cluster up brings it up first)`,
      );
    if (record) {
      const driver = await openCluster(opts.name, stateDir);
      checkCapacity({
        sessions: opts.sessions,
        plbConnections: opts.plbConnections ?? 0,
        cluster: opts.name,
        maxConnections: driver.spec.maxConnections,
        field: opts.sessionsField,
      });
      opts.log(
        `using the existing cluster ${opts.name} (${driver.kind} driver, ${driver.spec.replicas} replicas)`,
      );
      return { driver, spec: driver.spec, owned: false, release: async () => lock.release() };
    }
    const spec = clusterSpec({
      maxConnections: Math.max(DEFAULT_MAX_CONNECTIONS, connectionsFor(opts.sessions, opts.plbConnections)),
      ...opts.over,
      name: opts.name,
      replicas: opts.replicas,
      stateDir,
    });
    const t0 = Date.now();
    const { driver } = await bringUp({ driver: opts.driver, spec, log: opts.log });
    opts.log(`cluster ${spec.name} up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return {
      driver,
      spec: driver.spec,
      owned: true,
      release: async () => {
        try {
          if (opts.keep) {
            opts.log(`keeping cluster ${spec.name} (plb cluster down --name ${spec.name} removes it)`);
            return;
          }
          opts.log(`taking cluster ${spec.name} down (id ${driver.spec.id ?? '?'})`);
          await removeOwned(driver);
        } finally {
          lock.release();
        }
      },
    };
  } catch (err) {
    lock.release();
    throw err;
  }
}

/**
 * A simulated cluster lives in memory for this bench only: no lock, no state record, nothing on
 * disk; keep-cluster has nothing to keep.
 */
function leaseSimCluster(opts: {
  name: string;
  replicas: number;
  sessions: number;
  plbConnections?: number;
  over: Partial<ClusterSpec>;
  stateDir: string;
  log: (line: string) => void;
  calibration?: string;
  simCpu?: 'pooled';
}): Promise<ClusterLease> {
  const { driver, clock, calibration } = createSimCluster({
    name: opts.name,
    replicas: opts.replicas,
    sessions: opts.sessions,
    ...(opts.plbConnections ? { plbConnections: opts.plbConnections } : {}),
    over: opts.over,
    stateDir: opts.stateDir,
    ...(opts.calibration !== undefined ? { calibrationPath: opts.calibration } : {}),
    ...(opts.simCpu !== undefined ? { cpuPool: opts.simCpu } : {}),
  });
  const pooled = opts.simCpu === 'pooled' ? " (pooled: a down replica's quota goes to those up)" : '';
  opts.log(
    `simulated cluster ${driver.spec.name}: ${driver.spec.replicas} replicas of ${driver.spec.cpus} CPU${pooled}, max_connections ${driver.spec.maxConnections}; calibration ${calibration.path}`,
  );
  return Promise.resolve({
    driver,
    spec: driver.spec,
    owned: true,
    release: () => Promise.resolve(),
    sim: { clock, calibration },
    ...(opts.simCpu !== undefined ? { config: { simCpu: opts.simCpu } } : {}),
  });
}

/**
 * An external cluster is the user's: the lease only holds the lock of its name (so two benches on
 * this machine do not break it at once) and never brings anything up or down.
 */
async function leaseExternalCluster(opts: {
  external: ExternalCluster;
  sessions: number;
  sessionsField: string;
  plbConnections?: number;
  stateDir: string;
  log: (line: string) => void;
  join: boolean;
}): Promise<ClusterLease> {
  const c = opts.external;
  const lock = opts.join ? { release: () => undefined } : acquireClusterLock(opts.stateDir, c.name);
  try {
    const maxConnections = await primaryMaxConnections(c);
    const need = connectionsFor(opts.sessions, opts.plbConnections);
    if (maxConnections !== null && need > maxConnections)
      throw new PlbError(
        'BAD_INPUT',
        `${opts.sessionsField}: ${opts.sessions} sessions need max_connections >= ${need} on every replica (one survivor holds them all), but the primary of ${c.name} has ${maxConnections}`,
        { hint: 'use fewer sessions, or raise max_connections on your servers' },
      );
    const driver = new ExternalDriver(c, {
      stateDir: opts.stateDir,
      ...(maxConnections !== null ? { maxConnections } : {}),
    });
    const config = externalConfig(c);
    opts.log(
      `external cluster ${c.name} from ${c.path}: ${c.replicaIds.length} replicas; ${
        config.cpuMeasured ? 'CPU from its cpu hooks' : 'CPU not measured (no cpu hooks)'
      }; dataset ${c.prepare ? 'prepared by the bench (prepare: true)' : 'must exist (prepare: false)'}`,
    );
    return {
      driver,
      spec: driver.spec,
      owned: false,
      release: async () => lock.release(),
      config: { external: config },
      observeWriter: (writer) => hookEvents(driver, writer, opts.log),
    };
  } catch (err) {
    lock.release();
    throw err;
  }
}

/**
 * Hook runs into a run's events.jsonl: the writer is wrapped so hook events carry run time (from
 * the run's 'started' event) and stop once the run is finished. Hooks outside a run (the reset
 * before it) are only logged.
 */
function hookLine(r: HookRecord): string {
  const how = r.error !== undefined ? `FAILED: ${r.error}` : `exit ${r.exitCode ?? '-'}`;
  return `hook ${r.hook} ${r.replica}: ${how} (${r.durationMs} ms)`;
}

function hookEvents(driver: ExternalDriver, writer: RunWriter, log: (line: string) => void): RunWriter {
  let t0: number | undefined;
  let closed = false;
  driver.onHook = (r) => {
    log(hookLine(r));
    if (t0 === undefined || closed) return;
    writer.event({ type: 'hook', tMs: Math.round(performance.now() - t0), ...r });
  };
  return {
    get dir() {
      return writer.dir;
    },
    get recorder() {
      return writer.recorder;
    },
    writeConfig: (config) => writer.writeConfig(config),
    event: (e: RunEvent) => {
      // The run's clock starts as it writes this event (bench/run.ts): hook times count from here.
      if (e.type === 'run' && e['state'] === 'started') t0 = performance.now() - e.tMs;
      writer.event(e);
    },
    tick: (nowMs) => writer.tick(nowMs),
    progress: (nowMs, windowS) => writer.progress(nowMs, windowS),
    finish: (endMs, complete, errors) => {
      closed = true;
      return writer.finish(endMs, complete, errors);
    },
  };
}
