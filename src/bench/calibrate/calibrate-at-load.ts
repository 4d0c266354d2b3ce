// What a query costs at the load plb's experiments run at, for the simulator: `plb calibrate`'s
// per-template figures are measured one query at a time, but on a replica under its quota with
// 16 sessions at 70 % of it a query of plb's mix used about 3x that CPU (8.8 against 2.7 ms on
// the 0.25-core Docker replica here), and a simulator charging the sequential cost ran its
// replicas far below the real ones' load. The same measurement `--think-time auto` makes, but with
// the cluster's other replicas under the same load meanwhile, as in a bench. (On the Docker testbed
// that moved the cost less than the step's own repeatability: docs/simulator.md, fidelity.)
import type { ClusterDriver } from '../../cluster/driver.js';
import type { AtLoad, SimCalibration } from '../../cluster/sim/calibration.js';
import { classQueryCpuMs } from '../../cluster/sim/demand.js';
import type { Credentials, Endpoint } from '../../core/endpoint.js';
import { Rng } from '../../core/rng.js';
import { calibrateThinkTime, DEFAULT_TARGET_CPU } from '../../workload/calibrate.js';
import { DEFAULT_WORKLOAD } from '../../workload/spec.js';

const SESSIONS = 16;

export async function measureAtLoad(opts: {
  driver: ClusterDriver;
  replica: Endpoint;
  credentials: Credentials;
  replicas: number;
  cpusPerReplica: number;
  /** The cluster's other replicas: loaded the same way meanwhile, as a bench loads them all. */
  companions: readonly Endpoint[];
  /** The sequential figures just measured: the scale's denominator is their mix. */
  sequential: SimCalibration;
}): Promise<AtLoad> {
  const c = await calibrateThinkTime({
    driver: opts.driver,
    replica: opts.replica,
    credentials: opts.credentials,
    workload: DEFAULT_WORKLOAD,
    replicas: opts.replicas,
    cpusPerReplica: opts.cpusPerReplica,
    targetCpu: DEFAULT_TARGET_CPU,
    concurrency: SESSIONS,
    companions: opts.companions,
    rng: new Rng(1).fork(11),
  });
  const seq = classQueryCpuMs(opts.sequential, DEFAULT_WORKLOAD.classes.premium.queryWeights);
  return {
    targetCpu: DEFAULT_TARGET_CPU,
    sessions: SESSIONS,
    queryCpuMs: c.cpuPerQueryMs,
    sequentialQueryCpuMs: Math.round(seq * 1000) / 1000,
    connectCpuMs: c.cpuPerConnectMs,
    companions: opts.companions.length,
  };
}
