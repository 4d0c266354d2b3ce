// The intervals and verdicts of `plb report --json` (plb-report/3): per group, phase and class.
import { z } from 'zod';
import { serviceClassRecord } from './common.js';

const METRICS = ['p50', 'p95', 'p99', 'goodput', 'lifetime'] as const;
const perMetric = <T extends z.ZodType>(s: T) =>
  z.object(Object.fromEntries(METRICS.map((m) => [m, s])) as Record<(typeof METRICS)[number], T>);

export const intervalSchema = z
  .object({ lo: z.number(), hi: z.number() })
  .meta({ id: 'Interval', description: 'A 95 % interval' });

/** A template's intervals in summary.json (the class figures' method over its seconds). */
export const templateIntervalsSchema = z.object({
  block: z.number().nullable().describe('block length, s; null without seconds'),
  p50: intervalSchema.nullable(),
  p95: intervalSchema.nullable(),
  note: z.string().optional().describe('why there is no interval'),
});

const estimateSchema = z
  .object({ value: z.number().nullable(), lo: z.number().nullable(), hi: z.number().nullable() })
  .meta({ id: 'Estimate', description: 'A value with its 95 % interval (lo, hi null: no interval)' });

const changeSchema = z
  .object({
    delta: z.number().nullable().describe('(value - reference) / reference'),
    lo: z.number().nullable(),
    hi: z.number().nullable(),
    verdict: z.enum(['better', 'worse', 'no difference detected', 'no interval']),
    detectable: z.number().nullable().describe('smallest |delta| detectable with 80 % power at 5 %'),
    note: z.string().optional(),
  })
  .meta({ id: 'Change', description: 'A change with its 95 % interval and verdict' });

const cellEvidenceSchema = z.object({
  seconds: z.number(),
  block: z.number().nullable(),
  metrics: perMetric(estimateSchema),
  perRun: z.array(perMetric(estimateSchema).extend({ runId: z.string() })).optional(),
  overRuns: perMetric(estimateSchema).optional(),
  vsRef: perMetric(changeSchema).optional(),
  vsBaseline: perMetric(changeSchema).optional(),
  note: z.string().optional(),
});

export const groupEvidenceSchema = z.object({
  method: z.string(),
  baselineKey: z.string().optional(),
  phases: z.array(z.object({ name: z.string(), classes: serviceClassRecord(cellEvidenceSchema) })),
  invalid: z.array(z.string()),
  notes: z.array(z.string()),
});

export type Estimate = z.infer<typeof estimateSchema>;
export type Change = z.infer<typeof changeSchema>;
export type Verdict = Change['verdict'];
export type CellEvidence = z.infer<typeof cellEvidenceSchema>;
export type GroupEvidence = z.infer<typeof groupEvidenceSchema>;
