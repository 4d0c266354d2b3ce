import { readInputFile } from '../core/input-file.js';
import { isMap, LineCounter, parseDocument, type Node as YamlNode } from 'yaml';
import { PlbError } from '../core/errors.js';
import { parseDuration } from '../core/duration.js';
import { fieldPath, firstIssue } from '../run-format/parse.js';
import { workloadFileSchema } from '../run-format/workload-file.js';
import { SERVICE_CLASSES, type ServiceClass } from '../core/service-class.js';
import type { PerClass } from './spec.js';
import type { ClassWorkload } from '../run-format/config.js';
import { resolveFileTemplates, type FileTemplates } from './template-file.js';

const MAX_BYTES = 64 * 1024;

/** What a workload file sets, per class (a field left out is not set). */
export type WorkloadFileValues = PerClass<Partial<ClassWorkload>>;

/** Parses a workload file's text; errors are `<source>:<line>: <field> <what>`. */
export function parseWorkloadFile(text: string, source: string): WorkloadFileValues {
  return parseWorkloadDocument(text, source).classes;
}

/** The whole file: each class's session shape and the SQL templates (`builtin`: plb's own file). */
export function parseWorkloadDocument(
  text: string,
  source: string,
  builtin = false,
): { classes: WorkloadFileValues; templates: FileTemplates } {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false });
  const lineOf = (node: unknown): number => {
    const start = (node as YamlNode | undefined)?.range?.[0];
    return start === undefined ? 1 : lc.linePos(start).line;
  };
  const fail = (line: number, msg: string) => new PlbError('BAD_INPUT', `${source}:${line}: ${msg}`);
  const syntax = doc.errors[0];
  if (syntax) {
    const line = syntax.linePos?.[0].line ?? lc.linePos(syntax.pos[0]).line;
    throw fail(line, `yaml: ${syntax.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '')}`);
  }
  if (!isMap(doc.contents)) throw fail(lineOf(doc.contents), 'must be a mapping with classes');
  const value: unknown = doc.toJS();
  // The line of the deepest node the issue's path reaches (a missing field: its parent).
  const lineAt = (path: readonly PropertyKey[]): number => {
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n) as unknown[], true);
      if (node !== undefined) return lineOf(node);
    }
    return 1;
  };
  const r = workloadFileSchema.safeParse(value);
  if (!r.success) {
    const issue = r.error.issues[0];
    const path =
      issue?.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0] ?? ''] : (issue?.path ?? []);
    throw fail(lineAt(path), firstIssue(r.error, value));
  }
  const templates = resolveFileTemplates(r.data, source, lineAt, fail, builtin);
  const out: WorkloadFileValues = {};
  for (const cls of SERVICE_CLASSES as readonly ServiceClass[]) {
    const c = r.data.classes[cls];
    if (!c) continue;
    const v: Partial<ClassWorkload> = {};
    const at = (field: string) => ['classes', cls, field];
    if (c.queriesPerSession !== undefined) v.queriesPerSession = c.queriesPerSession;
    if (c.thinkTime !== undefined) {
      const s = parseDuration(c.thinkTime);
      if (s === undefined || !(s >= 0))
        throw fail(
          lineAt(at('thinkTime')),
          `${fieldPath(at('thinkTime'))} must be a duration like 250ms or 1s (got ${JSON.stringify(c.thinkTime)})`,
        );
      v.thinkTimeMs = Math.round(s * 1000);
    }
    const kinds = templates.kindWeights[cls];
    if (kinds !== undefined) v.queryWeights = kinds;
    out[cls] = v;
  }
  return { classes: out, templates };
}

/** Reads and parses a workload file (`--workload`). */
export function loadWorkloadFile(path: string): WorkloadFileValues {
  return loadWorkloadDocument(path).classes;
}

/** Reads and parses a workload file (`--workload`): classes and templates. */
export function loadWorkloadDocument(path: string): ReturnType<typeof parseWorkloadDocument> {
  const text = readInputFile(
    path,
    '--workload',
    MAX_BYTES,
    'pass the path of a YAML workload file, e.g. workloads/paper-classes.yaml',
  );
  return parseWorkloadDocument(text, path);
}
