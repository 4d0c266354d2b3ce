/**
 * config.json: the resolved configuration of one run, its seed and the versions and machine it
 * ran on. Every field is optional to a reader: plb of earlier versions wrote fewer of them, and a
 * run can be written by a library caller with only some; what is there must have its type.
 */
import { z } from 'zod';
import { templateSetSchema } from './workload-file.js';
import { clusterSpecSchema } from './cluster-record.js';
import { externalConfigSchema } from './cluster-file.js';
import { mixSchema, serviceClassRecord } from './common.js';
import { faultPlanSchema } from './plan.js';
import { QUEUEING_STRATEGY_NAMES } from '../router/strategy-registry.js';

/** Version of the config.json format; stamped by the run writer. */
export const CONFIG_SCHEMA_VERSION = 1;

export const environmentSchema = z
  .object({
    node: z.string().describe('process.version of the client'),
    platform: z.string(),
    arch: z.string(),
    kernel: z.string().describe('os.release() of the machine that ran the client'),
    cpu: z.object({ model: z.string(), count: z.number() }),
    postgres: z.string().nullable().describe('server_version of the primary (null: not known)'),
    image: z
      .object({ ref: z.string(), id: z.string().nullable(), digests: z.array(z.string()) })
      .nullable()
      .describe('docker driver: the image the primary runs, its id and repo digests'),
    gitCommit: z.string().nullable().describe('HEAD of the plb checkout (null: not a git checkout)'),
  })
  .describe('Where the run ran');
export type RunEnvironment = z.infer<typeof environmentSchema>;

const classWorkloadSchema = z.object({
  queriesPerSession: z.number(),
  thinkTimeMs: z.number(),
  queryWeights: z.object({ point: z.number(), range: z.number(), scan: z.number() }),
});

const workloadSpecSchema = z.object({
  model: z.enum(['closed', 'open']),
  clients: z.number(),
  rate: z.number(),
  mix: mixSchema,
  rampUpS: z.number().nullable(),
  datasetRows: z.number(),
  queryTimeoutMs: z.number(),
  connectTimeoutMs: z.number(),
  maxOpenSessions: z.number(),
  classes: serviceClassRecord(classWorkloadSchema),
  writeRate: z
    .number()
    .optional()
    .describe('--write-rate: rows/s written on the primary (absent or 0: read-only)'),
  maxSessionLifetimeMs: z
    .number()
    .optional()
    .describe('--max-session-lifetime: a session ends after this long (absent: none)'),
  onFailure: z
    .literal('leave')
    .optional()
    .describe('--on-failure leave: a client leaves after a failed session or connect (absent: it retries)'),
  templates: templateSetSchema.optional(),
});

const healthOptionsSchema = z.object({
  intervalMs: z.number(),
  timeoutMs: z.number(),
  fall: z.number(),
  rise: z.number(),
  hangMs: z.number(),
});

export const roleVectorSchema = z.object({ premium: z.number(), mixed: z.number(), freemium: z.number() });
export const borrowThresholdsSchema = z.object({
  enabled: z.boolean(),
  pressureRatio: z.number(),
  returnRatio: z.number(),
  minLoad: z.number(),
});

export const readingsSchema = z
  .object({
    donors: z.enum(['above-target', 'mixed-first']),
    canonicalize: z.enum(['borrowed', 'all']),
    reference: z.enum(['literal', 'floored']),
    repair: z.enum(['target', 'none', 'shared']),
    hold: z.enum(['none', 'dwell']).default('none').describe('absent in older runs: none'),
    floors: z.enum(['mixed', 'classes']).default('mixed').describe('absent in older runs: mixed'),
    lend: z.enum(['always', 'normal']).default('always').describe('absent in older runs: always'),
    reclaim: z.enum(['none', 'premium']).default('none').describe('absent in older runs: none'),
  })
  .describe("plb: the readings of the paper's repair rules the router applied (--readings)");

const sloTargetSchema = z.union([
  z.object({ kind: z.literal('absolute'), ms: z.number() }),
  z.object({ kind: z.literal('relative'), factor: z.number() }),
]);

export const admissionSchema = z
  .object({
    limits: z.object({
      mode: z.enum(['fixed', 'gradient']),
      limit: z.number(),
      min: z.number().optional(),
      max: z.number().optional(),
      tolerance: z.number().optional(),
      intervalMs: z.number().optional(),
      smoothing: z.number().optional(),
    }),
    queue: z.object({ capacity: z.number(), timeoutMs: z.number() }),
    guard: z
      .object({
        target: sloTargetSchema,
        minShare: z.number().optional(),
        windowMs: z.number().optional(),
        referenceWindowMs: z.number().optional(),
        intervalMs: z.number().optional(),
        step: z.number().optional(),
        hysteresis: z.number().optional(),
      })
      .optional(),
    premiumReserve: z.number().optional(),
    freemiumReserve: z.number().optional(),
    classBlind: z.boolean().optional(),
  })
  .describe(
    `${QUEUEING_STRATEGY_NAMES.join(', ')}: the per-replica session limits, the queue and the SLO guard (--admission-*)`,
  );

const viaSchema = z
  .object({
    label: z.string(),
    endpoints: z.object({ premium: z.string(), freemium: z.string() }),
  })
  .describe('--strategy via: the external balancer (strategy via:<label>) and its host:port per class');

/** What each application instance's router knows of the sessions (--router-view). */
export const ROUTER_VIEWS = ['local', 'global', 'replica'] as const;
export type RouterView = (typeof ROUTER_VIEWS)[number];
/** How sessions are given to instances: round robin over the seeded client (open: session) order. */
export const ROUTER_ASSIGNMENT = 'round-robin';

const routersSchema = z
  .object({
    count: z.number().describe('--routers: application instances, each with its own router'),
    view: z
      .enum(ROUTER_VIEWS)
      .describe(
        "--router-view: local (a router counts its own sessions), global (one router state all instances share), replica (every --view-interval each router reads the replicas' per-class session counts)",
      ),
    assignment: z
      .literal(ROUTER_ASSIGNMENT)
      .describe(
        'closed model: client i of the seeded client order belongs to instance i mod count; open model: session n to n mod count',
      ),
    viewIntervalMs: z
      .number()
      .describe("--view-interval: ms between reads of the replicas' counts (replica view)"),
    workers: z
      .number()
      .optional()
      .describe(
        '--workers: processes the routers and their sessions ran in (worker w: instances i with i mod workers = w); absent: one process',
      ),
    workerIndex: z
      .number()
      .optional()
      .describe(
        '--worker-index: this run is the part of one node, worker workerIndex of workers (plb bench merge joins the parts); absent: every worker',
      ),
    startAt: z.string().optional().describe("--start-at: the plan's t0 the nodes shared (ISO time)"),
  })
  .describe('absent in older runs: one router that sees every session (count 1, view local)');
export type RoutersConfig = z.infer<typeof routersSchema>;

const mergedSchema = z
  .object({
    parts: z
      .array(
        z.object({
          workerIndex: z.number(),
          dir: z.string().describe('the part run directory as given to plb bench merge'),
          runId: z.string(),
          complete: z.boolean(),
        }),
      )
      .describe('the nodes merged, by worker index'),
    missing: z.array(z.number()).describe('worker indexes with no part (the merged run is incomplete)'),
  })
  .describe('plb bench merge: this run joins the run directories of --worker-index nodes (absent: one run)');

// Every field of config.json; configSchema below keeps whatever else a writer recorded.
const configFields = z.object({
  schemaVersion: z.literal(CONFIG_SCHEMA_VERSION).optional().describe('absent in older runs'),
  plbVersion: z.string().optional().describe('version of plb that made the run'),
  environment: environmentSchema.optional(),
  node: z.string().optional().describe('older runs: Node version (now environment.node)'),
  driver: z.enum(['docker', 'local', 'sim', 'external']).optional(),
  external: externalConfigSchema.optional(),
  cpusEnforced: z.boolean().optional().describe("whether the driver enforced the replicas' CPU quotas"),
  simCalibration: z
    .looseObject({ path: z.string(), contents: z.looseObject({ version: z.literal(1) }) })
    .optional()
    .describe('--driver sim: the calibration the simulated replicas used'),
  simCpu: z
    .literal('pooled')
    .optional()
    .describe(
      "--sim-cpu pooled: a down or paused replica's quota went to those up (absent: each its own quota)",
    ),
  strategy: z.string().optional(),
  seed: z.number().optional(),
  plan: faultPlanSchema.extend({ path: z.string().optional() }).optional(),
  mix: mixSchema.optional(),
  clients: z.number().optional(),
  workload: workloadSpecSchema.optional(),
  health: healthOptionsSchema.optional(),
  oracle: z.boolean().optional(),
  shutdownSessions: z
    .boolean()
    .optional()
    .describe(
      "--shutdown-sessions: a replica marked down has its sessions ended at once (HAProxy's on-marked-down shutdown-sessions); absent in older runs: off",
    ),
  reference: roleVectorSchema.optional(),
  partition: mixSchema.optional(),
  slowStartMs: z.number().optional(),
  borrowing: serviceClassRecord(borrowThresholdsSchema).optional(),
  readings: readingsSchema
    .optional()
    .describe(
      'absent in older runs: they used donors=above-target canonicalize=borrowed reference=floored repair=target',
    ),
  replicaCpus: z.number().optional(),
  replicas: z.array(z.string()).optional(),
  repeat: z.number().optional(),
  cluster: clusterSpecSchema.optional(),
  calibration: z.looseObject({ thinkTimeMs: z.number() }).optional(),
  workloadFile: z.string().optional().describe('--workload: the workload file the classes came from'),
  lagWeights: z
    .object({ lowMs: z.number(), highMs: z.number(), floor: z.number() })
    .optional()
    .describe('--lag-weights: replica weights follow replication lag (absent: off)'),
  balance: z
    .object({
      weights: z.record(z.string(), z.number()).optional(),
      cpus: z.record(z.string(), z.number()).optional(),
      zones: z.record(z.string(), z.string()).optional(),
      clientZones: z.record(z.string(), z.number()).optional(),
      zoneSpill: z.number().optional(),
      maxLagMs: z.number().optional(),
    })
    .optional()
    .describe(
      'static weights (plan weights: and --weights), per-replica CPU quotas, zones, --client-zones, --zone-spill, --max-lag (absent: none of them)',
    ),
  via: viaSchema.optional(),
  admission: admissionSchema.optional(),
  routers: routersSchema.optional(),
  merged: mergedSchema.optional(),
});

// Loose: a run keeps whatever else its writer recorded (calibration, fixture marks...).
export const configSchema = configFields.loose().meta({
  title: 'plb config.json',
  description: 'The resolved configuration, seed and environment of one run (runs/<id>/config.json).',
});

export type RunConfig = z.infer<typeof configSchema>;

type ConfigFields = z.infer<typeof configFields>;
/** What every bench run has, whoever resolved it (a bench's flags, a library caller). */
type BenchRequired =
  | 'strategy'
  | 'seed'
  | 'plan'
  | 'workload'
  | 'health'
  | 'oracle'
  | 'reference'
  | 'partition'
  | 'slowStartMs'
  | 'replicaCpus';
/**
 * The one configuration of a bench run: resolved once from the flags (bench/options/resolve.ts), given to
 * the runner, which routes, runs and writes it as config.json as it is (adding only what it
 * learns itself: the replica ids). config.json's own type, with the fields every run has required.
 */
export type BenchConfig = Required<Pick<ConfigFields, BenchRequired>> & Omit<ConfigFields, BenchRequired>;

export type ClassWorkload = z.infer<typeof classWorkloadSchema>;
export type WorkloadSpec = z.infer<typeof workloadSpecSchema>;
export type HealthOptions = z.infer<typeof healthOptionsSchema>;
/** The query templates of a workload. */
export type QueryKind = keyof ClassWorkload['queryWeights'];
