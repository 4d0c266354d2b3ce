/**
 * The JSON Schema files published in schemas/ (package "files"), generated from the zod schemas
 * so the two cannot drift: `npm run schemas` writes them, a unit test checks the committed ones.
 */
import { z } from 'zod';
import { clusterFileSchema } from './cluster-file.js';
import { clusterRecordSchema } from './cluster-record.js';
import { configSchema } from './config.js';
import { runEventSchema } from './events.js';
import { mapGridSchema, mapJsonSchema } from './paper-map.js';
import { planFileSchema } from './plan.js';
import { reportJsonSchema } from './report.js';
import { summarySchema } from './summary.js';
import { workloadFileSchema } from './workload-file.js';

/** schemas/<name>.schema.json -> the schema it is made from. */
export const PUBLISHED_SCHEMAS = {
  plan: planFileSchema,
  config: configSchema,
  summary: summarySchema,
  events: runEventSchema,
  'cluster-record': clusterRecordSchema,
  'cluster-file': clusterFileSchema,
  report: reportJsonSchema,
  workload: workloadFileSchema,
  'map-grid': mapGridSchema,
  map: mapJsonSchema,
} as const satisfies Record<string, z.ZodType>;

export type PublishedSchemaName = keyof typeof PUBLISHED_SCHEMAS;

/** The text of schemas/<name>.schema.json. */
export function jsonSchemaText(name: PublishedSchemaName): string {
  // draft-07: the version editors (yaml-language-server, VS Code) complete from best. 'input': what
  // a reader accepts (unknown fields are ignored, not refused), which is what a file may hold.
  const schema = z.toJSONSchema(PUBLISHED_SCHEMAS[name], { target: 'draft-07', io: 'input' });
  return `${JSON.stringify(schema, null, 2)}\n`;
}

export function jsonSchemaFile(name: PublishedSchemaName): string {
  return `${name}.schema.json`;
}
