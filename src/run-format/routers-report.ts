// `plb report`: the per-router section of a group (--routers N > 1), medians over its runs.
import { z } from 'zod';
import { serviceClassRecord, statSchema } from './common.js';

const routerClassStatsSchema = z.object({ p95: statSchema, goodput: statSchema });

export const aggregatedRoutersSchema = z
  .object({
    count: z.number(),
    view: z.string(),
    perRouter: z.array(
      z.object({
        router: z.number(),
        sessions: serviceClassRecord(statSchema),
        borrowFlips: statSchema,
        phases: z.array(
          z.object({
            phase: z.string(),
            premium: routerClassStatsSchema,
            freemium: routerClassStatsSchema,
          }),
        ),
      }),
    ),
    disagreement: z.array(
      z.object({
        phase: z.string(),
        meanReplicas: statSchema,
        maxReplicas: statSchema,
        borrowFlips: statSchema,
      }),
    ),
  })
  .describe(
    "--routers N > 1: each instance's router over the runs (sessions, borrow flips, per class p95 and goodput per phase) and the replicas two routers disagreed on, per phase",
  );
export type AggregatedRouters = z.infer<typeof aggregatedRoutersSchema>;
