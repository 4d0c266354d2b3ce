// The map's sweep without the simulator: which series a cell runs, with which flags, and how a
// stopped map resumes (done cells skipped, a half-done cell run whole, a failed series stops it).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expandGrid, parseMapGrid } from '../../src/bench/paper/paper-map-grid.js';
import {
  CELL_DONE_FILE,
  cellSeries,
  sweepMap,
  type CellBenchFlags,
} from '../../src/bench/paper/paper-map.js';

const root = mkdtempSync(join(tmpdir(), 'plb-map-sweep-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const grid = parseMapGrid(
  `name: t
clients: 20
seed: 3
centre: { targetCpu: 0.5, queriesPerSession: 5, mix: '25:75', reference: '2:1:2', readings: plb, model: closed, rate: 9 }
heatmap: { targetCpu: [0.3, 0.5], queriesPerSession: [5], mix: ['25:75'] }
sweeps: { model: [open] }
ablations:
  - { name: borrow-off, borrow: 'off' }
`,
  't.yaml',
);
const { cells } = expandGrid(grid);

/** A runner that leaves a run directory per strategy, as the bench would. */
function fakeRunner(calls: CellBenchFlags[], failAt = -1) {
  return async (f: CellBenchFlags): Promise<number> => {
    calls.push(f);
    if (calls.length - 1 === failAt) return 130;
    for (const s of f.strategy) mkdirSync(join(f.out, `run-${s}`), { recursive: true });
    return 0;
  };
}

describe('paper map sweep', () => {
  it('a cell runs RQ2 with plb and rr and RQ3 with plb, at its settings, on the simulator', () => {
    const open = cells.find((c) => c.label === 'model=open')!;
    const [rq2, rq3] = cellSeries(grid, open, '/m/c');
    expect(rq2).toMatchObject({
      strategy: ['plb', 'rr'],
      mix: ['25:75'],
      clients: 20,
      'think-time': 'auto',
      'target-cpu': '0.5',
      'queries-per-session': '5',
      reference: '2:1:2',
      model: 'open',
      rate: '9',
      seed: 3,
      driver: 'sim',
      out: '/m/c/rq2',
    });
    expect(basename(rq2!.plan)).toBe('rq2.yaml');
    expect(rq2!.plan).toContain(join('paper', 'quick'));
    expect(rq3).toMatchObject({ strategy: ['plb'], out: '/m/c/rq3' });
    expect(basename(rq3!.plan)).toBe('rq3.yaml');
    // A closed cell passes no rate; borrowing only where the cell sets it.
    const [closed] = cellSeries(grid, cells[0]!, '/m/x');
    expect(closed).not.toHaveProperty('rate');
    expect(closed).not.toHaveProperty('borrow');
    expect(cellSeries(grid, cells.find((c) => c.label === 'borrow-off')!, '/m/y')[0]?.borrow).toBe('off');
  });

  it('skips done cells, runs a half-done cell whole, and stops at a failed series', async () => {
    const out = join(root, 'resume');
    const log: string[] = [];
    const calls: CellBenchFlags[] = [];
    // Stopped in the second series of the second cell.
    const stopped = await sweepMap(grid, cells, { out, run: fakeRunner(calls, 3), log: (l) => log.push(l) });
    expect(stopped).toMatchObject({ ran: 1, skipped: 0, code: 130 });
    expect(existsSync(join(out, cells[0]!.id, CELL_DONE_FILE))).toBe(true);
    expect(existsSync(join(out, cells[1]!.id, CELL_DONE_FILE))).toBe(false);
    expect(log.at(-1)).toContain('exit code 130');
    // A stray file in the half-done cell is gone after it runs again.
    writeFileSync(join(out, cells[1]!.id, 'rq2', 'stale'), '');
    const again: CellBenchFlags[] = [];
    const done = await sweepMap(grid, cells, { out, run: fakeRunner(again), log: (l) => log.push(l) });
    expect(done).toMatchObject({ ran: cells.length - 1, skipped: 1, code: 0 });
    expect(again.map((f) => f.out)).toEqual(
      cells.slice(1).flatMap((c) => [join(out, c.id, 'rq2'), join(out, c.id, 'rq3')]),
    );
    expect(readdirSync(join(out, cells[1]!.id, 'rq2')).sort()).toEqual(['run-plb', 'run-rr']);
    expect(log).toContain(`1 of ${cells.length} cells already done in ${out}: not run again`);
    // Everything done: nothing runs.
    const none: CellBenchFlags[] = [];
    expect(await sweepMap(grid, cells, { out, run: fakeRunner(none), log: () => {} })).toMatchObject({
      ran: 0,
    });
    expect(none).toEqual([]);
  });
});
