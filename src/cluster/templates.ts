/**
 * SQL templates: what a session runs. Each class has a list of named, weighted, parameterised
 * statements (`$1`, `$2`, ... drawn by generators.ts). Without a workload file that names its own
 * templates, the classes run plb's three over `plb_items` (workloads/default.yaml) with the
 * weights of `queryWeights` / `--query-mix`.
 */
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { PlbError } from '../core/errors.js';
import { packageRoot } from '../core/package-info.js';
import type { Rng } from '../core/rng.js';
import type { QueryKind } from '../run-format/config.js';
import type { templateRecordSchema, templateSetSchema } from '../run-format/workload-file.js';
import { compileParam, type Generator } from './generators.js';

/** A named, weighted, parameterised statement (config.json records it as it is). */
export type Template = z.infer<typeof templateRecordSchema>;
/** The templates of a workload, per class, with its setup SQL. */
export type TemplateSet = z.infer<typeof templateSetSchema>;

export interface StatementInstance {
  template: Template;
  text: string;
  values: unknown[];
}

/** Draws one statement of the class: a template by weight, then its parameters in order. */
export function drawStatement(templates: readonly Template[], rows: number, rng: Rng): StatementInstance {
  const template = pickTemplate(templates, rng);
  return instantiate(template, rows, rng);
}

const compiled = new WeakMap<Template, { rows: number; gens: Generator[] }>();

/**
 * The template's generators for this dataset size (built once; bounds may use `rows`). Throws a
 * BAD_INPUT naming the template's file and line when a bound does not hold for these rows.
 */
export function generatorsOf(t: Template, rows: number): Generator[] {
  const c = compiled.get(t);
  if (c && c.rows === rows) return c.gens;
  const gens = t.params.map((p, i) => {
    try {
      return compileParam(p, i, { rows });
    } catch (err) {
      throw new PlbError(
        'BAD_INPUT',
        `${t.where}: template ${t.name}: params[${i}] ($${i + 1}) ${(err as Error).message}`,
      );
    }
  });
  compiled.set(t, { rows, gens });
  return gens;
}

/** A template by weight, with the same single draw as Rng.weighted over the same order. */
function pickTemplate(templates: readonly Template[], rng: Rng): Template {
  const total = templates.reduce((s, t) => s + t.weight, 0);
  let r = rng.next() * total;
  for (const t of templates) {
    r -= t.weight;
    if (r < 0) return t;
  }
  const last = templates[templates.length - 1];
  if (!last) throw new PlbError('INTERNAL', 'a class has no templates');
  return last;
}

export function instantiate(template: Template, rows: number, rng: Rng): StatementInstance {
  const values: unknown[] = [];
  for (const g of generatorsOf(template, rows)) values.push(g(rng, values));
  return { template, text: template.sql, values };
}

/** The SQL with its string literals, quoted identifiers and comments blanked (for scanning it). */
function code(sql: string): string {
  return sql
    .replace(/--[^\n]*/g, ' ')
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/"(?:[^"]|"")*"/g, '""')
    .replace(/\$([A-Za-z_]\w*)?\$[\s\S]*?\$\1\$/g, "''");
}

/** The highest `$n` the statement uses (0: none). */
export function highestParam(sql: string): number {
  let max = 0;
  for (const m of code(sql).matchAll(/\$(\d+)/g)) max = Math.max(max, Number(m[1]));
  return max;
}

/**
 * Whether a statement changes data, from its text: one led by a writing or session keyword
 * (INSERT ... SET, BEGIN), EXPLAIN ANALYZE of a write, a WITH with a data-modifying part, or a
 * SELECT ... FOR UPDATE/SHARE or INTO. The pre-flight then runs every read once on a replica, which refuses what this misses
 * (a function that writes, nextval).
 */
export function isWriteStatement(sql: string): boolean {
  const c = code(sql)
    .trim()
    .replace(/^\(+\s*/, '');
  const first = /^[A-Za-z]+/.exec(c)?.[0]?.toUpperCase() ?? '';
  const modifies = /\b(INSERT|UPDATE|DELETE|MERGE)\b/i;
  if (first === 'WITH')
    return modifies.test(c) || /\bFOR\s+(NO\s+KEY\s+)?(UPDATE|SHARE|KEY\s+SHARE)\b/i.test(c);
  // SELECT ... INTO makes a table; FOR UPDATE/SHARE takes row locks (both refused on a standby).
  if (first === 'SELECT')
    return /\bINTO\b/i.test(c) || /\bFOR\s+(NO\s+KEY\s+)?(UPDATE|SHARE|KEY\s+SHARE)\b/i.test(c);
  if (first === 'EXPLAIN') return /\bANALY[SZ]E\b/i.test(c) && modifies.test(c);
  // An unknown first word (a typo such as SELEC) is left to the pre-flight: PREPARE names the
  // syntax error, and a read-only run refuses whatever writes.
  return WRITE_KEYWORDS.has(first);
}

const WRITE_KEYWORDS = new Set(
  (
    'INSERT UPDATE DELETE MERGE CREATE DROP ALTER TRUNCATE COPY GRANT REVOKE CALL DO LOCK ' +
    'REFRESH VACUUM ANALYZE ANALYSE CLUSTER REINDEX COMMENT SECURITY IMPORT SET RESET DISCARD ' +
    'LISTEN NOTIFY UNLISTEN PREPARE EXECUTE DEALLOCATE DECLARE FETCH MOVE CLOSE BEGIN START ' +
    'COMMIT ROLLBACK SAVEPOINT RELEASE CHECKPOINT LOAD REASSIGN'
  ).split(' '),
);

/** The path of the default workload file (plb's three templates). */
export function defaultWorkloadPath(): string {
  return join(packageRoot(), 'workloads', 'default.yaml');
}

/** Reads the default file's text (the workload-file reader parses it like any other). */
export function readDefaultWorkload(): string {
  return readFileSync(defaultWorkloadPath(), 'utf8');
}

/** The SQL of plb's three templates in the default file, by name (the simulator keys costs on it). */
export function builtinSql(): Record<QueryKind, string> {
  const doc = parseYaml(readDefaultWorkload()) as { templates?: Record<string, { sql?: unknown }> };
  const sql = (k: QueryKind): string => {
    const v = doc.templates?.[k]?.sql;
    if (typeof v !== 'string')
      throw new PlbError('INTERNAL', `${defaultWorkloadPath()}: templates.${k}.sql is missing`);
    return v;
  };
  return { point: sql('point'), range: sql('range'), scan: sql('scan') };
}

/** plb's three templates with the class's weights (point/range/scan), in the default file's order. */
export function withKindWeights(
  templates: readonly Template[],
  weights: Readonly<Record<QueryKind, number>>,
): Template[] {
  return templates.map((t) => ({ ...t, weight: weights[t.name as QueryKind] ?? 0 }));
}

/** Every template of the set once (by name), premium's first. */
export function allTemplates(set: TemplateSet): Template[] {
  const seen = new Map<string, Template>();
  for (const cls of ['premium', 'freemium'] as const)
    for (const t of set.classes[cls]) if (!seen.has(t.name)) seen.set(t.name, t);
  return [...seen.values()];
}
