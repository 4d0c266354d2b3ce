// `plb paper map`: the grid a user writes (plans/paper/map/*.yaml) and the map.json it produces.
// A cell is one workload setting; at it the map runs RQ2 (plb and rr) and RQ3 (plb) on the
// simulator and gives each published claim a verdict from its 95 % interval.
import { z } from 'zod';
import { claimVerdictSchema } from './report.js';

/** A string of a given shape; the message says which (zod's regex issue says only "invalid"). */
const shaped = (re: RegExp, message: string) => z.string().refine((v) => re.test(v), { message });
const mixText = shaped(/^\d+:\d+$/, 'must be premium:freemium like 25:75');
const nameText = shaped(/^[a-z0-9][a-z0-9-]*$/, 'must be lower-case letters, digits and dashes');

/** The settings of one cell: the map's axes. */
const mapSettingsSchema = z
  .object({
    targetCpu: z.number().min(0.05).max(0.95).describe('reference-phase replica CPU (--target-cpu)'),
    queriesPerSession: z.number().int().min(1).max(100_000).describe('--queries-per-session'),
    mix: mixText.describe('premium:freemium share (--mix)'),
    reference: shaped(/^\d+:\d+:\d+$/, 'must be premium:mixed:freemium like 2:1:2').describe(
      'reference split (--reference)',
    ),
    readings: z.string().min(1).describe('plb readings (--readings)'),
    model: z.enum(['closed', 'open']).describe('arrival model (--model)'),
    rate: z.number().positive().max(100_000).optional().describe('open model: sessions per second (--rate)'),
    borrow: z.string().min(1).optional().describe('borrowing thresholds or off (--borrow)'),
    clients: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .optional()
      .describe("T, the closed model's clients (--clients); absent: the grid's clients"),
    onFailure: z
      .enum(['retry', 'leave'])
      .optional()
      .describe('what a client does after a failure (--on-failure); absent: retry'),
    simCpu: z
      .enum(['quota', 'pooled'])
      .optional()
      .describe("the simulated host's CPU (--sim-cpu); absent: quota, each replica its own"),
  })
  .strict();
export type MapSettings = z.infer<typeof mapSettingsSchema>;

const sweepList = <T extends z.ZodType>(item: T) => z.array(item).min(1).optional();

export const mapGridSchema = z
  .object({
    name: nameText,
    description: z.string().optional(),
    /** Which paper plans a cell runs: plans/paper/quick/ (a quarter of the phase lengths) or plans/paper/. */
    plans: z.enum(['quick', 'full']).default('quick'),
    clients: z.number().int().min(1).max(10_000),
    seed: z.number().int().min(0).max(4_294_967_295).default(1),
    repeat: z.number().int().min(1).max(20).default(1),
    /**
     * Each cell also runs plb on RQ3's placebo (plans/paper/placebo.yaml: RQ3's timing, no fault),
     * and Fig. 6's premium claims are judged on its mark-1 and mark-2 as on down-1 and down-2.
     */
    placebo: z.boolean().default(false),
    /** The point the one-factor sweeps and ablations start from. */
    centre: mapSettingsSchema,
    /** Two heatmap axes faceted by mix; every other setting is the centre's. */
    heatmap: z
      .object({
        targetCpu: z.array(z.number().min(0.05).max(0.95)).min(1),
        queriesPerSession: z.array(z.number().int().min(1).max(100_000)).min(1),
        mix: z.array(mixText).min(1),
      })
      .strict(),
    /** One factor at a time from the centre. */
    sweeps: z
      .object({
        reference: sweepList(mapSettingsSchema.shape.reference),
        readings: sweepList(mapSettingsSchema.shape.readings),
        model: sweepList(mapSettingsSchema.shape.model),
        borrow: sweepList(z.string().min(1)),
        clients: sweepList(z.number().int().min(1).max(100_000)),
        onFailure: sweepList(z.enum(['retry', 'leave'])),
        simCpu: sweepList(z.enum(['quota', 'pooled'])),
      })
      .strict()
      .default({}),
    /** Named changes from the centre, to test a mechanism (borrowing off, short sessions...). */
    ablations: z.array(mapSettingsSchema.partial().extend({ name: nameText }).strict()).default([]),
  })
  .strict();
export type MapGrid = z.infer<typeof mapGridSchema>;

/** Where a cell sits in the grid: the heatmap, a one-factor sweep from the centre, or an ablation. */
const cellKindSchema = z.enum(['heatmap', 'sweep', 'ablation']);

const mapCellSchema = z.object({
  id: z.string().describe('folder of the cell under the map directory'),
  kind: cellKindSchema,
  /** Sweep: the axis that moved; ablation: its name. */
  label: z.string(),
  settings: mapSettingsSchema,
});
export type MapCell = z.infer<typeof mapCellSchema>;

const mapClaimCellSchema = z.object({
  cell: z.string(),
  claim: z.string(),
  phase: z.string(),
  mix: z.string(),
  published: z.string(),
  measured: z.number().nullable(),
  interval: z.object({ lo: z.number(), hi: z.number() }).nullable(),
  verdict: claimVerdictSchema,
});
export type MapClaimCell = z.infer<typeof mapClaimCellSchema>;

export const mapJsonSchema = z.object({
  kind: z.literal('plb-paper-map'),
  version: z.literal(1),
  grid: z.string(),
  plans: z.enum(['quick', 'full']),
  clients: z.number(),
  seed: z.number(),
  repeat: z.number(),
  rule: z.string().describe('how a verdict is given (the paper-vs-measured rule)'),
  centre: z.string().describe('id of the centre cell'),
  cells: z.array(
    mapCellSchema.extend({
      runs: z.number().describe('run directories found for the cell'),
      /** Median session lifetime over the down-1 phase length (plb, RQ3): how long sessions are against phases. */
      sessionPhaseRatio: z.number().nullable(),
    }),
  ),
  claims: z.array(mapClaimCellSchema),
});
export type MapJson = z.infer<typeof mapJsonSchema>;
