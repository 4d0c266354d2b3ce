import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aggregateRuns, mixLabel } from '../../src/report/aggregate.js';
import { compareStrategies, goodputChange, p95Change } from '../../src/report/compare.js';
import { loadRun } from '../../src/metrics/load-run.js';
import type { RunSummary } from '../../src/metrics/types.js';

const FIXTURES = join(import.meta.dirname, '../fixtures/runs/demo-cascade');
const summaries: RunSummary[] = readdirSync(FIXTURES)
  .sort()
  .map((d) => loadRun(join(FIXTURES, d)).summary);

describe('aggregateRuns on the fixtures', () => {
  const groups = aggregateRuns(summaries);

  it('groups repeats by strategy+plan+mix, ordered plb, rr, static', () => {
    expect(groups.map((g) => g.key)).toEqual([
      'demo-cascade|plb|25:75',
      'demo-cascade|rr|25:75',
      'demo-cascade|static|25:75',
    ]);
    expect(groups[1]?.runIds).toEqual(['demo-cascade-rr-1', 'demo-cascade-rr-2', 'demo-cascade-rr-3']);
    expect(groups.every((g) => g.complete)).toBe(true);
    expect(groups[0]?.phases.map((p) => p.name)).toEqual(['ref', 'down-1', 'down-2', 'rejoin-1']);
  });

  it('reduces p95 and goodput to median and IQR (type 7)', () => {
    const rr = groups[1];
    const down1 = rr?.phases[1];
    // rr down-1 premium p95 repeats: 20, 22, 26
    expect(down1?.classes.premium.p95).toEqual({ median: 22, q1: 21, q3: 24, n: 3 });
    // goodput repeats: 32, 28, 34
    expect(down1?.classes.premium.goodput).toEqual({ median: 32, q1: 30, q3: 33, n: 3 });
    // retention is the median of the per-run values: 32/40, 28/36, 34/42
    expect(down1?.classes.premium.goodputRetention.median).toBe(0.8);
    expect(down1?.classes.premium.goodputRetention.q1).toBeCloseTo((0.7778 + 0.8) / 2, 10);
    // ref has no retention at all
    expect(rr?.phases[0]?.classes.freemium.goodputRetention).toEqual({
      median: null,
      q1: null,
      q3: null,
      n: 0,
    });
  });

  it('keeps a down replica out of its CPU stat', () => {
    const down2 = groups[0]?.phases[2];
    expect(down2?.replicas.r1?.cpuMean.n).toBe(0);
    expect(down2?.replicas.r3?.cpuMean.median).toBe(0.6);
    expect(down2?.survivors.median).toBe(3);
  });

  it('aggregates detection delays per fault', () => {
    expect(groups[0]?.detection[0]).toEqual({
      replica: 'r1',
      action: 'down',
      occurrence: 1,
      delayMs: { median: 1500, q1: 1450, q3: 1600, n: 3 },
      missed: 0,
    });
  });

  it('labels mixes in percent whether given as fractions or percents', () => {
    expect(mixLabel({ premium: 25, freemium: 75 })).toBe('25:75');
    expect(mixLabel({ premium: 0.5, freemium: 0.5 })).toBe('50:50');
  });
});

describe('comparison sign convention ((value - base) / base, as every Δ)', () => {
  it('p95: (base - p95) / base; goodput: (g - base) / base', () => {
    expect(p95Change(8, 10)).toBeCloseTo(-0.2, 12); // faster is negative
    expect(p95Change(15, 10)).toBeCloseTo(0.5, 12);
    expect(goodputChange(12, 10)).toBeCloseTo(0.2, 12); // more is positive
    expect(goodputChange(5, 10)).toBeCloseTo(-0.5, 12);
    expect(p95Change(5, 0)).toBeNull();
    expect(goodputChange(null, 10)).toBeNull();
  });

  it('compares every strategy with rr on the medians', () => {
    const cmp = compareStrategies(aggregateRuns(summaries));
    expect(cmp.baseline).toBe('rr');
    expect(cmp.entries.map((e) => e.strategy)).toEqual(['plb', 'static']);
    const plb = cmp.entries[0];
    const row = plb?.rows.find((r) => r.phase === 'down-1' && r.cls === 'premium');
    // plb p95 median 14 vs rr 22; goodput 39 vs 32
    expect(row?.p95).toBe(14);
    expect(row?.baseP95).toBe(22);
    expect(row?.p95Change).toBeCloseTo(-8 / 22, 12);
    expect(row?.goodputChange).toBeCloseTo(7 / 32, 12);
    const st = cmp.entries[1]?.rows.find((r) => r.phase === 'down-2' && r.cls === 'premium');
    // static premium lost its partition: p95 82 vs 42 is worse, so negative
    expect(st?.p95Change).toBeCloseTo(40 / 42, 12);
    expect(st?.goodputChange).toBeCloseTo(-4 / 24, 12);
  });

  it('uses another baseline when asked and notes a missing one', () => {
    const groups = aggregateRuns(summaries);
    const cmp = compareStrategies(groups, 'static');
    expect(cmp.entries.map((e) => e.strategy)).toEqual(['plb', 'rr']);
    const none = compareStrategies(groups, 'wlc');
    expect(none.entries).toEqual([]);
    expect(none.missingBaseline).toEqual(['demo-cascade 25:75']);
  });
});
