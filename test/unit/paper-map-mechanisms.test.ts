// The map's mechanism factors: T as a sweep, clients that leave, the pooled host CPU, and RQ3's
// placebo run in every cell with Fig. 6's premium claims judged on its mark phases.
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expandGrid, loadMapGrid, parseMapGrid } from '../../src/bench/paper/paper-map-grid.js';
import { cellSeries } from '../../src/bench/paper/paper-map.js';
import PaperMap from '../../src/commands/paper/map.js';
import { mapJsonSchema } from '../../src/run-format/paper-map.js';
import { runCommand } from '../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'plb-map-mech-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const GRID = `name: mech
clients: 20
seed: 7
placebo: true
centre: { targetCpu: 0.4, queriesPerSession: 2, mix: '25:75', reference: '2:1:2', readings: plb, model: closed }
heatmap: { targetCpu: [0.4], queriesPerSession: [2], mix: ['25:75'] }
`;

describe('paper map: mechanism factors', () => {
  const grid = parseMapGrid(
    `${GRID}sweeps: { clients: [20, 600, 1000], onFailure: [retry, leave], simCpu: [pooled] }
ablations:
  - { name: t600-leave, clients: 600, onFailure: leave }
`,
    'g.yaml',
  );
  const { cells, centre } = expandGrid(grid);

  it("sweeps T, and a cell at the grid's own T or a default model is the centre", () => {
    expect(cells.map((c) => [c.label, c.id])).toEqual([
      ['heatmap', centre],
      ['clients=600', `${centre}_t600`],
      ['clients=1000', `${centre}_t1000`],
      ['onFailure=leave', `${centre}_leave`],
      ['simCpu=pooled', `${centre}_pooled`],
      ['t600-leave', `${centre}_t600_leave`],
    ]);
  });

  it('passes the settings to the bench, and runs the placebo as a third series', () => {
    const at = (label: string) => cellSeries(grid, cells.find((c) => c.label === label)!, '/m/c');
    const [rq2, rq3, placebo] = at('t600-leave');
    expect(rq2).toMatchObject({ clients: 600, 'on-failure': 'leave', strategy: ['plb', 'rr'] });
    expect(rq3).toMatchObject({ clients: 600, 'on-failure': 'leave', strategy: ['plb'] });
    expect(placebo).toMatchObject({ clients: 600, strategy: ['plb'], out: '/m/c/placebo' });
    expect(basename(placebo!.plan)).toBe('placebo.yaml');
    expect(placebo!.plan).toContain(join('paper', 'quick'));
    expect(at('simCpu=pooled')[0]).toMatchObject({ clients: 20, 'sim-cpu': 'pooled' });
    expect(at('heatmap')[0]).not.toHaveProperty('on-failure');
    expect(at('heatmap')[0]).not.toHaveProperty('sim-cpu');
    // Without placebo: two series, as before.
    const plain = parseMapGrid(GRID.replace('placebo: true\n', ''), 'p.yaml');
    expect(cellSeries(plain, expandGrid(plain).cells[0]!, '/m/c')).toHaveLength(2);
  });

  it('refuses a bad T and a bad model in one line naming the field', () => {
    expect(() => parseMapGrid(`${GRID}sweeps: { clients: [0] }\n`, 'g.yaml')).toThrow(
      /g\.yaml:7: sweeps\.clients\[0\]/,
    );
    expect(() => parseMapGrid(`${GRID}sweeps: { onFailure: [sulk] }\n`, 'g.yaml')).toThrow(
      /g\.yaml:7: sweeps\.onFailure\[0\]/,
    );
  });

  it('the shipped grids run the placebo and sweep T over 30, 600 and 1000', () => {
    for (const name of ['quick', 'full']) {
      const g = loadMapGrid(join('plans', 'paper', 'map', `${name}.yaml`));
      expect(g.placebo, name).toBe(true);
      expect(g.clients, name).toBe(30);
      expect(g.sweeps.clients, name).toEqual([600, 1000]);
      const labels = expandGrid(g).cells.map((c) => c.label);
      expect(labels, name).toEqual(expect.arrayContaining(['clients-leave', 'pooled-host']));
    }
  });

  it('judges the placebo: Fig. 6 premium claims on mark-1 and mark-2, next to RQ3 on down-1 and down-2', async () => {
    const file = join(root, 'mech.yaml');
    writeFileSync(file, GRID);
    const out = join(root, 'map');
    const r = await runCommand(PaperMap, ['--grid', file, '--out', out, '--skip-html']);
    expect(r.code, r.stderr).toBe(0);
    const map = mapJsonSchema.parse(JSON.parse(readFileSync(join(out, 'map.json'), 'utf8')));
    expect(map.cells[0]?.runs).toBe(4);
    const keys = map.claims.map((c) => `${c.claim}@${c.phase}`);
    expect(keys).toEqual(
      expect.arrayContaining([
        'fig6-premium-down-1@down-1',
        'fig6-premium-down-2@down-2',
        'placebo-fig6-premium-down-1@mark-1',
        'placebo-fig6-premium-down-2@mark-2',
      ]),
    );
    for (const c of map.claims.filter((x) => x.claim.startsWith('placebo-'))) {
      expect(c.measured, c.claim).not.toBeNull();
      expect(c.published).toBe(
        map.claims.find((x) => x.claim === c.claim.slice('placebo-'.length))?.published,
      );
      if (c.verdict === 'reproduced' || c.verdict === 'contradicted') expect(c.interval).not.toBeNull();
    }
    expect(r.stdout).toContain('placebo-fig6-premium-down-2');
  }, 120_000);
});
