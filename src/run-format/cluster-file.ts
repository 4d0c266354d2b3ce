// A cluster file (`plb bench run --driver external --cluster-file f.yaml`): a cluster plb did not
// make, and the commands (hooks) that inject each fault on it. cluster/external/file.ts reads it.
import { z } from 'zod';
import { FAULT_ACTION_SPECS, FAULT_ACTIONS, type HookAction } from './fault-actions.js';

/** A duration: seconds as a number, or a string like `90s`, `500ms`, `2m`. */
const duration = z.union([z.number().positive(), z.string().min(1)]);

const serverSchema = z
  .strictObject({
    host: z.string().min(1).describe('host name or address the bench connects to'),
    port: z.number().int().min(1).max(65535).default(5432),
  })
  .describe('Where one server listens');

/** One command, run without a shell: its argv, and optionally its own timeout. */
const hookSchema = z
  .union([
    z.array(z.string()).min(1),
    z.strictObject({ run: z.array(z.string()).min(1), timeout: duration.optional() }),
  ])
  .describe(
    'argv of a command run without a shell ({replica}, {index}, {host}, {port} and, for throttle, {cpus} are substituted), or { run: argv, timeout }',
  );

/** The fault actions that run a command (the registry's `hook`). */
const HOOK_ACTIONS = FAULT_ACTIONS.filter((a): a is HookAction => FAULT_ACTION_SPECS[a].hook);
/** The hooks: one per such action, and `cpu`: a command that prints cumulative CPU seconds. */
export const HOOK_NAMES: readonly HookName[] = [...HOOK_ACTIONS, 'cpu'];
export type HookName = HookAction | 'cpu';

const hooksSchema = z
  .strictObject(
    Object.fromEntries(HOOK_NAMES.map((n) => [n, hookSchema.optional()])) as Record<
      HookName,
      z.ZodOptional<typeof hookSchema>
    >,
  )
  .describe(
    `${HOOK_ACTIONS.join('/')}: commands that inject the action; cpu: prints the cumulative CPU seconds the replica used (optional)`,
  );

const replicaSchema = serverSchema.extend({
  hooks: hooksSchema.optional().describe("this replica's hooks (they override the shared ones)"),
  zone: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/)
    .optional()
    .describe('`plb proxy`: the zone of this replica (give every replica one, or none)'),
  weight: z
    .number()
    .positive()
    .max(1000)
    .optional()
    .describe('`plb proxy`: relative capacity (default 1); wlc and plb weigh by it'),
});

const passwordSchema = z
  .union([
    z.strictObject({ env: z.string().min(1).describe('name of the environment variable') }),
    z.strictObject({
      file: z.string().min(1).describe('file holding the password (relative: to this file)'),
    }),
  ])
  .describe('where the password is read from; never the password itself');

export const clusterFileSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,39}$/)
      .optional()
      .describe('name of the cluster (run records, lock); default: the file name'),
    user: z.string().min(1),
    dbname: z.string().min(1),
    password: passwordSchema.optional(),
    primary: serverSchema,
    replicas: z
      .record(z.string().regex(/^r[1-9][0-9]*$/), replicaSchema)
      .describe('r1..rK, as plans name them'),
    prepare: z
      .boolean()
      .default(false)
      .describe(
        'true: the bench may create and load its dataset tables (plb_items, plb_meta) on the primary',
      ),
    cpus: z
      .number()
      .positive()
      .default(1)
      .describe("cores of each replica: the cpu hook's CPU seconds are shown as a fraction of them"),
    hookTimeout: duration.default('60s').describe('timeout of a hook without its own'),
    hooks: hooksSchema.optional().describe('hooks of every replica'),
  })
  .meta({
    title: 'plb cluster file',
    description: 'An external cluster for `plb bench run --driver external --cluster-file <file>`.',
  });

export type ClusterFile = z.infer<typeof clusterFileSchema>;
export type HookSpec = z.infer<typeof hookSchema>;

/** What config.json records of an external cluster: no password, ever. */
export const externalConfigSchema = z
  .object({
    file: z.string().describe('path of the cluster file'),
    servers: z.record(z.string(), z.string()).describe('server id -> DSN without password'),
    prepare: z.boolean(),
    cpuMeasured: z.boolean().describe('false: no cpu hooks, replica CPU is not measured'),
    hooks: z
      .record(z.string(), z.record(z.string(), z.array(z.string())))
      .describe('replica -> action -> argv (placeholders substituted)'),
  })
  .describe('--driver external: the cluster file and what it resolved to');
export type ExternalConfig = z.infer<typeof externalConfigSchema>;
