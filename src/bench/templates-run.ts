/**
 * The SQL-template side of a run: before it, the workload's setup and the pre-flight (or, on the
 * simulator, the calibration check); during it, the primary's connections for templates that
 * write, and per-template latencies; after it, the per-template figures in summary.json.
 */
import type { Clock } from '../clock/index.js';
import type { Connector, DbConnection } from '../cluster/connector.js';
import type { ClusterDriver } from '../cluster/driver.js';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import { simDriverOf } from '../cluster/sim/index.js';
import { PlbError } from '../core/errors.js';
import { TemplateLatencies } from '../metrics/summary/template-stats.js';
import type { RunSummary } from '../run-format/summary.js';
import { renameSync, writeFileSync } from 'node:fs';
import { checkSimTemplates, mayWriteSetup, preflightTemplates, runSetup } from '../workload/preflight.js';
import type { WorkloadSpec } from '../run-format/config.js';
import { allTemplates } from '../cluster/templates.js';

/** Setup SQL on the primary, then every template checked on the first replica; nothing runs before. */
export async function prepareTemplates(
  driver: ClusterDriver,
  workload: WorkloadSpec,
  primary: Endpoint,
  replicas: readonly Endpoint[],
  creds: Credentials,
  log: (line: string) => void,
): Promise<void> {
  const set = workload.templates;
  if (!set) return;
  const sim = simDriverOf(driver);
  if (sim) {
    checkSimTemplates(set, sim.calibration, sim.calibrationPath);
    return;
  }
  if (set.setup !== null) {
    if (mayWriteSetup(driver)) await runSetup(set, primary, replicas, creds, log);
    else log(`${set.source}: setup not run (an external cluster without prepare: true is not written to)`);
  }
  const replica = replicas[0];
  if (!replica)
    throw new PlbError('CLUSTER_NOT_FOUND', 'the cluster has no replica to check the templates on');
  const r = await preflightTemplates(set, replica, creds, workload.datasetRows, {
    seed: 1,
    statementTimeoutMs: workload.queryTimeoutMs,
  });
  log(`${set.source}: ${r.checked} template(s) prepared and checked on ${replica.id}`);
}

/** At most this many connections to the primary carry the templates that write. */
const PRIMARY_POOL = 8;

/** A small pool over the connector to the primary (opened as needed, each used by one query at a time). */
function primaryPool(connector: Connector, workload: WorkloadSpec) {
  const idle: DbConnection[] = [];
  const waiting: ((c: DbConnection) => void)[] = [];
  const all: DbConnection[] = [];
  let opening = 0;
  const acquire = async (): Promise<DbConnection> => {
    const c = idle.pop();
    if (c) return c;
    if (all.length + opening < PRIMARY_POOL) {
      opening++;
      try {
        const conn = await connector.open('primary', {
          connectTimeoutMs: workload.connectTimeoutMs,
          queryTimeoutMs: workload.queryTimeoutMs,
          applicationName: 'plb-writes',
          onError: () => undefined,
        });
        all.push(conn);
        return conn;
      } finally {
        opening--;
      }
    }
    return new Promise((resolve) => waiting.push(resolve));
  };
  const release = (c: DbConnection, broken: boolean): void => {
    if (broken) {
      all.splice(all.indexOf(c), 1);
      void c.end(0);
      return;
    }
    const w = waiting.shift();
    if (w) w(c);
    else idle.push(c);
  };
  return {
    async query(text: string, values: unknown[]): Promise<number> {
      const c = await acquire();
      try {
        const n = await c.query(text, values);
        release(c, false);
        return n;
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        release(c, !(typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !code.startsWith('08')));
        throw err;
      }
    },
    async close(): Promise<void> {
      await Promise.all(all.map((c) => c.end(1000)));
    },
  };
}

export interface TemplateRun {
  latencies: TemplateLatencies;
  primary?: { query(text: string, values: unknown[]): Promise<number> };
  /** Adds the per-template figures to the summary (and rewrites summary.json); closes the pool. */
  finish(summary: RunSummary, summaryPath: string): Promise<void>;
}

export function templateRunParts(connector: Connector, workload: WorkloadSpec, _clock: Clock): TemplateRun {
  const latencies = new TemplateLatencies();
  const writes = workload.templates !== undefined && allTemplates(workload.templates).some((t) => t.writes);
  const pool = writes ? primaryPool(connector, workload) : undefined;
  return {
    latencies,
    ...(pool ? { primary: pool } : {}),
    async finish(summary, summaryPath) {
      await pool?.close();
      if (latencies.empty) return;
      summary.templates = latencies.summarize([
        ...summary.phases,
        ...(summary.faultInterval ? [summary.faultInterval] : []),
      ]);
      // Whole, by rename: a reader never sees half a summary.
      writeFileSync(`${summaryPath}.tmp`, `${JSON.stringify(summary, null, 2)}\n`);
      renameSync(`${summaryPath}.tmp`, summaryPath);
    },
  };
}
