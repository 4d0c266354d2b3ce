/**
 * Before a run, a series' think-time calibration or `plb calibrate`: the cluster has the replicas
 * asked for, every replica is up, unpaused and replaying, and the dataset (and a workload's own
 * SQL templates) are in place. One preparation for all of them.
 */
import type { ClusterDriver } from '../cluster/driver.js';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import { PlbError } from '../core/errors.js';
import type { WorkloadSpec } from '../run-format/config.js';
import type { FaultPlan } from '../run-format/plan.js';
import { needsPlbDataset } from '../workload/preflight.js';
import { prepareTemplates } from './templates-run.js';

export interface ClusterNeeds {
  /** Replicas needed, and who needs them (named in the error when the cluster has fewer). */
  replicas: number;
  neededBy: string;
  /** Rows of plb's dataset to load; null: none of plb's tables are read. */
  datasetRows: number | null;
  /** A workload's own SQL templates: set up and checked before anything runs. */
  templates?: WorkloadSpec;
}

/** What a bench run needs of its cluster: the plan's replicas, the workload's data. */
export function benchNeeds(plan: FaultPlan, workload: WorkloadSpec): ClusterNeeds {
  // The user's own templates need plb's tables only when they read them (or with --write-rate).
  const dataset = needsPlbDataset(workload.templates) || (workload.writeRate ?? 0) > 0;
  return {
    replicas: plan.replicas,
    neededBy: `plan ${plan.name}`,
    datasetRows: dataset ? workload.datasetRows : null,
    ...(workload.templates ? { templates: workload } : {}),
  };
}

export async function prepareCluster(
  driver: ClusterDriver,
  needs: ClusterNeeds,
  log: (line: string) => void,
): Promise<{ primary: Endpoint; replicas: Endpoint[]; creds: Credentials }> {
  const endpoints = driver.endpoints();
  const primary = endpoints.find((e) => e.kind === 'primary');
  const replicas = endpoints.filter((e) => e.kind === 'replica');
  if (!primary) throw new PlbError('CLUSTER_NOT_FOUND', 'the cluster has no primary endpoint');
  if (replicas.length < needs.replicas) {
    throw new PlbError(
      'BAD_INPUT',
      `${needs.neededBy} needs ${needs.replicas} replicas but the cluster has ${replicas.length}`,
      { hint: `plb cluster up --replicas ${needs.replicas}` },
    );
  }
  const creds = await driver.credentials();
  await resetCluster(driver, replicas, log);
  if (needs.datasetRows !== null) {
    const ds = await driver.prepareDataset(needs.datasetRows, log);
    if (ds.loaded) log(`dataset loaded and replicated in ${(ds.ms / 1000).toFixed(1)} s`);
  }
  if (needs.templates) await prepareTemplates(driver, needs.templates, primary, replicas, creds, log);
  return { primary, replicas, creds };
}

/**
 * Every replica up, unpaused and replaying (the previous run may have left one down, or, killed
 * hard, with its replay paused: the dataset wait would never end).
 */
async function resetCluster(
  driver: ClusterDriver,
  replicas: readonly Endpoint[],
  log: (l: string) => void,
): Promise<void> {
  const status = await driver.status();
  for (const r of replicas) {
    const s = status.find((x) => x.id === r.id);
    if (s?.paused) {
      log(`unpausing ${r.id}`);
      await driver.unpause(r.id);
    } else if (!s?.up) {
      log(`starting ${r.id} (it was down)`);
      await driver.start(r.id);
    }
    // Resuming a replay that runs is a no-op; the simulated cluster has no replay.
    if (driver.kind !== 'sim') await driver.setReplayPaused(r.id, false);
  }
}
