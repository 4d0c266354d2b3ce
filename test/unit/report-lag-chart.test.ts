import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRun } from '../../src/metrics/store/load-run.js';
import { hasLag, lagTimelineSpec, renderSvg } from '../../src/report/charts/charts.js';

const plb = loadRun(join(import.meta.dirname, '../fixtures/runs/demo-cascade/demo-cascade-plb-1'));

describe('lag chart', () => {
  it('is left out of a read-only run', () => {
    expect(hasLag(plb)).toBe(false);
  });

  it('draws one line per replica with the faults overlaid', async () => {
    const run = {
      ...plb,
      timeline: plb.timeline.map((row) => ({
        ...row,
        replicas: Object.fromEntries(
          Object.entries(row.replicas).map(([id, c]) => [id, { ...c, lagMs: id === 'r2' ? row.tS * 10 : 0 }]),
        ),
      })),
    };
    expect(hasLag(run)).toBe(true);
    const spec = lagTimelineSpec(run) as unknown as { layer: { mark: { type: string } }[] };
    expect(spec.layer.at(-1)?.mark.type).toBe('line');
    const svg = await renderSvg(lagTimelineSpec(run));
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('Replication lag per replica');
  });
});
