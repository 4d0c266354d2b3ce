// `plb report --json`: aggregated groups (median and IQR over repeats) and the strategy comparison.
import { z } from 'zod';

import type { Assignable } from './type-check.js';
import { mixSchema, serviceClassRecord, serviceClassSchema, statSchema } from './common.js';
import { aggregatedRoutersSchema, workerRowsSchema } from './routers-report.js';
import { groupEvidenceSchema, intervalSchema, templateIntervalsSchema } from './evidence.js';
import type { ClassPhaseStats } from './summary.js';

/** Per phase and class metrics the report shows, in display order. */
export const CLASS_METRICS = [
  'goodput',
  'p50',
  'p95',
  'p99',
  'goodputRetention',
  'p95Inflation',
  'lifetimeP50Ms',
  'lifetimeP95Ms',
  'queries',
  'errors',
  'sessionsOpened',
  'sessionsFailed',
  'sessionsCut',
  'admissionFailures',
  'connectP50Ms',
  'connectP95Ms',
] as const satisfies readonly (keyof ClassPhaseStats)[];
export type ClassMetric = (typeof CLASS_METRICS)[number];

export const FIG4_METRICS = ['goodput', 'p95', 'lifetimeP50Ms'] as const;
export type Fig4Metric = (typeof FIG4_METRICS)[number];

/**
 * /2: the comparison's p95Change is (p95 - base) / base, negative = lower latency (/1 had it the
 * other way). /3: groups carry `evidence` (95 % intervals and verdicts) and the report a `headline`.
 */
export const REPORT_SCHEMA_ID = 'plb-report/3';

// The metrics the report aggregates, one Stat each (the list is the report's own).
const classMetricsSchema = z.object(
  Object.fromEntries(CLASS_METRICS.map((m) => [m, statSchema])) as Record<
    (typeof CLASS_METRICS)[number],
    typeof statSchema
  >,
);

const aggregatedReplicaSchema = z.object({
  cpuMean: statSchema,
  p95Ms: statSchema.optional().describe('p95 of the queries it served; absent when no run recorded it'),
  unreachable: statSchema,
  overloaded: statSchema,
  slow: statSchema,
});

const aggregatedSignalsSchema = z.object({
  queryShareSpread: statSchema,
  cpuShareSpread: statSchema,
  weightDeviation: statSchema,
  silent: z.array(z.string()),
  silentRuns: z.number(),
});

const aggregatedPhaseSchema = z
  .object({
    name: z.string(),
    runs: z.number(),
    startS: statSchema,
    endS: statSchema,
    survivors: statSchema,
    classes: serviceClassRecord(classMetricsSchema),
    replicas: z.record(z.string(), aggregatedReplicaSchema),
    cpuMean: statSchema,
    cpuCv: statSchema,
    harnessCpu: statSchema,
    harnessLoopP99Ms: statSchema,
    hostBusy: statSchema
      .optional()
      .describe("the harness's host: fraction of its cores busy; absent when not sampled"),
    invalid: z.array(z.string()),
    signals: aggregatedSignalsSchema.optional().describe('the four balance signals; absent in older runs'),
  })
  // An id: defined once, referred to by phases and faultInterval.
  .meta({ id: 'AggregatedPhase' });

const aggregatedDetectionSchema = z.object({
  replica: z.string(),
  action: z.string(),
  occurrence: z.number(),
  delayMs: statSchema,
  missed: z.number(),
});

// The hang path and the session shares over a group's runs (report/hang-aggregate.ts).
const pooledStatSchema = statSchema
  .extend({
    mean: z.number().nullable(),
    lo: z.number().nullable().describe("95 % t interval of the runs' mean, 3 runs or more (else null)"),
    hi: z.number().nullable(),
  })
  .meta({
    id: 'PooledStat',
    description: 'Median and IQR over the repeats, and the mean with its 95 % interval',
  });

/** Per fault's hang path, the metrics pooled over the runs, in display order. */
export const HANG_METRICS = [
  'downMs',
  'checkerMs',
  'passiveMs',
  'sessions',
  'waitP50Ms',
  'waitMaxMs',
  'failed',
  'open',
  'shutdown',
  'connectsShut',
  'queryTimeouts',
  'connectsFailed',
] as const;
export type HangMetric = (typeof HANG_METRICS)[number];

const aggregatedHangSchema = z
  .object({
    replica: z.string(),
    action: z.string(),
    occurrence: z.number(),
    runs: z.number(),
    missed: z.number().describe('runs in which it was never marked down'),
    downVia: z.array(z.string()).describe('who marked it down first, over the runs'),
  })
  .extend(
    Object.fromEntries(HANG_METRICS.map((m) => [m, pooledStatSchema])) as Record<
      HangMetric,
      typeof pooledStatSchema
    >,
  );

const aggregatedShareSchema = z.object({
  phase: z.string(),
  degraded: z.array(z.string()).describe("'<replica> <action>' of the faults that keep K+ in force in it"),
  sessions: statSchema,
  replicas: z.record(
    z.string(),
    z.object({ share: pooledStatSchema, weightShare: statSchema, falseDowns: statSchema }),
  ),
});

const runGroupSchema = z.object({
  key: z.string(),
  settings: z
    .record(z.string(), z.string())
    .describe("the runs' settings (clients, think time, readings...), readable; unknown when not recorded"),
  settingsKey: z.string().describe('canonical text of the settings: runs are repeats only when it is equal'),
  settingsLabel: z
    .string()
    .describe("the settings this group differs in from the report's other groups ('' when none)"),
  plan: z.string(),
  strategy: z.string(),
  mix: mixSchema,
  mixLabel: z.string(),
  runIds: z.array(z.string()),
  complete: z.boolean(),
  problems: z.array(z.string()),
  excluded: z.array(z.string()),
  phases: z.array(aggregatedPhaseSchema),
  faultInterval: aggregatedPhaseSchema.optional().describe("the runs' fault intervals (phase named fault)"),
  detection: z.array(aggregatedDetectionSchema),
  detections: z.object({ down: statSchema, up: statSchema, unexplained: statSchema }),
  hangPath: z
    .object({ faults: z.array(aggregatedHangSchema), falseDowns: pooledStatSchema })
    .optional()
    .describe(
      'per fault that made a replica unreachable: detection, sessions on it, their waits; absent for older runs',
    ),
  sessionShare: z
    .array(aggregatedShareSchema)
    .optional()
    .describe("per phase: each replica's share of the new sessions and its weight's share"),
  templates: z
    .array(
      z.object({
        phase: z.string(),
        class: serviceClassSchema,
        template: z.string(),
        runs: z.number(),
        p50: statSchema,
        p95: statSchema,
        qps: statSchema,
        errors: statSchema,
        intervals: templateIntervalsSchema
          .optional()
          .describe("95 % intervals: one run's bootstrap, or over 3+ runs; absent for older runs"),
      }),
    )
    .optional()
    .describe('per phase, class and SQL template: p50/p95 ms, queries/s, errors over the runs'),
  routers: aggregatedRoutersSchema.optional(),
  workers: workerRowsSchema.optional(),
  evidence: groupEvidenceSchema.optional().describe('95 % intervals and verdicts from the per-second data'),
});

const comparisonRowSchema = z.object({
  phase: z.string(),
  cls: serviceClassSchema,
  p95: z.number().nullable(),
  baseP95: z.number().nullable(),
  p95Change: z.number().nullable().describe('(p95 - base) / base: negative = lower latency'),
  goodput: z.number().nullable(),
  baseGoodput: z.number().nullable(),
  goodputChange: z.number().nullable().describe('(goodput - base) / base: positive = more goodput'),
});

const strategyComparisonSchema = z.object({
  plan: z.string(),
  mixLabel: z.string(),
  settingsLabel: z.string().describe("the compared groups' differing settings ('' when none)"),
  strategy: z.string(),
  baseline: z.string(),
  runs: z.number(),
  baselineRuns: z.number(),
  rows: z.array(comparisonRowSchema),
});

const settingsDiffSchema = z.object({
  differ: z.array(z.object({ name: z.string(), values: z.array(z.string()) })),
  shared: z.array(z.object({ name: z.string(), value: z.string() })),
});

const comparisonSchema = z.object({
  baseline: z.string(),
  entries: z.array(strategyComparisonSchema),
  missingBaseline: z.array(z.string()),
});

const nullNum = z.number().nullable();

/**
 * What a published claim's 95 % interval says (report/paper/intervals.ts): inside the accepted
 * range, outside it, across its edge; `no interval` when none could be made (files written before
 * it existed call such a cell inconclusive, and still read: the values only grew); `not measured`
 * without runs or a value.
 */
export const claimVerdictSchema = z.enum([
  'reproduced',
  'contradicted',
  'inconclusive',
  'no interval',
  'not measured',
]);
export type ClaimVerdict = z.infer<typeof claimVerdictSchema>;

const paperFiguresSchema = z.object({
  plan: z.string(),
  settings: z.string().optional().describe('what sets these runs apart from the other groups of the report'),
  experiment: z.enum(['rq1', 'rq2', 'rq3']),
  phases: z.array(z.string()),
  rq1: z.array(
    z.object({
      mix: z.string(),
      strategy: z.string(),
      retention: statSchema,
      cpuMean: statSchema,
      cpuCv: statSchema,
    }),
  ),
  fig4: z
    .object({
      mix: z.string(),
      bars: z.array(
        z.object({
          phase: z.string(),
          cls: serviceClassSchema,
          metric: z.enum(FIG4_METRICS),
          strategy: z.string(),
          value: statSchema,
          interval: z
            .object({ value: z.number() })
            .extend(intervalSchema.shape)
            .nullable()
            .optional()
            .describe('the pooled value with its 95 % interval; null: none (absent in older reports)'),
        }),
      ),
    })
    .nullable(),
  fig5: z.array(
    z.object({
      mix: z.string(),
      cls: serviceClassSchema,
      phase: z.string(),
      plbP95: nullNum,
      rrP95: nullNum,
      change: nullNum.describe('(rr - plb) / rr: positive = plb has the lower p95'),
      interval: intervalSchema.nullable().optional().describe('95 % interval of change'),
    }),
  ),
  fig6: z.array(
    z.object({
      mix: z.string(),
      phase: z.string(),
      premium: nullNum.describe('(p95 - ref) / ref: positive = degradation'),
      freemium: nullNum,
      gapPp: nullNum.describe('freemium - premium, percentage points'),
      premiumInterval: intervalSchema.nullable().optional().describe('95 % interval of premium'),
      freemiumInterval: intervalSchema.nullable().optional().describe('95 % interval of freemium'),
    }),
  ),
  claims: z.array(
    z.object({
      id: z.string(),
      phase: z.string(),
      mix: z.string(),
      cls: z.enum(['premium', 'freemium', 'gap']),
      measure: z.enum(['goodputRatio', 'p95VsRr', 'p95VsRef', 'gapPp']),
      published: z.string(),
      measured: nullNum,
      interval: intervalSchema.nullable(),
      verdict: claimVerdictSchema,
      source: z.string().describe("the paper's sentence"),
    }),
  ),
});

const paperReportSchema = z.object({ rule: z.string(), experiments: z.array(paperFiguresSchema) });

export const reportJsonSchema = z
  .object({
    schema: z.literal(REPORT_SCHEMA_ID),
    quantileMethod: z.string(),
    baseline: z.string(),
    groups: z.array(runGroupSchema),
    settings: settingsDiffSchema.describe('the settings the groups differ in, and those they share'),
    comparison: comparisonSchema.nullable(),
    paper: paperReportSchema.optional().describe('the PLB paper figures, when some plans are paper-rq1/2/3'),
    headline: z
      .array(z.string())
      .optional()
      .describe('the question answered in a few lines, with intervals and verdicts'),
  })
  .meta({ title: 'plb report JSON', description: 'What plb report --json prints.' });

const _id: Assignable<ReportJson['schema'], typeof REPORT_SCHEMA_ID> = true;

/**
 * A report JSON read back as a `--compare-to` baseline: only what the comparison reads, so a
 * plb-report/1 file written before later fields were added (the committed nightly baseline) still
 * loads, while a file whose groups, phases or stats are malformed is refused naming the field.
 */
export const reportBaselineSchema = z.object({
  // The groups read here mean the same in /1 and /2 (only the comparison's sign changed).
  schema: z.enum(['plb-report/1', 'plb-report/2', REPORT_SCHEMA_ID]),
  groups: z.array(
    z.object({
      key: z.string(),
      runIds: z.array(z.string()),
      phases: z.array(
        z.object({
          name: z.string(),
          classes: z.object({
            premium: z.record(z.string(), statSchema).optional(),
            freemium: z.record(z.string(), statSchema).optional(),
          }),
          cpuMean: statSchema.optional(),
          cpuCv: statSchema.optional(),
        }),
      ),
      evidence: groupEvidenceSchema.optional(),
    }),
  ),
});

/** A group of a baseline: every RunGroup is one. */
export type BaselineGroup = z.infer<typeof reportBaselineSchema>['groups'][number];
const _baselineGroup: Assignable<RunGroup, BaselineGroup> = true;
/** Median and interquartile range of the non-null values of one metric across repeats. */
export type Stat = z.infer<typeof statSchema>;
export type AggregatedReplica = z.infer<typeof aggregatedReplicaSchema>;
export type AggregatedPhase = z.infer<typeof aggregatedPhaseSchema>;
export type AggregatedDetection = z.infer<typeof aggregatedDetectionSchema>;
export type PooledStat = z.infer<typeof pooledStatSchema>;
export type AggregatedHang = z.infer<typeof aggregatedHangSchema>;
export type AggregatedShare = z.infer<typeof aggregatedShareSchema>;
export type RunGroup = z.infer<typeof runGroupSchema>;
export type ComparisonRow = z.infer<typeof comparisonRowSchema>;
export type StrategyComparison = z.infer<typeof strategyComparisonSchema>;
export type Comparison = z.infer<typeof comparisonSchema>;
export type PaperReport = z.infer<typeof paperReportSchema>;
/** plb-report/2: comparison p95Change is (p95 - base) / base (plb-report/1 had the opposite sign). */
export type ReportJson = z.infer<typeof reportJsonSchema>;
