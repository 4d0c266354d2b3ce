import { READING_PRESETS } from '../../src/router/readings.js';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aggregateRuns, mixLabel, settingsDiff } from '../../src/report/aggregate.js';
import { differLine, sharedLine } from '../../src/report/settings.js';
import type { RunConfig } from '../../src/run-format/config.js';
import { compareStrategies, goodputChange, p95Change } from '../../src/report/compare.js';
import { loadRun } from '../../src/metrics/store/load-run.js';
import type { RunSummary } from '../../src/run-format/summary.js';

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

describe('repeats are runs alike in every setting but the seed', () => {
  const loaded = readdirSync(FIXTURES)
    .sort()
    .map((d) => loadRun(join(FIXTURES, d)));
  const cls = (thinkTimeMs: number) => ({
    queriesPerSession: 10,
    thinkTimeMs,
    queryWeights: { point: 0.5, range: 0.3, scan: 0.2 },
  });
  const workload = (thinkTimeMs: number) => ({
    model: 'closed' as const,
    clients: 40,
    rate: 20,
    mix: { premium: 25, freemium: 75 },
    rampUpS: null,
    datasetRows: 1000,
    queryTimeoutMs: 15000,
    connectTimeoutMs: 10000,
    maxOpenSessions: 400,
    classes: { premium: cls(thinkTimeMs), freemium: cls(thinkTimeMs) },
  });
  /** The fixtures' configs, each changed by `edit` (run id -> config). */
  const withConfigs = (
    edit: (runId: string, cfg: RunConfig) => RunConfig,
    summaries = loaded.map((r) => r.summary),
  ) =>
    aggregateRuns(summaries, {
      configs: new Map(summaries.map((s, i) => [s, edit(s.runId, structuredClone(loaded[i]!.config))])),
    });

  it('keeps the keys of groups alike (older runs: missing fields are unknown)', () => {
    const groups = withConfigs((_, c) => c);
    expect(groups.map((g) => g.key)).toEqual([
      'demo-cascade|plb|25:75',
      'demo-cascade|rr|25:75',
      'demo-cascade|static|25:75',
    ]);
    expect(groups[0]?.settingsLabel).toBe('');
    expect(groups[0]?.settings).toMatchObject({
      clients: '40',
      'think time': 'unknown',
      plan: 'demo-cascade',
    });
    expect(settingsDiff(groups)).toEqual({
      differ: [],
      shared: [
        { name: 'clients', value: '40' },
        { name: 'plan', value: 'demo-cascade' },
      ],
    });
  });

  it('splits groups whose settings differ, and names the settings', () => {
    const groups = withConfigs((id, c) => {
      const slow = id.endsWith('-3');
      return {
        ...c,
        driver: 'sim',
        workload: workload(slow ? 1000 : 250),
        readings: { ...(slow ? READING_PRESETS.paper : READING_PRESETS.plb) },
      } as RunConfig;
    });
    expect(groups.map((g) => [g.key, g.runIds.length])).toEqual([
      ['demo-cascade|plb|25:75|think time 1s · readings paper', 1],
      ['demo-cascade|rr|25:75|think time 1s · readings paper', 1],
      ['demo-cascade|static|25:75|think time 1s · readings paper', 1],
      ['demo-cascade|plb|25:75|think time 250ms · readings plb', 2],
      ['demo-cascade|rr|25:75|think time 250ms · readings plb', 2],
      ['demo-cascade|static|25:75|think time 250ms · readings plb', 2],
    ]);
    const diff = settingsDiff(groups);
    expect(differLine(diff)).toBe('groups differ in: think time (1s vs 250ms), readings (paper vs plb)');
    expect(sharedLine(diff)).toBe(
      'settings: driver sim · model closed · clients 40 · queries/session 10 · query mix 0.5:0.3:0.2',
    );
    // Strategies are compared under the same settings only.
    const cmp = compareStrategies(groups, 'rr');
    expect(cmp.entries.map((e) => [e.strategy, e.settingsLabel, e.runs, e.baselineRuns])).toEqual([
      ['plb', 'think time 1s · readings paper', 1, 1],
      ['static', 'think time 1s · readings paper', 1, 1],
      ['plb', 'think time 250ms · readings plb', 2, 2],
      ['static', 'think time 250ms · readings plb', 2, 2],
    ]);
  });

  it('compares readings canonically, mixes normalised, a missing field only with a missing one', () => {
    const summaries = loaded.map((r) =>
      r.summary.runId === 'demo-cascade-plb-2'
        ? { ...r.summary, mix: { premium: 1, freemium: 3 } }
        : r.summary,
    );
    const same = withConfigs(
      (id, c) =>
        ({
          ...c,
          readings: id.endsWith('-1')
            ? { donors: 'above-target', canonicalize: 'borrowed', reference: 'literal', repair: 'target' }
            : { repair: 'target', reference: 'literal', canonicalize: 'borrowed', donors: 'above-target' },
        }) as RunConfig,
      summaries,
    );
    expect(same.map((g) => g.runIds.length)).toEqual([3, 3, 3]);
    const split = withConfigs((id, c) => (id.endsWith('-1') ? { ...c, oracle: false } : c));
    expect(split).toHaveLength(6);
    expect(differLine(settingsDiff(split))).toBe('groups differ in: oracle (off vs unknown)');
  });

  it('tells plans of one name apart by their events', () => {
    const groups = withConfigs((id, c) =>
      id.endsWith('-1') ? { ...c, plan: { ...c.plan!, events: c.plan!.events.slice(0, 2) } } : c,
    );
    expect(groups).toHaveLength(6);
    const line = differLine(settingsDiff(groups));
    expect(line).toMatch(
      /^groups differ in: plan \(demo-cascade #[0-9a-f]{6} vs demo-cascade #[0-9a-f]{6}\)$/,
    );
    // The event's line in the file is not part of the plan.
    const moved = withConfigs((id, c) =>
      id.endsWith('-1')
        ? { ...c, plan: { ...c.plan!, events: c.plan!.events.map((e) => ({ ...e, line: 99 })) } }
        : c,
    );
    expect(moved).toHaveLength(3);
  });
});
