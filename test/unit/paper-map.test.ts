// `plb paper map` on the simulator: a tiny grid with a fixed seed runs RQ2 (plb, rr) and RQ3 (plb)
// per cell, gives every published claim of the cell's mix a verdict, writes map.json (schema'd)
// and map.html, and resumes without re-running a done cell.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import PaperMap from '../../src/commands/paper/map.js';
import { mapJsonSchema, type MapJson } from '../../src/run-format/paper-map.js';
import { runCommand } from '../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'plb-map-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const GRID = `name: tiny
clients: 20
seed: 7
centre:
  targetCpu: 0.4
  queriesPerSession: 2
  mix: '25:75'
  reference: '2:1:2'
  readings: plb
  model: closed
heatmap:
  targetCpu: [0.4]
  queriesPerSession: [2]
  mix: ['25:75']
`;
const gridFile = join(root, 'tiny.yaml');
const out = join(root, 'map');
let first: { code: number; stdout: string; stderr: string };

beforeAll(async () => {
  writeFileSync(gridFile, GRID);
  first = await runCommand(PaperMap, ['--grid', gridFile, '--out', out]);
}, 120_000);

const readMap = (): MapJson => mapJsonSchema.parse(JSON.parse(readFileSync(join(out, 'map.json'), 'utf8')));

describe('plb paper map', () => {
  it('runs each cell as RQ2 (plb, rr) and RQ3 (plb) and judges every claim of its mix', () => {
    expect(first.code, first.stderr).toBe(0);
    const map = readMap();
    expect(map.cells.map((c) => [c.kind, c.label, c.runs])).toEqual([['heatmap', 'heatmap', 3]]);
    expect(map.centre).toBe(map.cells[0]?.id);
    for (const cell of map.cells) {
      const claims = map.claims.filter((c) => c.cell === cell.id);
      // 25:75 has all the published claims: Fig. 4 (2), Fig. 5 (2 x 2 phases), Fig. 6 (4).
      expect(claims.map((c) => `${c.claim}@${c.phase}`).sort()).toEqual(
        [
          'fig5-freemium@down-1',
          'fig5-freemium@down-2',
          'fig5-premium@down-1',
          'fig5-premium@down-2',
          'fig6-freemium-down-2@down-2',
          'fig6-gap-down-2@down-2',
          'fig6-premium-down-1@down-1',
          'fig6-premium-down-2@down-2',
          'rq2-goodput-2x@down-2',
          'rq2-p95-18.2@down-2',
        ].sort(),
      );
      for (const c of claims) {
        expect(c.measured, `${cell.id} ${c.claim}`).not.toBeNull();
        // A verdict follows from the interval: reproduced or contradicted only with one.
        if (c.verdict === 'reproduced' || c.verdict === 'contradicted') expect(c.interval).not.toBeNull();
        if (c.interval) expect(c.interval.lo).toBeLessThanOrEqual(c.interval.hi);
      }
      expect(cell.sessionPhaseRatio).toBeGreaterThan(0);
      expect(cell.sessionPhaseRatio).toBeLessThan(1);
    }
    expect(first.stdout).toContain('Paper map tiny: verdicts per claim over 1 cells');
    const html = readFileSync(join(out, 'map.html'), 'utf8');
    expect(html).toContain('<svg');
    expect(html).toContain('fig6-premium-down-2');
  });

  it('gives the same verdicts with the same seed (the fixed-seed map of this grid)', () => {
    const map = readMap();
    const verdicts = Object.fromEntries(
      map.claims.filter((c) => c.cell === map.centre).map((c) => [`${c.claim}@${c.phase}`, c.verdict]),
    );
    // With 20 clients and 15 s phases most intervals are too wide to tell; Fig. 4's "> 2x" goodput
    // is contradicted (the simulator's plb keeps Premium goodput near rr's). Fig. 6's premium p95
    // in down-2 and its gap, contradicted here before the postmaster's fork was shipped on
    // (2026-12-07), are inconclusive with it at this grid's size.
    expect(verdicts).toEqual({
      'fig5-freemium@down-1': 'inconclusive',
      'fig5-freemium@down-2': 'inconclusive',
      'fig5-premium@down-1': 'inconclusive',
      'fig5-premium@down-2': 'inconclusive',
      'fig6-freemium-down-2@down-2': 'inconclusive',
      'fig6-gap-down-2@down-2': 'inconclusive',
      'fig6-premium-down-1@down-1': 'inconclusive',
      'fig6-premium-down-2@down-2': 'inconclusive',
      'rq2-goodput-2x@down-2': 'contradicted',
      'rq2-p95-18.2@down-2': 'inconclusive',
    });
  });

  it('resumes: a done cell is not run again', async () => {
    const before = statSync(join(out, readMap().centre, 'cell.json')).mtimeMs;
    const again = await runCommand(PaperMap, ['--grid', gridFile, '--out', out, '--json']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('1 of 1 cells already done');
    expect(statSync(join(out, readMap().centre, 'cell.json')).mtimeMs).toBe(before);
    // The map is evaluated again from the runs on disk: the same verdicts.
    const json = mapJsonSchema.parse(JSON.parse(again.stdout));
    expect(json.claims).toEqual(readMap().claims);
  }, 60_000);

  it('refuses a bad grid in one line and runs nothing', async () => {
    const bad = join(root, 'bad.yaml');
    writeFileSync(bad, GRID.replace('clients: 20', 'clients: -3'));
    const r = await runCommand(PaperMap, ['--grid', bad, '--out', join(root, 'none')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${bad}:2: clients must be >= 1 (got -3)`);
    expect(existsSync(join(root, 'none'))).toBe(false);
  });
});
