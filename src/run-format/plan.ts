/**
 * Fault plans, two shapes. planFileSchema: the YAML file a user writes (durations as 90 or "90s"),
 * published for editors; faults/plan.ts stays the parser (line-numbered errors, order and state
 * checks no schema can say). faultPlanSchema: the parsed plan (faults/types.ts), as config.json
 * embeds it.
 */
import { z } from 'zod';
import type { FaultAction, FaultEvent, FaultPlan } from '../faults/types.js';
import type { SameType } from './type-check.js';

export const faultActionSchema = z.enum([
  'down',
  'rejoin',
  'stop',
  'pause',
  'unpause',
  'throttle',
  'pause-replay',
  'resume-replay',
]);

export const planEventSchema = z.object({
  at: z.number(),
  replica: z.string(),
  action: faultActionSchema,
  cpus: z.number().optional(),
  line: z.number().describe('1-based line of the event in the plan file (0 when built in code)'),
});

export const faultPlanSchema = z.object({
  name: z.string(),
  description: z.string(),
  duration: z.number(),
  warmup: z.number(),
  referenceWindow: z.number(),
  replicas: z.number(),
  events: z.array(planEventSchema),
});

const _action: SameType<z.infer<typeof faultActionSchema>, FaultAction> = true;
const _event: SameType<z.infer<typeof planEventSchema>, FaultEvent> = true;
const _plan: SameType<z.infer<typeof faultPlanSchema>, FaultPlan> = true;

// The same duration syntax parseDuration accepts.
const DURATION_RE =
  '^(\\d+(\\.\\d+)?|(\\d+(\\.\\d+)?h)?(\\d+(\\.\\d+)?m)?(\\d+(\\.\\d+)?s)?(\\d+(\\.\\d+)?ms)?)$';
const duration = (what: string) =>
  z
    .union([z.number().nonnegative(), z.string().regex(new RegExp(DURATION_RE))])
    .describe(`${what}: seconds, or a duration like "90s", "2m", "1m30s", "500ms"`);

export const planFileEventSchema = z
  .strictObject({
    at: duration('when, from the start of the run (warm-up included)'),
    replica: z
      .string()
      .regex(/^r[1-9]\d*$/)
      .describe('r1..rK'),
    action: faultActionSchema.describe(
      'down: kill; rejoin: start again; stop: graceful stop; pause/unpause: freeze; throttle: new CPU quota',
    ),
    cpus: z.number().positive().optional().describe('throttle only: the new CPU quota (cores)'),
  })
  .describe('One fault; events are in time order');

export const planFileSchema = z
  .strictObject({
    name: z.string().min(1).max(100),
    description: z.string().nullable().optional(),
    duration: duration('total run length'),
    warmup: duration('start excluded from every phase (default 10s)').optional(),
    reference: duration('length of the ref phase before the first fault (default 30s)').optional(),
    replicas: z.int().min(1).max(64).optional().describe('K, the replicas the plan expects (default 5)'),
    events: z.array(planFileEventSchema).nullable().optional(),
  })
  .meta({
    title: 'plb fault plan',
    description: 'A fault plan for plb bench run --plan (YAML). plb plan validate checks it fully.',
  });

export type PlanFile = z.infer<typeof planFileSchema>;
