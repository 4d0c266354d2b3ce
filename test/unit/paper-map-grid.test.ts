// The grid of `plb paper map`: a bad grid is one line naming the file, the line and the field;
// the shipped grids load and expand into heatmap, sweep and ablation cells, each once.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cellId, expandGrid, loadMapGrid, parseMapGrid } from '../../src/bench/paper/paper-map-grid.js';
import { PlbError } from '../../src/core/errors.js';

const GOOD = `name: tiny
clients: 20
centre:
  targetCpu: 0.5
  queriesPerSession: 5
  mix: '25:75'
  reference: '2:1:2'
  readings: plb
  model: closed
heatmap:
  targetCpu: [0.3, 0.5]
  queriesPerSession: [5]
  mix: ['25:75']
`;

function errorOf(text: string): string {
  try {
    parseMapGrid(text, 'grid.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(PlbError);
    return (err as Error).message;
  }
  throw new Error('expected the grid to be refused');
}

describe('paper map grid', () => {
  it('expands the heatmap, then the centre, sweeps and ablations, each cell once', () => {
    const grid = parseMapGrid(
      `${GOOD}sweeps:\n  reference: ['3:0:2']\nablations:\n  - { name: borrow-off, borrow: 'off' }\n`,
      'g',
    );
    const { cells, centre } = expandGrid(grid);
    expect(cells.map((c) => [c.kind, c.label])).toEqual([
      ['heatmap', 'heatmap'],
      ['heatmap', 'heatmap'],
      ['sweep', 'reference=3:0:2'],
      ['ablation', 'borrow-off'],
    ]);
    // The centre is the heatmap cell with its settings.
    expect(centre).toBe(cells[1]?.id);
    expect(centre).toBe('cpu50_q5_m25-75_ref212_plb_closed');
    expect(cells[3]?.settings.borrow).toBe('off');
    expect(new Set(cells.map((c) => c.id)).size).toBe(cells.length);
  });

  it('cell ids are folder names that say every setting', () => {
    const id = cellId({
      targetCpu: 0.35,
      queriesPerSession: 20,
      mix: '50:50',
      reference: '1:3:1',
      readings: 'plb,repair=none',
      model: 'open',
      rate: 8,
      borrow: '1.2:1.2',
    });
    expect(id).toBe('cpu35_q20_m50-50_ref131_plb-repair-none_open_rate8_borrow-1.2-1.2');
  });

  it.each([
    [GOOD.replace('clients: 20', 'clients: many'), 'grid.yaml:2: clients must be a number (got "many")'],
    [
      GOOD.replace('  targetCpu: 0.5\n', '  targetCpu: 2\n'),
      'grid.yaml:4: centre.targetCpu must be <= 0.95 (got 2)',
    ],
    [
      GOOD.replace("mix: ['25:75']", "mix: ['25:75', 'lots']"),
      'grid.yaml:13: heatmap.mix[1] must be premium:freemium like 25:75',
    ],
    [
      GOOD.replace('model: closed', 'model: poisson'),
      'grid.yaml:9: centre.model must be "closed" or "open" (got "poisson")',
    ],
    [GOOD.replace('readings: plb', 'readings: bogus'), 'grid.yaml:8: centre.readings'],
    [
      GOOD.replace("reference: '2:1:2'", "reference: '2:1'"),
      'grid.yaml:7: centre.reference must be premium:mixed:freemium like 2:1:2',
    ],
    [`${GOOD}colour: red\n`, 'grid.yaml:14: has unknown field "colour"'],
    [GOOD.replace(/heatmap:[\s\S]*$/, ''), 'grid.yaml:1: heatmap is missing'],
    [`${GOOD}sweeps:\n  model: [open]\n`, 'grid.yaml:4: centre.rate is missing'],
    [`${GOOD}ablations:\n  - { name: a, borrow: 'sideways' }\n`, 'grid.yaml:15: ablations[0].borrow'],
    ['name: [', 'grid.yaml:1: yaml:'],
  ])('refuses a bad grid in one line naming the field (%#)', (text, expected) => {
    const msg = errorOf(text);
    expect(msg).toContain(expected);
    expect(msg).not.toContain('\n');
  });

  it('loads the shipped grids', () => {
    for (const name of ['quick', 'full']) {
      const grid = loadMapGrid(join('plans', 'paper', 'map', `${name}.yaml`));
      const { cells } = expandGrid(grid);
      expect(grid.name).toBe(name);
      expect(cells.length).toBeGreaterThan(4);
    }
  });

  it('names a missing grid file', () => {
    expect(() => loadMapGrid('no/such/grid.yaml')).toThrow(
      '--grid: no/such/grid.yaml: cannot read (no such file)',
    );
  });
});
