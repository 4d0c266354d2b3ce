/**
 * The workload file (`--workload <file.yaml>`): what each service class does in its sessions, and
 * optionally the SQL it runs (named, weighted templates with parameter generators).
 * Published for editors; workload/workload-file.ts reads it (line-numbered errors).
 */
import { z } from 'zod';

const weight = z.number().min(0);
const bound = z
  .union([z.number(), z.string()])
  .describe('an integer, or an expression over rows (plb_items size): rows, rows / 100, max(1, rows - 10)');

const paramSchema = z
  .discriminatedUnion('type', [
    z
      .strictObject({ type: z.literal('int'), min: bound, max: bound })
      .describe('uniform integer in [min, max] (pgbench random)'),
    z
      .strictObject({ type: z.literal('zipf'), min: bound, max: bound, s: z.number() })
      .describe('Zipfian integer in [min, max], exponent s in [1.001, 1000] (pgbench random_zipfian)'),
    z
      .strictObject({ type: z.literal('float'), min: z.number(), max: z.number() })
      .describe('uniform real in [min, max)'),
    z
      .strictObject({
        type: z.literal('choice'),
        values: z.array(z.union([z.string(), z.number()])).optional(),
        file: z.string().optional().describe('one value a line, relative to the workload file'),
      })
      .describe('one of the values (or of the lines of file), uniformly'),
    z
      .strictObject({
        type: z.literal('string'),
        length: z.number().int().min(0).optional(),
        minLength: z.number().int().min(0).optional(),
        maxLength: z.number().int().min(0).optional(),
        alphabet: z.string().optional(),
      })
      .describe('random string (default 8 characters of [A-Za-z0-9])'),
    z
      .strictObject({ type: z.literal('ref'), param: z.number().int().min(1), plus: bound.optional() })
      .describe('an earlier parameter ($param) plus an offset'),
  ])
  .describe('how one parameter ($1, $2, ...) is drawn');

const templateFileSchema = z
  .strictObject({
    sql: z.string().min(1).describe('one statement with $1, $2, ... for the params'),
    weight: weight.optional().describe('relative weight in the classes that run it (default 1)'),
    params: z.array(paramSchema).optional().describe('generators of $1, $2, ... in order'),
    writes: z
      .boolean()
      .optional()
      .describe(
        'the statement changes data (default: from its text); writes need allowWrites and go to the primary',
      ),
  })
  .describe('A named SQL template');

const templatesSchema = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/), templateFileSchema);

const classFileSchema = z
  .strictObject({
    queriesPerSession: z.number().int().positive().optional().describe('mean queries per session'),
    thinkTime: z
      .union([z.string(), z.number().min(0)])
      .optional()
      .describe('mean think time between queries: a duration like 250ms or 1s (a number is seconds)'),
    queryWeights: z
      .record(z.string(), weight)
      .optional()
      .describe(
        "relative weights of the templates by name (point, range, scan, or the file's own); a template left out is not run by the class",
      ),
    templates: templatesSchema.optional().describe("this class's own templates (besides the shared ones)"),
  })
  .describe('One class; a field left out keeps the default (or what the command line says)');

export const workloadFileSchema = z
  .strictObject({
    description: z.string().optional(),
    setup: z
      .union([z.string(), z.array(z.string())])
      .optional()
      .describe('SQL run once on the primary before the run (CREATE TABLE IF NOT EXISTS ..., data)'),
    allowWrites: z.boolean().optional().describe('let templates that change data run (on the primary)'),
    templates: templatesSchema
      .optional()
      .describe('templates every class runs (unless its queryWeights leaves them out)'),
    classes: z.strictObject({ premium: classFileSchema.optional(), freemium: classFileSchema.optional() }),
  })
  .meta({
    title: 'plb workload file',
    description:
      'Per-class session shape and SQL templates for plb bench (--workload); flags given on the command line override it.',
  });

export type WorkloadFile = z.infer<typeof workloadFileSchema>;
export type TemplateFile = z.infer<typeof templateFileSchema>;
export type ParamSpec = z.infer<typeof paramSchema>;

/** A resolved template as config.json records it. */
export const templateRecordSchema = z.object({
  name: z.string(),
  weight: z.number(),
  sql: z.string(),
  params: z.array(paramSchema),
  writes: z.boolean(),
  where: z.string(),
});

export const templateSetSchema = z
  .object({
    source: z.string(),
    setup: z.string().nullable(),
    allowWrites: z.boolean(),
    builtin: z.boolean(),
    classes: z.object({ premium: z.array(templateRecordSchema), freemium: z.array(templateRecordSchema) }),
  })
  .describe("--workload's SQL templates (absent: plb's three, weighted by queryWeights)");
