// events.jsonl: one JSON object a line ('hook': --driver external's fault commands), one schema per `type` (metrics/types.ts RunEvent documents them).
import { z } from 'zod';
import { HOOK_NAMES } from './cluster-file.js';
import { faultActionSchema } from './plan.js';

const tMs = z.number().describe('ms since the start of the run (t=0: the first client starts)');

// Loose objects: an event keeps whatever else its writer put in it; only the named fields are checked.
const faultEventSchema = z.looseObject({
  type: z.literal('fault'),
  tMs: tMs.describe('when the fault took effect (a phase boundary)'),
  issuedMs: z.number().optional(),
  doneMs: z.number().optional(),
  replica: z.string(),
  action: faultActionSchema,
  cpus: z.number().optional(),
  /** Set when the action failed. */
  error: z.string().optional(),
});

const detectEventSchema = z.looseObject({
  type: z.literal('detect'),
  tMs,
  replica: z.string(),
  state: z.enum(['up', 'down']),
  via: z.string().describe("'health' | 'connect' | 'session' | 'oracle'"),
  cause: z.string().optional(),
});

const failuresEventSchema = z.looseObject({
  type: z.literal('failures'),
  tMs,
  replica: z.string(),
  unreachable: z.number(),
  overloaded: z.number(),
  slow: z.number(),
});

const roleEventSchema = z.looseObject({
  type: z.literal('role'),
  tMs,
  replica: z.string(),
  from: z.string(),
  to: z.string(),
  reason: z.string().optional(),
});

const runStateEventSchema = z.looseObject({
  type: z.literal('run'),
  tMs,
  state: z.enum(['started', 'finished', 'interrupted', 'failed']),
});

const noteEventSchema = z.looseObject({
  type: z.literal('note'),
  tMs,
  what: z.string().optional().describe("'error' | 'fault-not-taken' | 'schedule-lag' | ..."),
});

const hookEventSchema = z.looseObject({
  type: z.literal('hook'),
  tMs: tMs.describe('when the hook ended'),
  replica: z.string(),
  hook: z
    .string()
    .describe(`the cluster file's hook: ${HOOK_NAMES.slice(0, -1).join(', ')} or ${HOOK_NAMES.at(-1)}`),
  argv: z.array(z.string()).describe('the command as run (no shell), the password cut out'),
  exitCode: z.number().nullable().describe('null: killed (timeout, signal) or never started'),
  signal: z.string().nullable(),
  timedOut: z.boolean(),
  durationMs: z.number(),
  stdout: z.string().describe('its first and last 2 KiB, the password cut out'),
  stderr: z.string(),
  error: z.string().optional().describe('set when the hook failed (a failed fault)'),
});

export const runEventSchema = z
  .discriminatedUnion('type', [
    faultEventSchema,
    detectEventSchema,
    failuresEventSchema,
    roleEventSchema,
    runStateEventSchema,
    noteEventSchema,
    hookEventSchema,
  ])
  .meta({ title: 'plb events.jsonl line', description: 'One line of runs/<id>/events.jsonl.' });

export type RunEventRecord = z.infer<typeof runEventSchema>;
