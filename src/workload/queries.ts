import type { Rng } from './rng.js';
import type { QueryKind } from './spec.js';
import { defaultTemplateSet } from './statements.js';
import { instantiate } from './templates.js';

/**
 * plb's own query templates (workloads/default.yaml) over the generated `plb_items` table:
 * point lookup by primary key, a range aggregate over ~1% of the rows, and a scan with group by
 * over the whole table. One of them by kind, for the calibrations that measure each alone.
 */
export interface QueryInstance {
  kind: QueryKind;
  text: string;
  values: unknown[];
}

export function makeQuery(kind: QueryKind, rows: number, rng: Rng): QueryInstance {
  const t = defaultTemplateSet().classes.premium.find((x) => x.name === kind);
  if (t === undefined) throw new Error(`the default workload has no ${kind} template`);
  const q = instantiate(t, rows, rng);
  return { kind, text: q.text, values: q.values };
}
