import { isMap } from 'yaml';
import { readUserFile, YamlFile } from '../core/user-file.js';
import { parseDuration } from '../core/duration.js';
import { fieldPath } from '../core/zod-issue.js';
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
  const file = new YamlFile(text, source, 'BAD_INPUT');
  const fail = (line: number, msg: string) => file.fail(line, msg);
  if (!isMap(file.root)) throw fail(file.lineOf(file.root), 'must be a mapping with classes');
  // The line of the deepest node the path reaches (a missing field: its parent).
  const lineAt = (path: readonly PropertyKey[]): number => file.lineAt(path);
  const data = file.check(workloadFileSchema);
  const templates = resolveFileTemplates(data, source, lineAt, fail, builtin);
  const out: WorkloadFileValues = {};
  for (const cls of SERVICE_CLASSES as readonly ServiceClass[]) {
    const c = data.classes[cls];
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
  const text = readUserFile(path, {
    code: 'BAD_INPUT',
    maxBytes: MAX_BYTES,
    flag: '--workload',
    hint: 'pass the path of a YAML workload file, e.g. workloads/paper-classes.yaml',
  });
  return parseWorkloadDocument(text, path);
}
