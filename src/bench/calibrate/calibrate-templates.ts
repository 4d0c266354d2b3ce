/**
 * `plb calibrate --workload <file>`: the file's own templates are measured next to plb's three, so
 * the simulator can run that workload. Its setup runs on the primary first and every template is
 * checked on the measured replica, as before a bench.
 */
import type { ClusterDriver } from '../../cluster/driver.js';
import type { Credentials, Endpoint } from '../../core/endpoint.js';
import { PlbError } from '../../core/errors.js';
import { preflightTemplates, runSetup } from '../../workload/preflight.js';
import type { TemplateSet } from '../../cluster/templates.js';
import { loadWorkloadDocument } from '../../workload/workload-file.js';

/** The file's templates; BAD_INPUT when it has none of its own (plb's three are always measured). */
export function calibrationTemplates(path: string): TemplateSet {
  const set = loadWorkloadDocument(path).templates.set;
  if (set === undefined)
    throw new PlbError(
      'BAD_INPUT',
      `--workload: ${path} defines no templates of its own (plb's point, range and scan are always measured)`,
    );
  return set;
}

export async function prepareCalibrationTemplates(
  driver: ClusterDriver,
  replica: Endpoint,
  creds: Credentials,
  set: TemplateSet,
  rows: number,
  log: (line: string) => void,
): Promise<void> {
  const primary = driver.endpoints().find((e) => e.kind === 'primary');
  if (!primary) throw new PlbError('CLUSTER_NOT_FOUND', 'the cluster has no primary endpoint');
  const replicas = driver.endpoints().filter((e) => e.kind === 'replica');
  await runSetup(set, primary, replicas, creds, log);
  const r = await preflightTemplates(set, replica, creds, rows, { seed: 1, statementTimeoutMs: 60_000 });
  log(`${set.source}: ${r.checked} template(s) checked on ${replica.id}; measuring them too`);
}
