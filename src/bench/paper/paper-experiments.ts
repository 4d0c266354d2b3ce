// The PLB paper's experiments (section V) as bench presets: which plan, clients, strategies and
// mixes each one runs, and how long that takes. `plb paper run` turns one into a bench series.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PlbError } from '../../core/errors.js';
import type { FaultPlan } from '../../run-format/plan.js';
import { packageRoot } from '../../core/package-info.js';

export const PAPER_EXPERIMENT_IDS = ['rq1', 'rq2', 'fig5', 'rq3'] as const;
export type PaperExperimentId = (typeof PAPER_EXPERIMENT_IDS)[number];

export interface PaperExperiment {
  id: PaperExperimentId;
  title: string;
  /** What the paper shows for it. */
  figures: string;
  /** Plan file under plans/paper/ (and plans/paper/quick/ for --quick). */
  planFile: string;
  /** T, the closed-model clients of the paper. */
  clients: number;
  strategies: readonly string[];
  mixes: readonly string[];
}

const ALL_MIXES = ['25:75', '50:50', '75:25'] as const;

export const PAPER_EXPERIMENTS: Readonly<Record<PaperExperimentId, PaperExperiment>> = {
  rq1: {
    id: 'rq1',
    title: 'RQ1: static isolation under a class-local fail-stop (plb vs 3RR+2RR)',
    figures: 'fault-interval Premium goodput retention, mean CPU over available replicas and its CV',
    planFile: 'rq1.yaml',
    clients: 1000,
    strategies: ['plb', 'static'],
    mixes: ALL_MIXES,
  },
  rq2: {
    id: 'rq2',
    title: 'RQ2: differentiation in a shared pool under a cascade (plb vs 5RR), P25:F75',
    figures: 'Fig. 4: per-phase goodput, p95 and session lifetime, both classes',
    planFile: 'rq2.yaml',
    clients: 1000,
    strategies: ['plb', 'rr'],
    mixes: ['25:75'],
  },
  fig5: {
    id: 'fig5',
    title: 'RQ2 over the workload grid (plb vs 5RR), the three mixes',
    figures: 'Fig. 5: p95 change vs 5RR per class and mix (positive = plb better)',
    planFile: 'rq2.yaml',
    clients: 1000,
    strategies: ['plb', 'rr'],
    mixes: ALL_MIXES,
  },
  rq3: {
    id: 'rq3',
    title: 'RQ3: Premium-side cascade and two rejoins (plb), the three mixes',
    figures: "Fig. 6: p95 change vs each class's own pre-fault p95, and the Freemium-Premium gap",
    planFile: 'rq3.yaml',
    clients: 600,
    strategies: ['plb'],
    mixes: ALL_MIXES,
  },
};

/** --quick: the same events at a quarter of the phase lengths, and a fifth of the clients. */
export const QUICK_CLIENT_DIVISOR = 5;

export function paperExperiment(id: string): PaperExperiment {
  if (!(PAPER_EXPERIMENT_IDS as readonly string[]).includes(id)) {
    throw new PlbError(
      'BAD_INPUT',
      `experiment: unknown "${id}" (one of ${PAPER_EXPERIMENT_IDS.join(', ')})`,
      { hint: 'plb paper list shows them' },
    );
  }
  return PAPER_EXPERIMENTS[id as PaperExperimentId];
}

export function paperPlanPath(exp: PaperExperiment, quick: boolean): string {
  const p = join(packageRoot(), 'plans', 'paper', ...(quick ? ['quick'] : []), exp.planFile);
  if (!existsSync(p)) throw new PlbError('INTERNAL', `the paper plan is missing: ${p}`);
  return p;
}

export function paperClients(exp: PaperExperiment, quick: boolean): number {
  return quick ? Math.round(exp.clients / QUICK_CLIENT_DIVISOR) : exp.clients;
}

/**
 * What a real-cluster series costs besides the plans themselves, measured on this project's 2-core
 * machine with the docker driver (`plb paper run rq3`, T=600): 18 s a run (replicas restored and
 * checked, the clients connect, the run directory is summarised) and, once, the dataset (2 s) and
 * the think-time calibration (15 s), plus bringing a cluster up when none exists (about 40 s).
 * The simulator runs a 360 s T=1000 plan in a few seconds.
 */
export const SERIES_OVERHEAD_S = { perRun: 20, once: 60 } as const;

export function estimateWallS(plan: Pick<FaultPlan, 'duration'>, runs: number, driver: string): number {
  if (driver === 'sim') return Math.ceil(runs * Math.max(1, plan.duration / 100));
  return runs * (plan.duration + SERIES_OVERHEAD_S.perRun) + SERIES_OVERHEAD_S.once;
}

export function formatWall(s: number): string {
  if (s < 120) return `${Math.round(s)} s`;
  const min = Math.round(s / 60);
  return min < 120 ? `${min} min` : `${Math.floor(min / 60)} h ${min % 60} min`;
}
