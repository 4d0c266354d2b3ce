/**
 * The workload file (`--workload <file.yaml>`): what each service class does in its sessions.
 * Published for editors; workload/workload-file.ts reads it (line-numbered errors).
 */
import { z } from 'zod';

const weight = z.number().min(0);

const classFileSchema = z
  .strictObject({
    queriesPerSession: z.number().int().positive().optional().describe('mean queries per session'),
    thinkTime: z
      .union([z.string(), z.number().min(0)])
      .optional()
      .describe('mean think time between queries: a duration like 250ms or 1s (a number is seconds)'),
    queryWeights: z
      .strictObject({ point: weight, range: weight, scan: weight })
      .optional()
      .describe('relative weights of the query templates (not all 0)'),
  })
  .describe('One class; a field left out keeps the default (or what the command line says)');

export const workloadFileSchema = z
  .strictObject({
    description: z.string().optional(),
    classes: z.strictObject({ premium: classFileSchema.optional(), freemium: classFileSchema.optional() }),
  })
  .meta({
    title: 'plb workload file',
    description:
      'Per-class session shape for plb bench (--workload); flags given on the command line override it.',
  });

export type WorkloadFile = z.infer<typeof workloadFileSchema>;
