/**
 * The template part of a workload file, after the schema: which templates each class runs at what
 * weight, their parameter counts, whether they write, and choice files read. Every problem is one
 * line `<file>:<line>: <field> <what>` (the reader passes `lineAt` and `fail`).
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { PlbError } from '../core/errors.js';
import { SERVICE_CLASSES, type ServiceClass } from '../core/service-class.js';
import type { TemplateFile, WorkloadFile } from '../run-format/workload-file.js';
import { fieldPath } from '../core/zod-issue.js';
import { compileParam, type ParamSpec } from '../cluster/generators.js';
import { DEFAULT_WORKLOAD, checkQueryWeights, QUERY_KINDS, type PerClass } from './spec.js';
import type { QueryKind } from '../run-format/config.js';
import { highestParam, isWriteStatement, type Template, type TemplateSet } from '../cluster/templates.js';

/** A choice file holds at most this much (its values go into config.json). */
const MAX_CHOICE_BYTES = 1024 * 1024;

export interface FileTemplates {
  /** The file's own templates (absent: it names none, the classes run plb's three). */
  set?: TemplateSet;
  /** Without own templates: each class's point/range/scan weights, when the file gives them. */
  kindWeights: PerClass<Record<QueryKind, number>>;
}

type LineAt = (path: readonly PropertyKey[]) => number;
type Fail = (line: number, msg: string) => PlbError;

export function resolveFileTemplates(
  data: WorkloadFile,
  source: string,
  lineAt: LineAt,
  fail: Fail,
  builtin = false,
): FileTemplates {
  const at = (path: PropertyKey[], msg: string): PlbError => fail(lineAt(path), `${fieldPath(path)} ${msg}`);
  const own = (cls: ServiceClass) => data.classes[cls]?.templates;
  const hasOwn = data.templates !== undefined || SERVICE_CLASSES.some((c) => own(c) !== undefined);
  if (!hasOwn) {
    // plb's three: queryWeights names them (one left out weighs 0).
    const kindWeights: PerClass<Record<QueryKind, number>> = {};
    for (const cls of SERVICE_CLASSES) {
      const w = data.classes[cls]?.queryWeights;
      if (w === undefined) continue;
      const path = ['classes', cls, 'queryWeights'];
      for (const name of Object.keys(w))
        if (!(QUERY_KINDS as readonly string[]).includes(name))
          throw at(
            [...path, name],
            `names no template (plb's own are point, range and scan; define templates: for your own)`,
          );
      const full = Object.fromEntries(QUERY_KINDS.map((k) => [k, w[k] ?? 0])) as Record<QueryKind, number>;
      try {
        kindWeights[cls] = checkQueryWeights(full, fieldPath(path));
      } catch (err) {
        throw fail(lineAt(path), (err as Error).message);
      }
    }
    return { kindWeights };
  }
  const allowWrites = data.allowWrites ?? false;
  const build = (name: string, t: TemplateFile, path: PropertyKey[]): Template => {
    const params = (t.params ?? []).map((p, i) => readChoiceFile(p, source, [...path, 'params', i], at));
    const used = highestParam(t.sql);
    if (used !== params.length)
      throw at(
        [...path, params.length > used ? 'params' : 'sql'],
        `uses ${used === 0 ? 'no parameters' : `$1..$${used}`} but params gives ${params.length}`,
      );
    // Bounds checked now with the default dataset size; the bench checks them again with its own.
    params.forEach((p, i) => {
      try {
        compileParam(p, i, { rows: DEFAULT_WORKLOAD.datasetRows });
      } catch (err) {
        throw at([...path, 'params', i], (err as Error).message);
      }
    });
    const writes = t.writes ?? isWriteStatement(t.sql);
    if (writes && !allowWrites)
      throw at(
        [...path, 'sql'],
        `changes data (${firstWord(t.sql)}): plb runs reads unless the file sets allowWrites: true (writes then go to the primary)`,
      );
    return {
      name,
      weight: t.weight ?? 1,
      sql: t.sql.trim(),
      params,
      writes,
      where: `${source}:${lineAt(path)}`,
    };
  };
  const shared = Object.entries(data.templates ?? {}).map(([n, t]) => build(n, t, ['templates', n]));
  const classes = {} as Record<ServiceClass, Template[]>;
  for (const cls of SERVICE_CLASSES) {
    const mine = Object.entries(own(cls) ?? {}).map(([n, t]) => {
      if (data.templates?.[n] !== undefined)
        throw at(['classes', cls, 'templates', n], `is already a shared template (give it another name)`);
      return build(n, t, ['classes', cls, 'templates', n]);
    });
    let list = [...shared, ...mine];
    const w = data.classes[cls]?.queryWeights;
    if (w !== undefined) {
      for (const name of Object.keys(w))
        if (!list.some((t) => t.name === name))
          throw at(['classes', cls, 'queryWeights', name], `names no template this class has`);
      list = list.filter((t) => w[t.name] !== undefined).map((t) => ({ ...t, weight: w[t.name] ?? 0 }));
    }
    if (!list.some((t) => t.weight > 0))
      throw fail(
        lineAt(['classes', cls]),
        `classes.${cls}: no template with a weight above 0 (define templates:, classes.${cls}.templates: or its queryWeights)`,
      );
    classes[cls] = list;
  }
  const setup =
    data.setup === undefined ? null : typeof data.setup === 'string' ? data.setup : data.setup.join(';\n');
  return { set: { source, setup, allowWrites, builtin, classes }, kindWeights: {} };
}

function firstWord(sql: string): string {
  return (/[A-Za-z]+/.exec(sql)?.[0] ?? '').toUpperCase();
}

/** A choice with `file`: its lines (blank ones and # comments skipped) become the values. */
function readChoiceFile(
  p: ParamSpec,
  source: string,
  path: PropertyKey[],
  at: (path: PropertyKey[], msg: string) => PlbError,
): ParamSpec {
  if (p.type !== 'choice') return p;
  if ((p.values === undefined) === (p.file === undefined)) throw at(path, 'needs either values or file');
  if (p.file === undefined) return p;
  const file = isAbsolute(p.file) ? p.file : resolve(dirname(source), p.file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw at(
      [...path, 'file'],
      `cannot be read: ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    );
  }
  if (Buffer.byteLength(text) > MAX_CHOICE_BYTES)
    throw at([...path, 'file'], `is over ${MAX_CHOICE_BYTES} bytes: ${file}`);
  const values = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  if (values.length === 0) throw at([...path, 'file'], `has no values: ${file}`);
  return { ...p, values };
}
