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

export const workerRowsSchema = z
  .array(
    z.object({
      runId: z.string(),
      worker: z.number(),
      pid: z.number().nullable(),
      instances: z.array(z.number()),
      queries: serviceClassRecord(z.number()),
      errors: serviceClassRecord(z.number()),
      sessions: serviceClassRecord(z.number()),
      p95Ms: serviceClassRecord(z.number().nullable()),
      qps: z.number().describe('queries (both classes) per second with a value from it'),
      exit: z.string(),
    }),
  )
  .describe(
    "--workers: each run's worker processes (or merged nodes), as summary.json gives them; not aggregated",
  );
