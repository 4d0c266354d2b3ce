/**
 * Fault plans, two shapes. planFileSchema: the YAML file a user writes (durations as 90 or "90s"),
 * published for editors; faults/plan.ts stays the parser (line-numbered errors, order and state
 * checks no schema can say). faultPlanSchema: the parsed plan (FaultPlan), as config.json
 * embeds it.
 */
import { z } from 'zod';

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
  weight: z.number().optional(),
  zone: z.string().optional(),
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
  weights: z.record(z.string(), z.number()).optional(),
  cpus: z.record(z.string(), z.number()).optional(),
  zones: z.record(z.string(), z.string()).optional(),
});

// The same duration syntax parseDuration accepts.
const DURATION_RE =
  '^(\\d+(\\.\\d+)?|(\\d+(\\.\\d+)?h)?(\\d+(\\.\\d+)?m)?(\\d+(\\.\\d+)?s)?(\\d+(\\.\\d+)?ms)?)$';
const duration = (what: string) =>
  z
    .union([z.number().nonnegative(), z.string().regex(new RegExp(DURATION_RE))])
    .describe(`${what}: seconds, or a duration like "90s", "2m", "1m30s", "500ms"`);

const zoneName = z.string().regex(/^[A-Za-z0-9_-]{1,32}$/);
const replicaKey = z.string().regex(/^r[1-9]\d*$/);

export const planFileEventSchema = z
  .strictObject({
    at: duration('when, from the start of the run (warm-up included)'),
    replica: z
      .string()
      .regex(/^r[1-9]\d*$/)
      .optional()
      .describe('r1..rK (every action but zone-down and zone-up)'),
    zone: zoneName.optional().describe('zone-down and zone-up only: the zone (see zones)'),
    action: z
      .enum([...faultActionSchema.options, 'zone-down', 'zone-up'])
      .describe(
        'down: kill; rejoin: start again; stop: graceful stop; pause/unpause: freeze; throttle: new CPU quota; ' +
          'pause-replay/resume-replay: WAL replay; zone-down/zone-up: down/rejoin every replica of a zone at once',
      ),
    cpus: z.number().positive().optional().describe('throttle only: the new CPU quota (cores)'),
    weight: z.number().positive().optional().describe('throttle only: the new static weight'),
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
    weights: z
      .record(replicaKey, z.number().positive())
      .optional()
      .describe('static weight per replica (relative capacity; default 1; --weights overrides)'),
    cpus: z
      .record(replicaKey, z.number().positive())
      .optional()
      .describe("CPU quota per replica (cores) set before the run; others keep the cluster's"),
    zones: z
      .record(replicaKey, zoneName)
      .optional()
      .describe('zone per replica, every replica or none: sessions prefer their own zone'),
    events: z.array(planFileEventSchema).nullable().optional(),
  })
  .meta({
    title: 'plb fault plan',
    description: 'A fault plan for plb bench run --plan (YAML). plb plan validate checks it fully.',
  });

export type PlanFile = z.infer<typeof planFileSchema>;
/** A fault plan as parsed and validated (times in seconds from the start of the run). */
export type FaultAction = z.infer<typeof faultActionSchema>;
export type FaultEvent = z.infer<typeof planEventSchema>;
export type FaultPlan = z.infer<typeof faultPlanSchema>;
