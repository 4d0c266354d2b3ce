/**
 * Before a run with the user's own templates: the workload's setup SQL once on the primary, then
 * every template PREPAREd on one replica (syntax, tables, columns, parameter count) and every read
 * run once there in a read-only transaction (types of the generated values, a read that writes).
 * A problem is one line naming the workload file, the template's line and the template, and the
 * run does not start. The simulator has no SQL: there, every template must have a calibrated CPU.
 */
import type pg from 'pg';
import type { ClusterDriver } from '../cluster/driver.js';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import { currentWalLsn, waitCaughtUp, withClient } from '../cluster/pg-util.js';
import { costsBySql, type SimCalibration } from '../cluster/sim/calibration.js';
import { errorText, PlbError } from '../core/errors.js';
import { Rng } from '../core/rng.js';
import {
  allTemplates,
  generatorsOf,
  instantiate,
  type Template,
  type TemplateSet,
} from '../cluster/templates.js';

/** Every template's generators hold for this dataset size (a `rows` bound may not). */
export function checkTemplateSet(set: TemplateSet, rows: number): void {
  for (const t of allTemplates(set)) generatorsOf(t, rows);
}

/** Whether plb may run setup SQL on this cluster (not on a user's fleet without `prepare: true`). */
export function mayWriteSetup(driver: ClusterDriver): boolean {
  if (driver.kind !== 'external') return true;
  return (driver as { cluster?: { prepare?: boolean } }).cluster?.prepare === true;
}

/** Whether the templates read plb's own table (so the dataset must be loaded for them). */
export function needsPlbDataset(set: TemplateSet | undefined): boolean {
  return set === undefined || set.builtin || allTemplates(set).some((t) => /\bplb_items\b/i.test(t.sql));
}

const fail = (set: TemplateSet, t: Template, what: string, cause?: unknown): PlbError =>
  new PlbError('BAD_INPUT', `${t.where}: template ${t.name}: ${what}`, {
    hint: `fix it in ${set.source}; nothing was run`,
    ...(cause !== undefined ? { cause } : {}),
  });

/** The workload's setup SQL on the primary (one multi-statement string), replicated before going on. */
export async function runSetup(
  set: TemplateSet,
  primary: Endpoint,
  replicas: readonly Endpoint[],
  creds: Credentials,
  log: (line: string) => void,
): Promise<void> {
  if (set.setup === null || set.setup.trim() === '') return;
  const t0 = Date.now();
  try {
    await withClient(primary, creds, (c) => c.query(set.setup as string), {
      timeoutMs: 10_000,
      queryTimeoutMs: 600_000,
      applicationName: 'plb-setup',
    });
  } catch (err) {
    throw new PlbError('BAD_INPUT', `${set.source}: setup failed on the primary: ${errorText(err)}`, {
      hint: 'the setup SQL runs once on the primary before the run; fix it and run again',
      cause: err,
    });
  }
  const lsn = await currentWalLsn(primary, creds);
  for (const r of replicas) await waitCaughtUp(r, creds, lsn, 300_000);
  log(`workload setup ran on the primary and replicated in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

/**
 * PREPAREs each template on `replica` and checks the parameter count the server infers; runs each
 * read once (read-only transaction, statement timeout) with values from `seed`. Throws on the first
 * problem; nothing of the run has started.
 */
export async function preflightTemplates(
  set: TemplateSet,
  replica: Endpoint,
  creds: Credentials,
  rows: number,
  opts: { seed: number; statementTimeoutMs: number },
): Promise<{ checked: number }> {
  const rng = new Rng(opts.seed);
  const templates = allTemplates(set);
  await withClient(
    replica,
    creds,
    async (c: pg.Client) => {
      await c.query(`SET statement_timeout = ${Math.max(1, Math.round(opts.statementTimeoutMs))}`);
      for (const [i, t] of templates.entries()) {
        const name = `plb_preflight_${i}`;
        try {
          await c.query(`PREPARE ${name} AS ${t.sql}`);
        } catch (err) {
          throw fail(set, t, errorText(err), err);
        }
        const r = await c.query<{ n: number }>(
          'SELECT cardinality(parameter_types) AS n FROM pg_prepared_statements WHERE name = $1',
          [name],
        );
        await c.query(`DEALLOCATE ${name}`);
        const n = Number(r.rows[0]?.n ?? 0);
        if (n !== t.params.length)
          throw fail(set, t, `the server sees ${n} parameter(s), params gives ${t.params.length}`);
        if (t.writes) continue;
        const q = instantiate(t, rows, rng);
        try {
          await c.query('BEGIN READ ONLY');
          await c.query(q.text, q.values);
        } catch (err) {
          const code = (err as { code?: unknown }).code;
          const what =
            code === '25006'
              ? `changes data (${errorText(err)}): mark it writes: true and set allowWrites: true (writes go to the primary)`
              : `${errorText(err)} (run once with ${JSON.stringify(q.values).slice(0, 200)})`;
          throw fail(set, t, what, err);
        } finally {
          await c.query('ROLLBACK').catch(() => undefined);
        }
      }
    },
    { timeoutMs: 10_000, queryTimeoutMs: opts.statementTimeoutMs + 5000, applicationName: 'plb-preflight' },
  );
  return { checked: templates.length };
}

/**
 * The simulator: every template needs its CPU in the calibration, found by its SQL text as the
 * simulator finds it (plb's three are always priced, whichever file holds them).
 */
export function checkSimTemplates(set: TemplateSet, cal: SimCalibration, calibrationPath: string): void {
  const known = costsBySql(cal);
  for (const t of allTemplates(set))
    if (!known.has(t.sql))
      throw new PlbError(
        'BAD_INPUT',
        `${t.where}: template ${t.name}: the calibration ${calibrationPath} has no CPU for it, so the simulator cannot run it; ` +
          `measure the workload on a real cluster first: plb calibrate --workload ${set.source} --out <file>, then --calibration <file>`,
      );
}
