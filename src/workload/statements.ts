/**
 * What a session of a class runs: the workload's own templates, or plb's three from the default
 * file (workloads/default.yaml) weighted by the class's queryWeights.
 */
import type { Rng } from '../core/rng.js';
import type { ServiceClass } from '../core/service-class.js';
import type { QueryKind, WorkloadSpec } from '../run-format/config.js';
import {
  defaultWorkloadPath,
  instantiate,
  readDefaultWorkload,
  type StatementInstance,
  withKindWeights,
  type Template,
  type TemplateSet,
} from '../cluster/templates.js';
import { parseWorkloadDocument } from './workload-file.js';

let defaults: TemplateSet | undefined;

/** plb's three templates, read once from the default file (its classes both run all three). */
function defaultTemplateSet(): TemplateSet {
  if (defaults === undefined) {
    const set = parseWorkloadDocument(readDefaultWorkload(), defaultWorkloadPath(), true).templates.set;
    if (set === undefined) throw new Error(`${defaultWorkloadPath()} defines no templates`);
    defaults = set;
  }
  return defaults;
}

/** One of plb's three queries (the default file's template of that name) with drawn values. */
export function makeQuery(kind: QueryKind, rows: number, rng: Rng): StatementInstance {
  const t = defaultTemplateSet().classes.premium.find((x) => x.name === kind);
  if (t === undefined) throw new Error(`${defaultWorkloadPath()} has no template ${kind}`);
  return instantiate(t, rows, rng);
}

const perSpec = new WeakMap<WorkloadSpec, Record<ServiceClass, Template[]>>();

/** The templates a class's sessions draw from (built once per spec, so generators are too). */
export function classTemplates(spec: WorkloadSpec, cls: ServiceClass): Template[] {
  let c = perSpec.get(spec);
  if (c === undefined) {
    const builtin = defaultTemplateSet().classes.premium;
    c = spec.templates
      ? spec.templates.classes
      : {
          premium: withKindWeights(builtin, spec.classes.premium.queryWeights),
          freemium: withKindWeights(builtin, spec.classes.freemium.queryWeights),
        };
    perSpec.set(spec, c);
  }
  return c[cls];
}
