// The sweep of `plb paper map`: every cell of the grid runs RQ2 (plb and rr) and RQ3 (plb) on the
// simulator at its settings, into <out>/<cell>/rq2 and <out>/<cell>/rq3, and with `placebo` RQ3's
// placebo (plb, no fault) into <out>/<cell>/placebo. A cell is done when its cell.json is written
// after every series; a done cell is not run again, so a stopped map resumes.
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PlbError } from '../../core/errors.js';
import { packageRoot } from '../../core/package-info.js';
import { writeFileSafe } from '../../core/safe-write.js';
import type { MapCell, MapGrid } from '../../run-format/paper-map.js';
import { PAPER_EXPERIMENTS, paperPlanPath } from './paper-experiments.js';

export const CELL_DONE_FILE = 'cell.json';

/** The bench flags a cell sets; the caller adds the defaults and passes them to runBench. */
export interface CellBenchFlags {
  plan: string;
  strategy: string[];
  mix: string[];
  clients: number;
  'think-time': string;
  'target-cpu': string;
  'queries-per-session': string;
  reference: string;
  readings: string;
  model: string;
  rate?: string;
  borrow?: string;
  'on-failure'?: string;
  'sim-cpu'?: string;
  seed: number;
  repeat: number;
  driver: string;
  progress: number;
  out: string;
}

/** Runs one bench series; returns its exit code (0 ok). */
export type CellRunner = (flags: CellBenchFlags) => Promise<number>;

export interface SweepOutcome {
  ran: number;
  skipped: number;
  /** Non-zero: a series failed or was stopped; the cells after it were not run. */
  code: number;
  wallS: number;
}

/** RQ3's placebo plan (its timing, `mark`s in place of the faults), quick or full. */
function placeboPlanPath(quick: boolean): string {
  const p = join(packageRoot(), 'plans', 'paper', ...(quick ? ['quick'] : []), 'placebo.yaml');
  if (!existsSync(p)) throw new PlbError('INTERNAL', `the placebo plan is missing: ${p}`);
  return p;
}

/** The series of a cell: RQ2 (plb, rr), RQ3 (plb) and, with `placebo`, RQ3's placebo (plb). */
export function cellSeries(grid: MapGrid, cell: MapCell, dir: string): CellBenchFlags[] {
  const quick = grid.plans === 'quick';
  const s = cell.settings;
  const common = {
    mix: [s.mix],
    clients: s.clients ?? grid.clients,
    'think-time': 'auto',
    'target-cpu': String(s.targetCpu),
    'queries-per-session': String(s.queriesPerSession),
    reference: s.reference,
    readings: s.readings,
    model: s.model,
    ...(s.model === 'open' && s.rate !== undefined ? { rate: String(s.rate) } : {}),
    ...(s.borrow !== undefined ? { borrow: s.borrow } : {}),
    ...(s.onFailure !== undefined ? { 'on-failure': s.onFailure } : {}),
    ...(s.simCpu !== undefined ? { 'sim-cpu': s.simCpu } : {}),
    seed: grid.seed,
    repeat: grid.repeat,
    driver: 'sim',
    progress: 0,
  };
  return [
    {
      ...common,
      plan: paperPlanPath(PAPER_EXPERIMENTS.rq2, quick),
      strategy: [...PAPER_EXPERIMENTS.rq2.strategies],
      out: join(dir, 'rq2'),
    },
    {
      ...common,
      plan: paperPlanPath(PAPER_EXPERIMENTS.rq3, quick),
      strategy: [...PAPER_EXPERIMENTS.rq3.strategies],
      out: join(dir, 'rq3'),
    },
    ...(grid.placebo
      ? [
          {
            ...common,
            plan: placeboPlanPath(quick),
            strategy: [...PAPER_EXPERIMENTS.rq3.strategies],
            out: join(dir, 'placebo'),
          },
        ]
      : []),
  ];
}

export function cellDone(out: string, cell: MapCell): boolean {
  return existsSync(join(out, cell.id, CELL_DONE_FILE));
}

/** Runs every cell not done yet, in order; stops at the first series that fails or is stopped. */
export async function sweepMap(
  grid: MapGrid,
  cells: readonly MapCell[],
  opts: { out: string; run: CellRunner; log: (line: string) => void },
): Promise<SweepOutcome> {
  const started = Date.now();
  const todo = cells.filter((c) => !cellDone(opts.out, c));
  const skipped = cells.length - todo.length;
  if (skipped > 0) opts.log(`${skipped} of ${cells.length} cells already done in ${opts.out}: not run again`);
  let ran = 0;
  for (const cell of todo) {
    const dir = join(opts.out, cell.id);
    // A cell without its done file was stopped halfway: its partial runs go, it runs whole.
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const t0 = Date.now();
    for (const flags of cellSeries(grid, cell, dir)) {
      const code = await opts.run(flags);
      if (code !== 0) {
        opts.log(
          `cell ${cell.id}: a series ended with exit code ${code}; the map stops here (run it again to resume)`,
        );
        return { ran, skipped, code, wallS: (Date.now() - started) / 1000 };
      }
    }
    writeFileSafe(join(dir, CELL_DONE_FILE), `${JSON.stringify(cell, null, 2)}\n`, CELL_DONE_FILE);
    ran++;
    const elapsed = (Date.now() - started) / 1000;
    const left = todo.length - ran;
    opts.log(
      `cell ${ran + skipped}/${cells.length} ${cell.id} (${cell.label}): ${((Date.now() - t0) / 1000).toFixed(1)} s` +
        (left > 0 ? `; about ${Math.ceil((elapsed / ran) * left)} s to go` : ''),
    );
  }
  return { ran, skipped, code: 0, wallS: (Date.now() - started) / 1000 };
}
