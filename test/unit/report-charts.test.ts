import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aggregateRuns } from '../../src/report/aggregate.js';
import { bucketize, classTimelineSpec, renderSvg, roleSegments } from '../../src/report/charts/charts.js';
import { comparisonSpec, phaseBarsSpec } from '../../src/report/charts/bar-charts.js';
import { compareStrategies } from '../../src/report/compare.js';
import { loadRun } from '../../src/metrics/store/load-run.js';

const FIXTURES = join(import.meta.dirname, '../fixtures/runs/demo-cascade');
const plb = loadRun(join(FIXTURES, 'demo-cascade-plb-1'));

describe('chart data', () => {
  it('turns roles per second into segments, down as its own role', () => {
    const r1 = roleSegments(plb).filter((s) => s.replica === 'r1');
    expect(r1).toEqual([
      { replica: 'r1', start: 0, end: 22, role: 'premium' },
      { replica: 'r1', start: 22, end: 52, role: 'down' },
      { replica: 'r1', start: 52, end: 60, role: 'mixed' },
    ]);
  });

  it('averages long series into at most 600 points', () => {
    const rows = Array.from({ length: 1800 }, (_, i) => ({ t: i, v: i % 3 === 0 ? null : 3 }));
    const out = bucketize(
      rows,
      (r) => r.v,
      (r) => r.t,
    );
    expect(out).toHaveLength(600);
    expect(out[0]).toEqual({ t: 0, value: 3 });
    expect(
      bucketize(
        [{ t: 0, v: null }],
        (r) => r.v,
        (r) => r.t,
      ),
    ).toEqual([{ t: 0, value: null }]);
  });

  it('marks faults and shades phases in the timeline', () => {
    const spec = classTimelineSpec(plb, 'p95') as unknown as { layer: { mark: { type: string } }[] };
    expect(spec.layer.map((l) => l.mark.type)).toEqual(['rect', 'text', 'rule', 'text', 'line']);
  });
});

describe('rendered SVG', () => {
  it('draws IQR error bars only when there are repeats', async () => {
    const runs = ['plb', 'rr', 'static'].flatMap((s) =>
      [1, 2, 3].map((i) => loadRun(join(FIXTURES, `demo-cascade-${s}-${i}`)).summary),
    );
    const groups = aggregateRuns(runs);
    const withIqr = await renderSvg(phaseBarsSpec(groups, 'p95'));
    expect(withIqr.startsWith('<svg')).toBe(true);
    expect(withIqr).toContain('median, error bar = IQR');
    // 4 phases x 3 strategies bars in each of the 2 class panels
    expect(withIqr.match(/<path aria-label="phase: [^"]*; ms: /g)?.length).toBe(24);
    // and one IQR rule per bar: rr down-1 premium p95 repeats 20, 22, 26
    expect(withIqr.match(/<line aria-label="phase: [^"]*; q1: /g)?.length).toBe(24);
    expect(withIqr).toContain('aria-label="phase: down-1; q1: 21; q3: 24; series: rr"');
    const single = await renderSvg(phaseBarsSpec(aggregateRuns([plb.summary]), 'goodput'));
    expect(single).not.toContain('error bar');
    expect(single).not.toContain('q1: ');
    const cmp = await renderSvg(comparisonSpec(compareStrategies(groups)));
    expect(cmp).toContain('Change vs rr (negative p95 = lower latency, positive goodput = more)');
    expect(cmp.length).toBeLessThan(200_000);
  });
});
