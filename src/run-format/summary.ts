// summary.json: the phase tables of one run (src/metrics/types.ts RunSummary is the type the code uses).
import { z } from 'zod';

import { queueingStrategiesText } from '../router/strategy-registry.js';
import { mixSchema, serviceClassRecord } from './common.js';
import { templateIntervalsSchema } from './evidence.js';

export const SUMMARY_SCHEMA_VERSION = 1;

/** The distribution signals a phase can alert on (metrics/signals.ts computes them). */
export const SIGNAL_NAMES = ['queryShareSpread', 'cpuShareSpread', 'silent', 'weightDeviation'] as const;
export type SignalName = (typeof SIGNAL_NAMES)[number];

const ms = z.number().nullable();
const QUEUE_WAIT = `admission queue wait; only with ${queueingStrategiesText()}`;

const classPhaseStatsSchema = z.object({
  p50: ms,
  p95: ms,
  p99: ms,
  queries: z.number(),
  errors: z.number(),
  goodput: z.number(),
  goodputRetention: z.number().nullable(),
  p95Inflation: z.number().nullable(),
  sessionsOpened: z.number(),
  sessionsClosed: z.number(),
  sessionsFailed: z.number(),
  sessionsCut: z.number().optional().describe('absent in older runs'),
  admissionFailures: z.number(),
  lifetimeP50Ms: ms,
  lifetimeP95Ms: ms,
  connectP50Ms: ms.optional().describe('absent in older runs'),
  connectP95Ms: ms.optional().describe('absent in older runs'),
  queueP50Ms: ms.optional().describe(QUEUE_WAIT),
  queueP95Ms: ms.optional().describe(QUEUE_WAIT),
  queueTimeouts: z.number().optional().describe('sessions whose admission wait timed out'),
});

const replicaPhaseStatsSchema = z.object({
  up: z.boolean(),
  cpuMean: z.number().nullable(),
  sessionsOpened: z.number(),
  queries: z.number(),
  unreachable: z.number().optional(),
  overloaded: z.number().optional(),
  slow: z.number().optional(),
  lag: z
    .object({
      p50Ms: z.number().nullable(),
      maxMs: z.number().nullable(),
      bytesP50: z.number().nullable(),
      bytesMax: z.number().nullable(),
      samples: z.number(),
    })
    .optional()
    .describe(
      "replication lag over the phase (--write-rate runs only): the standby's now() - last replayed commit, in ms, and the primary's WAL byte distance to its replay position",
    ),
  p50Ms: ms.optional().describe('queries it served, every class; absent in older runs and past 64 replicas'),
  p95Ms: ms.optional().describe('queries it served, every class; absent in older runs and past 64 replicas'),
  longestQuietS: z
    .number()
    .optional()
    .describe('longest stretch without a new session; absent in older runs'),
  weight: z.number().optional().describe('configured weight (router); absent in older runs'),
});

const phaseSignalsSchema = z.object({
  queryShareSpread: z.number().nullable().describe('max/mean of queries over the replicas up'),
  cpuShareSpread: z.number().nullable().describe('max/mean of CPU over the replicas up'),
  silent: z.array(z.string()).describe('replicas up with no new session for the silent window'),
  weightRatio: z
    .record(z.string(), z.number().nullable())
    .describe('share of new sessions / share of weight'),
  weightDeviation: z.number().nullable().describe('worst |weightRatio - 1|'),
  alerts: z.array(z.enum(SIGNAL_NAMES)),
});

const harnessPhaseStatsSchema = z.object({
  cpuMean: z.number().nullable(),
  cpuMax: z.number().nullable(),
  loopP50Ms: ms,
  loopP99Ms: ms,
  loopMaxMs: ms,
  saturated: z.boolean(),
  host: z
    .object({
      busyMean: z.number().describe('fraction of all the host cores busy, mean of the seconds'),
      busyMax: z.number(),
      stealMean: z.number().describe('fraction of all the host cores taken by the hypervisor'),
    })
    .optional()
    .describe("the harness's host (/proc/stat); absent in simulated runs and older runs"),
});

const phaseSummarySchema = z
  .object({
    name: z.string(),
    startS: z.number(),
    endS: z.number(),
    survivors: z.number(),
    classes: serviceClassRecord(classPhaseStatsSchema),
    replicas: z.record(z.string(), replicaPhaseStatsSchema),
    cpuMean: z.number().nullable(),
    cpuCv: z.number().nullable(),
    harness: harnessPhaseStatsSchema.optional(),
    invalid: z.string().optional(),
    signals: phaseSignalsSchema.optional().describe('the four balance signals; absent in older runs'),
    crossZone: z
      .object({ sessions: z.number(), share: z.number().nullable() })
      .optional()
      .describe("with zones: sessions opened, and the share on a replica outside their client's zone"),
  })
  // An id: defined once, referred to by phases and faultInterval.
  .meta({ id: 'PhaseSummary' });

const routerClassSchema = z.object({
  p95: ms,
  goodput: z.number().describe('completed queries per second of the phase'),
  queries: z.number(),
  errors: z.number(),
});
const routerPhaseSchema = z.object({
  phase: z.string().describe("a phase's name, or fault (the summary's faultInterval)"),
  premium: routerClassSchema,
  freemium: routerClassSchema,
});
const routersSummarySchema = z
  .object({
    count: z.number(),
    view: z.string(),
    perRouter: z.array(
      z.object({
        router: z.number().describe('the instance, 0..count-1'),
        sessions: serviceClassRecord(z.number()).describe('sessions opened by its clients'),
        borrowFlips: z.number().describe('its borrows, returns and reclaims over the run'),
        phases: z.array(routerPhaseSchema),
      }),
    ),
    disagreement: z
      .array(
        z.object({
          phase: z.string(),
          seconds: z.number(),
          meanReplicas: z.number().nullable(),
          maxReplicas: z.number().nullable(),
          borrowFlips: z.number().describe("every router's borrows, returns and reclaims in the phase"),
        }),
      )
      .describe(
        'per phase: replicas on which two routers differed, sampled each second (role, borrowed or down)',
      ),
  })
  .describe("--routers N > 1: each application instance's router and its clients; absent with one router");

const workersSummarySchema = z
  .array(
    z.object({
      worker: z.number().describe('0..workers-1: it ran instances i with i mod workers = worker'),
      pid: z.number().nullable(),
      instances: z.array(z.number()),
      queries: serviceClassRecord(z.number()).describe('queries it completed'),
      errors: serviceClassRecord(z.number()).describe('queries that failed'),
      sessions: serviceClassRecord(z.number()).describe('sessions its clients opened'),
      p95Ms: serviceClassRecord(z.number().nullable()).describe('query latency p95 over the run'),
      seconds: z.number().describe('seconds with at least one value from it'),
      perSecond: serviceClassRecord(z.array(z.number())).describe(
        'queries it completed in each second of the plan (index: the second)',
      ),
      exit: z
        .string()
        .describe("'done' (finished its share), or how it ended early: 'exit <code>', 'signal <name>'"),
    }),
  )
  .describe(
    '--workers W: the figures of each worker process, its values merged into the run (HDR add); absent with one process',
  );

const detectionRecordSchema = z.object({
  replica: z.string(),
  action: z.string(),
  injectedMs: z.number(),
  detectedMs: z.number().nullable(),
  delayMs: z.number().nullable(),
});

const detectionCountsSchema = z.object({
  down: z.number(),
  up: z.number(),
  unexplained: z.number(),
});

// The hang path of each fault that made a replica unreachable (metrics/summary/hang-path.ts).
const hangFaultSchema = z.object({
  replica: z.string(),
  action: z.string(),
  injectedMs: z.number(),
  untilMs: z
    .number()
    .describe("the next change of the replica's state (its heal, rejoin, unpause) or the end of the run"),
  downMs: ms.describe('injection to the first down, whoever marked it (null: never)'),
  downVia: z
    .string()
    .nullable()
    .describe("who marked it down first: 'health', 'session', 'connect', 'oracle'"),
  checkerMs: ms.describe('injection to down by the health checker (null: not by it)'),
  passiveMs: ms.describe("injection to the first failure a session's query or connect met on it"),
  sessions: z.number().describe('sessions open on it at injection'),
  waitP50Ms: ms.describe('injection until each of them got an error or left (capped at untilMs)'),
  waitMaxMs: ms,
  failed: z.number().describe('of them: ended by an error (shut down ones included)'),
  finished: z.number(),
  cut: z.number(),
  open: z.number().describe('of them: still open at untilMs'),
  shutdown: z.number().describe('sessions ended by --shutdown-sessions when it was marked down'),
  connectsShut: z
    .number()
    .optional()
    .describe('connects to it under way that --shutdown-sessions failed when it was marked down'),
  queryErrors: z.number().describe('queries on it that failed in [injection, untilMs)'),
  queryTimeouts: z.number().describe("of them: failed by the client's query timeout"),
  connectsFailed: z.number().describe('connects to it that failed in [injection, untilMs)'),
});

const sessionShareSchema = z.object({
  phase: z.string(),
  sessions: z.number().describe('sessions opened in the phase, every replica'),
  degraded: z
    .array(z.object({ replica: z.string(), action: z.string() }))
    .describe('replicas a fault that keeps K+ (delay, loss, bandwidth, throttle...) was in force on'),
  replicas: z.record(
    z.string(),
    z.object({
      share: z.number().nullable().describe('its share of the sessions opened in the phase'),
      weightShare: z.number().nullable().describe("its weight's share over the replicas up (null: not up)"),
      falseDowns: z.number().describe('down detections of it in the phase that no fault explains'),
    }),
  ),
});

const templatePhaseStatsSchema = z.object({
  phase: z.string(),
  class: z.enum(['premium', 'freemium']),
  template: z.string(),
  queries: z.number(),
  errors: z.number(),
  p50: z.number().nullable(),
  p95: z.number().nullable(),
  seconds: z.number(),
  intervals: templateIntervalsSchema
    .optional()
    .describe('95 % intervals of p50 and p95 (block bootstrap over seconds); absent in older runs'),
});

export const summarySchema = z
  .object({
    schemaVersion: z.literal(SUMMARY_SCHEMA_VERSION),
    runId: z.string(),
    strategy: z.string(),
    plan: z.string(),
    mix: mixSchema,
    clients: z.number(),
    seed: z.number(),
    complete: z.boolean(),
    startedAt: z.string(),
    durationS: z.number(),
    phases: z.array(phaseSummarySchema),
    faultInterval: phaseSummarySchema
      .optional()
      .describe(
        'first down until every replica is back (or the end), as a phase named fault; absent without a down',
      ),
    detection: z.array(detectionRecordSchema),
    detectionCounts: detectionCountsSchema.optional(),
    recoveryTail: z
      .array(
        z.object({
          phase: z.string(),
          atS: z.number(),
          premiumS: z.number().nullable(),
          freemiumS: z.number().nullable(),
        }),
      )
      .optional()
      .describe('per rejoin: seconds until each class p95 is back within 10 % of ref (null: not in the run)'),
    errors: z.array(z.string()).optional(),
    rebuilt: z.boolean().optional(),
    hangPath: z
      .object({
        faults: z.array(hangFaultSchema),
        falseDowns: z.number().describe('down detections no fault explains (a slow replica taken for dead)'),
      })
      .optional()
      .describe(
        'per fault that made a replica unreachable: detection, the sessions on it and their waits; absent in older runs',
      ),
    sessionShare: z
      .array(sessionShareSchema)
      .optional()
      .describe(
        "per phase: each replica's share of the new sessions next to its weight's; absent in older runs",
      ),
    templates: z
      .array(templatePhaseStatsSchema)
      .optional()
      .describe(
        'per phase, class and SQL template: queries, errors, p50/p95 ms; absent in older and rebuilt runs',
      ),
    routers: routersSummarySchema.optional(),
    workers: workersSummarySchema.optional(),
  })
  .meta({ title: 'plb summary.json', description: 'The phase tables of one run (runs/<id>/summary.json).' });

// The interfaces in metrics/types.ts stay the types the code uses; these fail to compile on drift.
export type ClassPhaseStats = z.infer<typeof classPhaseStatsSchema>;
export type ReplicaPhaseStats = z.infer<typeof replicaPhaseStatsSchema>;
/** The client process over a phase: did the harness keep up? */
export type HarnessPhaseStats = z.infer<typeof harnessPhaseStatsSchema>;
export type PhaseSummary = z.infer<typeof phaseSummarySchema>;
export type DetectionRecord = z.infer<typeof detectionRecordSchema>;
/** Every 'detect' event of a run, and those no injected fault explains (false detections). */
export type DetectionCounts = z.infer<typeof detectionCountsSchema>;
export type RunSummary = z.infer<typeof summarySchema>;
export type PhaseSignals = z.infer<typeof phaseSignalsSchema>;
export type HangFault = z.infer<typeof hangFaultSchema>;
export type HangPath = NonNullable<RunSummary['hangPath']>;
export type SessionShare = z.infer<typeof sessionShareSchema>;
export type RoutersSummary = z.infer<typeof routersSummarySchema>;
export type WorkersSummary = z.infer<typeof workersSummarySchema>;
