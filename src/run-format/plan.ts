/**
 * Fault plans, two formats. planFileSchema: the YAML file a user writes (durations as 90 or "90s",
 * zone-down events), checked field by field with the messages plb prints (`<field>: <what>`; each
 * issue carries its whole text). faultPlanSchema: the plan as resolved (FaultPlan: seconds,
 * defaults filled, zone events expanded, each event's line), as config.json embeds it. The reader
 * (faults/plan.ts) pipes the first into the second through the rules that need the whole plan
 * (faults/plan-rules.ts), so a parsed plan is z.output of faultPlanSchema.
 */
import { z } from 'zod';
import { parseDuration } from '../core/duration.js';
import { MAX_SIM_REPLICAS } from '../core/replica-ids.js';
import { hasControl } from '../core/text.js';
import {
  actionsTaking,
  actionSummaries,
  DIRECTIONS,
  FAULT_ACTIONS,
  FILE_FAULT_ACTIONS,
  FILE_NETWORK_ACTIONS,
  LINKS,
  FAULT_FIELD_NAMES,
  FAULT_FIELDS,
  faultActionSpec,
  type FaultFieldKind,
  type FaultFieldName,
  NETWORK_ACTIONS,
} from './fault-actions.js';

/** The action names, from the registry (fault-actions.ts). */
export const faultActionSchema = z.enum(FAULT_ACTIONS);

/** One schema per field, made by `make`, in the registry's order. */
function fieldShape<T extends z.ZodType>(make: (field: FaultFieldName) => T): Record<FaultFieldName, T> {
  return Object.fromEntries(FAULT_FIELD_NAMES.map((f) => [f, make(f)])) as Record<FaultFieldName, T>;
}

/** The value of each kind of field, as the resolved plan holds it. */
const FIELD_VALUES = {
  'positive-number': z.number(),
  percent: z.number(),
  direction: z.enum(DIRECTIONS),
  'network-action': z.enum(NETWORK_ACTIONS),
  link: z.enum(LINKS),
  milliseconds: z.number(),
  rate: z.number(),
} as const satisfies { readonly [K in FaultFieldKind]: z.ZodType };
type FieldValueSchema<F extends FaultFieldName> = (typeof FIELD_VALUES)[(typeof FAULT_FIELDS)[F]['kind']];
const resolvedFields = Object.fromEntries(
  FAULT_FIELD_NAMES.map((f) => [f, FIELD_VALUES[FAULT_FIELDS[f].kind].optional()]),
) as { [F in FaultFieldName]: z.ZodOptional<FieldValueSchema<F>> };

const planEventSchema = z.object({
  at: z.number(),
  replica: z.string(),
  action: faultActionSchema,
  ...resolvedFields,
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

/** A fault plan as parsed and validated (times in seconds from the start of the run). */
export type FaultEvent = z.infer<typeof planEventSchema>;
export type FaultPlan = z.infer<typeof faultPlanSchema>;

// ---- The file a user writes ----

const MAX_NAME_LENGTH = 100;
/** A plan runs at most a day. */
const MAX_DURATION_S = 24 * 3600;
const MAX_EVENTS = 10_000;
/** K of a plan for a real cluster (a simulated one takes MAX_SIM_REPLICAS). */
export const MAX_PLAN_REPLICAS = 64;
/** File-only actions: every replica of a zone at once, one down / rejoin per replica. */
export const ZONE_ACTIONS = { 'zone-down': 'down', 'zone-up': 'rejoin' } as const;
export type ZoneAction = keyof typeof ZONE_ACTIONS;
const FILE_ACTIONS = [...FILE_FAULT_ACTIONS, ...(Object.keys(ZONE_ACTIONS) as ZoneAction[])];
export const REPLICA_ID_RE = /^r([1-9]\d*)$/;
const ZONE_RE = /^[A-Za-z0-9_-]{1,32}$/;

/** Formats seconds for messages: 90 -> "90s", 0.5 -> "0.5s". */
export function fmtSeconds(s: number): string {
  return `${s}s`;
}

/** A value as a plan's messages show it: nothing, a list, a mapping, "text", 42. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

/** `<what> (got <the value>)`. */
const saying = (what: string, value: unknown) => `${what} (got ${describeValue(value)})`;
/** The `error` of a zod schema: `<what> (got <the value>)`; `required` when the field is missing. */
const got = (what: string) => (iss: { input?: unknown }) => saying(what, iss.input);
const required = (what: string) => (iss: { input?: unknown }) =>
  iss.input === undefined ? 'required' : saying(what, iss.input);

// Published in the JSON Schema only (`meta`): the checks below say these with plb's own messages,
// and those that need the plan's K or zones are faults/plan-rules.ts'.
const DURATION_PATTERN =
  '^(\\d+(\\.\\d+)?|(\\d+(\\.\\d+)?h)?(\\d+(\\.\\d+)?m)?(\\d+(\\.\\d+)?s)?(\\d+(\\.\\d+)?ms)?)$';
const REPLICA_PATTERN = '^r[1-9]\\d*$';

const DURATION_LIKE = 'must be a duration like 90, "90s", "2m", "1m30s" or "500ms"';

/** Seconds, from 90 or "1m30s" (the project's duration parser); `> 0` or `>= 0`, at most `max`. */
function duration(what: string, o: { positive: boolean; max?: number }) {
  return z
    .union([z.number().meta({ minimum: 0 }), z.string().meta({ pattern: DURATION_PATTERN })], {
      error: required(DURATION_LIKE),
    })
    .transform((v, ctx) => {
      const s = parseDuration(v);
      const bad = (message: string) => {
        ctx.issues.push({ code: 'custom', message, input: v });
        return z.NEVER;
      };
      if (s === undefined) return bad(saying(DURATION_LIKE, v));
      if (o.positive ? s <= 0 : s < 0) return bad(saying(`must be ${o.positive ? '> 0' : '>= 0'}`, v));
      if (o.max !== undefined && s > o.max)
        return bad(`must be at most ${fmtSeconds(o.max)} (${o.max / 3600} h) (got ${fmtSeconds(s)})`);
      return s;
    })
    .describe(`${what}: seconds, or a duration like "90s", "2m", "1m30s", "500ms"`);
}

const positiveNumber = (what = 'a number > 0') =>
  z.number({ error: got(`must be ${what}`) }).positive({ error: got(`must be ${what}`) });

const oneOf = (values: readonly string[]) =>
  z.enum(values as [string, ...string[]], { error: got(`must be one of ${values.join(', ')}`) });

/** The check of each kind of event field (fault-actions.ts FAULT_FIELDS). */
const FIELD_CHECKS: { readonly [K in FaultFieldKind]: () => z.ZodType } = {
  'positive-number': () => positiveNumber(),
  percent: () =>
    z
      .number({ error: got('must be a percentage > 0 and <= 100') })
      .positive({ error: got('must be a percentage > 0 and <= 100') })
      .max(100, { error: got('must be a percentage > 0 and <= 100') }),
  direction: () => oneOf(DIRECTIONS),
  'network-action': () => oneOf(FILE_NETWORK_ACTIONS),
  link: () => oneOf(LINKS),
  milliseconds: () =>
    z
      .number({ error: got('must be a number of milliseconds > 0 and <= 60000') })
      .positive({ error: got('must be a number of milliseconds > 0 and <= 60000') })
      .max(MAX_DELAY_MS, { error: got('must be a number of milliseconds > 0 and <= 60000') }),
  rate: () => rate,
};

const MAX_DELAY_MS = 60_000;
const RATE_UNITS = { bit: 1, kbit: 1e3, mbit: 1e6, gbit: 1e9 } as const;
const RATE_RE = /^\s*(\d+(?:\.\d+)?)\s*(bit|kbit|mbit|gbit)\s*$/i;
const RATE_MIN = 8_000;
const RATE_MAX = 10e9;
/** A link's rate: "10mbit" or bits per second, 8kbit to 10gbit (what htb takes on loopback). */
const rate = z
  .union([z.string(), z.number()], { error: got('must be a rate like "10mbit" or "512kbit"') })
  .transform((v, ctx) => {
    const m = typeof v === 'string' ? RATE_RE.exec(v) : null;
    const bits =
      typeof v === 'number'
        ? v
        : m
          ? Number(m[1]) * RATE_UNITS[m[2]!.toLowerCase() as keyof typeof RATE_UNITS]
          : NaN;
    if (!Number.isFinite(bits) || bits < RATE_MIN || bits > RATE_MAX) {
      ctx.addIssue({
        code: 'custom',
        message: saying('must be a rate from 8kbit to 10gbit, like "10mbit" or "512kbit"', v),
        input: v,
      });
      return z.NEVER;
    }
    return Math.round(bits);
  })
  .meta({ type: ['string', 'number'] });

/** r1: ..., r2: ...; the keys (r1..rK) are checked against the plan's K by the plan rules. */
const replicaMap = <T extends z.ZodType>(value: T) =>
  z.record(z.string().meta({ pattern: REPLICA_PATTERN }), value, {
    error: got('must be a mapping like {r1: ..., r2: ...}'),
  });

const name = z
  .string({ error: required('must be a non-empty string') })
  .superRefine((s, ctx) => {
    const trimmed = s.trim();
    const bad = (message: string) => ctx.addIssue({ code: 'custom', message, input: s });
    if (trimmed === '') bad(saying('must be a non-empty string', s));
    else if (trimmed.length > MAX_NAME_LENGTH)
      bad(`must be at most ${MAX_NAME_LENGTH} characters (got ${trimmed.length})`);
    // The name reaches terminals, file names and reports: no control characters.
    else if (hasControl(s)) bad(saying('must not contain control characters', s));
  })
  .meta({ minLength: 1, maxLength: MAX_NAME_LENGTH })
  .transform((s) => s.trim());

const EVENT_SHAPE = {
  at: duration('when, from the start of the run (warm-up included)', { positive: false }).optional(),
  // Any value: whether it is one of r1..rK, or of the plan's zones, is the plan rules' to say.
  replica: z
    .unknown()
    .optional()
    .meta({ type: 'string', pattern: REPLICA_PATTERN })
    .describe('r1..rK (every action but zone-down and zone-up)'),
  zone: z
    .unknown()
    .optional()
    .meta({ type: 'string', pattern: ZONE_RE.source })
    .describe('zone-down, zone-up and the network faults: every replica of the zone (see zones)'),
  action: z
    .enum(FILE_ACTIONS, { error: got(`must be one of ${FILE_ACTIONS.join(', ')}`) })
    .optional()
    .describe(`${actionSummaries()}; zone-down/zone-up: down/rejoin every replica of a zone at once`),
  // Each field checked by its kind; the actions it goes with are the registry's.
  ...fieldShape((f) =>
    FIELD_CHECKS[FAULT_FIELDS[f].kind]()
      .optional()
      .describe(`${actionsTaking(f).join(', ')} only: ${FAULT_FIELDS[f].what}`),
  ),
  for: duration(`${FILE_NETWORK_ACTIONS.join(', ')} only: heal it after this long`, {
    positive: true,
  }).optional(),
};
const EVENT_KEYS = Object.keys(EVENT_SHAPE);

/** The fields an event's action needs, and those it must not have (the registry's `fields`). */
function checkEventFields(ev: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const bad = (field: string, message: string) => ctx.addIssue({ code: 'custom', message, path: [field] });
  const has = (field: string) => ev[field] !== undefined;
  const action = ev.action as string | undefined;
  if (action === 'zone-down' || action === 'zone-up') {
    for (const f of ['at', 'zone']) if (!has(f)) return bad(f, `required for action ${action}`);
    for (const f of ['replica', 'for', ...FAULT_FIELD_NAMES])
      if (has(f)) return bad(f, `not allowed with action ${action}`);
    return;
  }
  // The action passed the enum: a refinement runs only on a value whose fields all passed.
  const spec = faultActionSpec(action ?? '');
  const zoned = spec?.network === true || action === 'heal';
  for (const f of ['at', 'action']) if (!has(f)) return bad(f, 'required');
  if (has('zone') && !zoned)
    return bad(
      'zone',
      `only allowed with action zone-down, zone-up, ${FILE_NETWORK_ACTIONS.join(', ')} or heal`,
    );
  if (has('zone') && has('replica')) return bad('zone', 'give a replica or a zone, not both');
  if (!has('zone') && !has('replica')) return bad('replica', 'required');
  if (has('for') && spec?.network !== true)
    return bad('for', `only allowed with action ${FILE_NETWORK_ACTIONS.join(', ')} (action is ${action})`);
  if (has('jitter') && has('ms') && (ev.jitter as number) > (ev.ms as number))
    return bad('jitter', `must be at most ms (${String(ev.ms)}) (got ${String(ev.jitter)})`);
  const fields = spec?.fields ?? {};
  for (const f of FAULT_FIELD_NAMES)
    if (fields[f] === 'required' && !has(f)) return bad(f, `required for action ${action}`);
  for (const f of FAULT_FIELD_NAMES)
    if (fields[f] === undefined && has(f))
      return bad(f, `only allowed with action ${actionsTaking(f).join(' or ')} (action is ${action})`);
}

const planFileEventSchema = z
  .strictObject(EVENT_SHAPE, {
    error: (iss) =>
      iss.code === 'unrecognized_keys'
        ? `unknown field (allowed: ${EVENT_KEYS.join(', ')})`
        : got('must be a mapping with at, replica, action')(iss),
  })
  .superRefine(checkEventFields)
  .meta({ required: ['at', 'action'] })
  .describe('One fault; events are in time order');

const events = z.array(planFileEventSchema, { error: got('must be a list') }).superRefine((list, ctx) => {
  // At the line of the first one too many.
  if (list.length > MAX_EVENTS)
    ctx.addIssue({
      code: 'custom',
      message: `at most ${MAX_EVENTS} events (got ${list.length})`,
      path: [MAX_EVENTS],
      params: { field: 'events' },
    });
});

/** The plan file's schema for plans of at most `maxReplicas` replicas. */
export function planFileSchemaFor(maxReplicas: number) {
  const replicasWhat = `must be an integer from 1 to ${maxReplicas}`;
  const shape = {
    name,
    description: z
      .string({ error: got('must be a string') })
      .nullable()
      .optional(),
    duration: duration('total run length', { positive: true, max: MAX_DURATION_S }),
    warmup: duration('start excluded from every phase (default 10s)', { positive: false }).optional(),
    reference: duration('length of the ref phase before the first fault (default 30s)', {
      positive: true,
    }).optional(),
    replicas: z
      .number({ error: got(replicasWhat) })
      .superRefine((v, ctx) => {
        if (Number.isInteger(v) && v >= 1 && v <= maxReplicas) return;
        // A plan only a simulated cluster can run says so.
        const simOnly = v > maxReplicas && v <= MAX_SIM_REPLICAS;
        ctx.addIssue({
          code: 'custom',
          message: saying(replicasWhat, v),
          ...(simOnly ? { params: { hint: `up to ${MAX_SIM_REPLICAS} with --driver sim` } } : {}),
        });
      })
      .meta({ type: 'integer', minimum: 1, maximum: maxReplicas })
      .optional()
      .describe('K, the replicas the plan expects (default 5)'),
    weights: replicaMap(positiveNumber())
      .nullable()
      .optional()
      .describe('static weight per replica (relative capacity; default 1; --weights overrides)'),
    cpus: replicaMap(positiveNumber('a number of cores > 0'))
      .nullable()
      .optional()
      .describe("CPU quota per replica (cores) set before the run; others keep the cluster's"),
    zones: replicaMap(
      z
        .string({ error: got('must be a zone name (letters, digits, _ or -)') })
        .regex(ZONE_RE, { error: got('must be a zone name (letters, digits, _ or -)') }),
    )
      .nullable()
      .optional()
      .describe('zone per replica, every replica or none: sessions prefer their own zone'),
    events: events.nullable().optional(),
  };
  const keys = Object.keys(shape);
  return z
    .strictObject(shape, {
      error: (iss) =>
        iss.code === 'unrecognized_keys'
          ? `unknown field (allowed: ${keys.join(', ')})`
          : got('must be a mapping with name, duration and events')(iss),
    })
    .meta({
      title: 'plb fault plan',
      description: 'A fault plan for plb bench run --plan (YAML). plb plan validate checks it fully.',
    });
}

/** The plan file as published (schemas/plan.schema.json): K up to MAX_PLAN_REPLICAS. */
export const planFileSchema = planFileSchemaFor(MAX_PLAN_REPLICAS);
/** A plan file as written. */
export type PlanFile = z.input<typeof planFileSchema>;
/** A plan file checked field by field: durations in seconds, the name trimmed. */
export type CheckedPlanFile = z.output<typeof planFileSchema>;
