import { readInputFile } from '../core/input-file.js';
import { isMap, LineCounter, parseDocument, type Node as YamlNode } from 'yaml';
import { PlbError } from '../core/errors.js';
import { parseDuration } from '../core/duration.js';
import { fieldPath, firstIssue } from '../run-format/parse.js';
import { workloadFileSchema } from '../run-format/workload-file.js';
import { SERVICE_CLASSES, type ServiceClass } from '../core/service-class.js';
import { checkQueryWeights, type PerClass } from './spec.js';
import { type ClassWorkload } from '../run-format/config.js';

const MAX_BYTES = 64 * 1024;

/** What a workload file sets, per class (a field left out is not set). */
export type WorkloadFileValues = PerClass<Partial<ClassWorkload>>;

/** Parses a workload file's text; errors are `<source>:<line>: <field> <what>`. */
export function parseWorkloadFile(text: string, source: string): WorkloadFileValues {
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
    if (c.queryWeights !== undefined) {
      try {
        v.queryWeights = checkQueryWeights({ ...c.queryWeights }, fieldPath(at('queryWeights')));
      } catch (err) {
        throw fail(lineAt(at('queryWeights')), (err as Error).message);
      }
    }
    out[cls] = v;
  }
  return out;
}

/** Reads and parses a workload file (`--workload`). */
export function loadWorkloadFile(path: string): WorkloadFileValues {
  const text = readInputFile(
    path,
    '--workload',
    MAX_BYTES,
    'pass the path of a YAML workload file, e.g. workloads/paper-classes.yaml',
  );
  return parseWorkloadFile(text, path);
}
