import type { ClusterDriver, ClusterSpec } from '../cluster/driver.js';
import { acquireClusterLock } from '../cluster/lock.js';
import {
  bringUp,
  clusterSpec,
  DEFAULT_MAX_CONNECTIONS,
  openCluster,
  removeOwned,
  type DriverChoice,
} from '../cluster/select.js';
import { checkCapacity, connectionsFor } from '../cluster/sizing.js';
import { defaultStateDir, readClusterRecord } from '../cluster/state.js';

export interface ClusterLease {
  driver: ClusterDriver;
  spec: ClusterSpec;
  /** True when this command brought the cluster up (and so takes it down again). */
  owned: boolean;
  /** Takes down what this command brought up (by its id, nothing else) and frees the lock. */
  release(): Promise<void>;
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
  over: Partial<ClusterSpec>;
  keep: boolean;
  log: (line: string) => void;
}): Promise<ClusterLease> {
  const stateDir = opts.over.stateDir ?? defaultStateDir();
  const lock = acquireClusterLock(stateDir, opts.name);
  try {
    const record = readClusterRecord(stateDir, opts.name);
    if (record) {
      const driver = await openCluster(opts.name, stateDir);
      checkCapacity({
        sessions: opts.sessions,
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
      maxConnections: Math.max(DEFAULT_MAX_CONNECTIONS, connectionsFor(opts.sessions)),
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
