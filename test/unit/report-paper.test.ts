// Issue 12: the PLB paper's figures per experiment (RQ1, Fig. 4-6) and paper vs measured, from
// synthetic summaries of the paper plans.
import { describe, expect, it } from 'vitest';
import type { ClassPhaseStats, PhaseSummary, RunSummary } from '../../src/run-format/summary.js';
import { aggregateRuns } from '../../src/report/aggregate.js';
import { paperQuestionOf, paperFigures } from '../../src/report/paper/figures.js';
import { PUBLISHED_CLAIMS, REPRODUCE_RULE } from '../../src/report/paper/published.js';
import { claimInterval, claimVerdict, fig5Interval, fig6Interval } from '../../src/report/paper/intervals.js';
import { renderReport } from '../../src/report/tables/render.js';
import { READING_PRESETS } from '../../src/router/readings.js';
import type { RunConfig } from '../../src/run-format/config.js';
import { renderComparisonHtml } from '../../src/report/html.js';
import { claimVerdictSchema, reportJsonSchema, type RunGroup } from '../../src/run-format/report.js';

/** Class stats with p95 (ms), goodput (q/s) and, outside ref, inflation against refP95. */
function cls(p95: number, goodput: number, refP95?: number, refGoodput?: number): ClassPhaseStats {
  return {
    p50: p95 / 2,
    p95,
    p99: p95 * 2,
    queries: goodput * 30,
    errors: 0,
    goodput,
    goodputRetention: refGoodput ? goodput / refGoodput : null,
    p95Inflation: refP95 ? p95 / refP95 - 1 : null,
    sessionsOpened: 10,
    sessionsClosed: 10,
    sessionsFailed: 0,
    sessionsCut: 0,
    admissionFailures: 0,
    lifetimeP50Ms: p95 * 100,
    lifetimeP95Ms: p95 * 200,
  };
}

type Spec = { p: [number, number]; f: [number, number] };

function phase(
  name: string,
  startS: number,
  endS: number,
  down: string[],
  s: Spec,
  ref?: Spec,
): PhaseSummary {
  const ids = ['r1', 'r2', 'r3', 'r4', 'r5'];
  const replicas = Object.fromEntries(
    ids.map((id) => [
      id,
      { up: !down.includes(id), cpuMean: down.includes(id) ? null : 0.6, sessionsOpened: 1, queries: 1 },
    ]),
  );
  return {
    name,
    startS,
    endS,
    survivors: 5 - down.length,
    classes: {
      premium: cls(s.p[0], s.p[1], ref?.p[0], ref?.p[1]),
      freemium: cls(s.f[0], s.f[1], ref?.f[0], ref?.f[1]),
    },
    replicas,
    cpuMean: 0.6,
    cpuCv: 0.1,
  };
}

function run(
  runId: string,
  plan: string,
  strategy: string,
  premium: number,
  specs: [string, number, number, string[], Spec][],
  fault?: Spec,
): RunSummary {
  const ref = specs[0]![4];
  const phases = specs.map(([n, a, b, down, s], i) => phase(n, a, b, down, s, i === 0 ? undefined : ref));
  return {
    schemaVersion: 1,
    runId,
    strategy,
    plan,
    mix: { premium, freemium: 100 - premium },
    clients: 1000,
    seed: 1,
    complete: true,
    startedAt: '2026-11-30T00:00:00.000Z',
    durationS: 300,
    phases,
    ...(fault
      ? { faultInterval: { ...phase('fault', 120, 300, ['r1', 'r2'], fault, ref), cpuMean: 0.7, cpuCv: 0.2 } }
      : {}),
    detection: [],
  };
}

const REF: Spec = { p: [100, 100], f: [100, 300] };
/** RQ2: plb halves... premium p95 80 vs rr 100 in down-2 (+20 %), freemium 125 vs 100 (-25 %). */
function rq2(strategy: 'plb' | 'rr', premium: number, i: number): RunSummary {
  const plb = strategy === 'plb';
  const down2: Spec = plb ? { p: [80, 90], f: [125, 200] } : { p: [100, 40], f: [100, 250] };
  return run(
    `rq2-${strategy}-${premium}-${i}`,
    'paper-rq2',
    strategy,
    premium,
    [
      ['ref', 90, 120, [], REF],
      ['down-1', 120, 180, ['r1'], plb ? { p: [90, 95], f: [120, 250] } : { p: [100, 80], f: [100, 280] }],
      ['down-2', 180, 240, ['r1', 'r2'], down2],
      ['rejoin-1', 240, 300, ['r2'], REF],
    ],
    down2,
  );
}

function rq3(premium: number): RunSummary {
  return run(`rq3-${premium}`, 'paper-rq3', 'plb', premium, [
    ['ref', 90, 120, [], REF],
    ['down-1', 120, 180, ['r1'], { p: [90, 95], f: [110, 250] }],
    ['down-2', 180, 240, ['r1', 'r2'], { p: [80, 90], f: [130, 200] }],
    ['rejoin-1', 240, 300, ['r2'], REF],
    ['rejoin-2', 300, 360, [], REF],
  ]);
}

describe('paper experiments', () => {
  it('are known by plan name, quick variants too', () => {
    expect(paperQuestionOf('paper-rq1')).toBe('rq1');
    expect(paperQuestionOf('paper-rq3-quick')).toBe('rq3');
    const quick = renderReport(aggregateRuns([{ ...rq3(25), plan: 'paper-rq3-quick' }]));
    expect(quick).toContain('paper-rq3-quick: the --quick variant (scaled timings)');
    expect(['cascade', 'paper-rq4', 'paper-rq2-slow'].map(paperQuestionOf)).toEqual([null, null, null]);
    expect(paperFigures(aggregateRuns([{ ...rq3(25), plan: 'cascade' }]))).toBeNull();
  });

  it('runs of other settings (readings) are an experiment of their own, labelled', () => {
    const plain = rq3(25);
    const paper = { ...rq3(25), runId: 'rq3-25-paper' };
    const configs = new Map<RunSummary, RunConfig>([
      [plain, { readings: { ...READING_PRESETS.plb } }],
      [paper, { readings: { ...READING_PRESETS.paper } }],
    ]);
    const report = paperFigures(aggregateRuns([plain, paper], { configs }))!;
    expect(report.experiments.map((e) => [e.plan, e.settings])).toEqual([
      ['paper-rq3', 'readings paper'],
      ['paper-rq3', 'readings plb'],
    ]);
    for (const e of report.experiments) expect(e.fig6.length).toBeGreaterThan(0);
  });
});

describe('RQ2: Fig. 4, Fig. 5 and the published claims', () => {
  const runs = [25, 50].flatMap((m) => [0, 1].flatMap((i) => [rq2('plb', m, i), rq2('rr', m, i)]));
  const report = paperFigures(aggregateRuns(runs))!;
  const f = report.experiments[0]!;

  it('phases in run order, then the whole fault interval', () => {
    expect(f.experiment).toBe('rq2');
    expect(f.phases).toEqual(['ref', 'down-1', 'down-2', 'rejoin-1', 'fault']);
  });

  it('Fig. 4: 25:75, per phase, class, metric and strategy, median with IQR', () => {
    expect(f.fig4?.mix).toBe('25:75');
    const bar = f.fig4?.bars.find(
      (b) => b.phase === 'down-2' && b.cls === 'premium' && b.metric === 'goodput' && b.strategy === 'rr',
    );
    expect(bar?.value).toMatchObject({ median: 40, n: 2 });
    expect(f.fig4?.bars).toHaveLength(3 * 2 * 5 * 2);
  });

  it('Fig. 5: (rr - plb) / rr, positive = plb better, per class, mix and fault phase', () => {
    const cell = (cls: string, phase: string) =>
      f.fig5.find((c) => c.mix === '25:75' && c.cls === cls && c.phase === phase);
    expect(cell('premium', 'down-2')?.change).toBeCloseTo(0.2);
    expect(cell('freemium', 'down-2')?.change).toBeCloseTo(-0.25);
    expect(cell('premium', 'fault')?.change).toBeCloseTo(0.2);
    expect(f.fig5.some((c) => c.phase === 'ref')).toBe(false);
  });

  it('paper vs measured: the measured value; without per-second data, no interval', () => {
    const claim = (id: string, phase: string, mix: string) =>
      f.claims.find((c) => c.id === id && c.phase === phase && c.mix === mix);
    // Premium goodput 90 vs 40: 2.25x > 2.
    expect(claim('rq2-goodput-2x', 'down-2', '25:75')).toMatchObject({
      measured: 2.25,
      interval: null,
      verdict: 'no interval',
    });
    // +20.0 % vs the published +18.2 % (within 5 pp), but no interval to tell.
    expect(claim('rq2-p95-18.2', 'down-2', '25:75')?.verdict).toBe('no interval');
    // down-1 premium: 90 vs 100 = +10 % in 6.0..33.4.
    expect(claim('fig5-premium', 'down-1', '50:50')?.measured).toBeCloseTo(10);
    // Freemium down-1: 120 vs 100 = -20 % in -31.8..-14.0.
    expect(claim('fig5-freemium', 'down-1', '25:75')?.measured).toBeCloseTo(-20);
    expect(f.claims.every((c) => c.source.length > 20)).toBe(true);
    expect(report.rule).toBe(REPRODUCE_RULE);
  });

  it('renders a compact Paper figures section and valid --json', () => {
    const text = renderReport(aggregateRuns(runs));
    expect(text).toContain('Paper figures · paper-rq2 · Fig. 5');
    expect(text).toContain('paper vs measured');
    const section = text.slice(text.indexOf('Paper figures'));
    const widest = Math.max(
      ...section
        .split('\n')
        .filter((l) => !l.includes('"') && !l.startsWith('rule'))
        .map((l) => [...l].length),
    );
    expect(widest).toBeLessThanOrEqual(110);
    const json = JSON.parse(renderReport(aggregateRuns(runs), { format: 'json' })) as unknown;
    const parsed = reportJsonSchema.parse(json);
    expect(parsed.paper?.experiments[0]?.plan).toBe('paper-rq2');
    expect(parsed.groups[0]?.faultInterval?.name).toBe('fault');
    expect(renderReport(aggregateRuns(runs), { format: 'markdown' })).toContain('## Paper figures');
  });

  it('the comparison page draws Fig. 4 and Fig. 5 as SVG, with the tables', async () => {
    const html = await renderComparisonHtml(aggregateRuns(runs));
    const paper = html.slice(html.indexOf('<h2>Paper figures</h2>'), html.indexOf('<h2>Tables</h2>'));
    expect(paper).toContain('<h3>paper-rq2 (RQ2)</h3>');
    expect(paper.match(/<svg/g)).toHaveLength(2);
    expect(paper).toContain('Fig. 4 (paper-rq2, mix 25:75)');
    expect(paper).toContain('positive = plb better');
    expect(paper).toContain('paper vs measured');
  });
});

describe("RQ3: Fig. 6 against each class's own ref", () => {
  const f = paperFigures(aggregateRuns([25, 50].map(rq3)))!.experiments[0]!;

  it('p95 change vs ref per phase and mix, and the F - P gap in points', () => {
    const cell = f.fig6.find((c) => c.mix === '25:75' && c.phase === 'down-2');
    expect(cell?.premium).toBeCloseTo(-0.2);
    expect(cell?.freemium).toBeCloseTo(0.3);
    expect(cell?.gapPp).toBeCloseTo(50);
    expect(f.phases).toEqual(['ref', 'down-1', 'down-2', 'rejoin-1', 'rejoin-2']);
  });

  it('claims per mix; 75:25 has no runs: not measured', () => {
    const verdicts = f.claims.filter((c) => c.id === 'fig6-premium-down-2').map((c) => [c.mix, c.verdict]);
    expect(verdicts).toEqual([
      ['25:75', 'no interval'],
      ['50:50', 'no interval'],
      ['75:25', 'not measured'],
    ]);
    // Freemium down-2 at +30 % (in 21.6..33.9), measured without an interval.
    expect(f.claims.find((c) => c.id === 'fig6-freemium-down-2' && c.mix === '50:50')?.measured).toBeCloseTo(
      30,
    );
  });
});

describe('RQ1: fault-interval retention and CPU, measured only', () => {
  it('per mix and strategy from the fault interval', () => {
    const runs = ['plb', 'static'].map((s) =>
      run(
        `rq1-${s}`,
        'paper-rq1',
        s,
        25,
        [
          ['ref', 90, 120, [], REF],
          ['down-1', 120, 210, ['r1'], REF],
        ],
        {
          p: [100, s === 'plb' ? 95 : 70],
          f: [100, 300],
        },
      ),
    );
    const f = paperFigures(aggregateRuns(runs))!.experiments[0]!;
    expect(
      f.rq1.map((r) => [r.mix, r.strategy, r.retention.median, r.cpuMean.median, r.cpuCv.median]),
    ).toEqual([
      ['25:75', 'plb', 0.95, 0.7, 0.2],
      ['25:75', 'static', 0.7, 0.7, 0.2],
    ]);
    expect(f.claims).toEqual([]);
    expect(renderReport(aggregateRuns(runs))).toContain('RQ1: the paper publishes no number');
  });
});

describe('verdict rule: the interval against the accepted range', () => {
  const byId = (id: string) => PUBLISHED_CLAIMS.find((c) => c.id === id)!;
  const at = (v: number) => ({ lo: v, hi: v });
  it('a point interval: sign, widened range, ratio above', () => {
    const p = byId('fig5-premium');
    expect([5, 1.1, 38.4, 38.5, -3].map((v) => claimVerdict(p, v, at(v)))).toEqual([
      'reproduced',
      'reproduced',
      'reproduced',
      'contradicted',
      'contradicted',
    ]);
    expect(claimVerdict(p, null, null)).toBe('not measured');
    expect(claimVerdict(byId('fig5-freemium'), 2, at(2))).toBe('contradicted');
    expect([2.01, 2, 1.5].map((v) => claimVerdict(byId('rq2-goodput-2x'), v, at(v)))).toEqual([
      'reproduced',
      'contradicted',
      'contradicted',
    ]);
  });
  it('reads the verdicts of reports and maps written before "no interval" existed', () => {
    for (const v of ['reproduced', 'contradicted', 'inconclusive', 'not measured'])
      expect(claimVerdictSchema.parse(v)).toBe(v);
  });
  it('inside: reproduced; outside: contradicted; across an edge: inconclusive; none: no interval', () => {
    const p = byId('fig5-premium'); // 6.0..33.4 %, accepted 1.0..38.4
    expect(claimVerdict(p, 20, { lo: 10, hi: 30 })).toBe('reproduced');
    expect(claimVerdict(p, 50, { lo: 45, hi: 60 })).toBe('contradicted');
    expect(claimVerdict(p, -10, { lo: -20, hi: -2 })).toBe('contradicted');
    expect(claimVerdict(p, 20, { lo: -5, hi: 45 })).toBe('inconclusive');
    expect(claimVerdict(p, 36, { lo: 30, hi: 42 })).toBe('inconclusive');
    expect(claimVerdict(p, 20, null)).toBe('no interval');
  });
});

describe('with repeats, the interval across the runs decides', () => {
  const est = (value: number) => ({ value, lo: null, hi: null });
  const metrics = (p95: number, goodput: number) => ({
    p50: est(p95 / 2),
    p95: est(p95),
    p99: est(p95 * 2),
    goodput: est(goodput),
    lifetime: est(1000),
  });
  /** Per phase, each run's premium and freemium p95 (ms); the pooled cells have no interval. */
  type Runs = Record<string, [number, number][]>;
  function group(key: string, runs: Runs, pooledRefChange?: { lo: number; hi: number }): RunGroup {
    const phases = Object.entries(runs).map(([name, perRun]) => {
      const cellOf = (i: 0 | 1) => ({
        seconds: 15 * perRun.length,
        block: null,
        metrics: metrics(perRun[0]![i], 10),
        note: 'too few seconds for an interval',
        perRun: perRun.map((r, n) => ({ runId: `${key}-${n}`, ...metrics(r[i], 10 + n) })),
        ...(name === 'ref'
          ? {}
          : {
              vsRef: {
                p95: {
                  delta: null,
                  lo: pooledRefChange?.lo ?? null,
                  hi: pooledRefChange?.hi ?? null,
                  verdict: 'no interval' as const,
                  detectable: null,
                },
              },
            }),
      });
      return { name, classes: { premium: cellOf(0), freemium: cellOf(1) } };
    });
    return {
      key,
      evidence: { method: 'test', baselineKey: 'rr', phases, invalid: [], notes: [] },
    } as unknown as RunGroup;
  }
  const byId = (id: string) => PUBLISHED_CLAIMS.find((c) => c.id === id)!;

  it("Fig. 6: each run's own change against its ref, a t interval over three runs", () => {
    // Premium +300, +318, +289 % in down-2: far from the published -23..-15 %.
    const g = group('plb', {
      ref: [
        [100, 100],
        [110, 100],
        [90, 100],
      ],
      'down-2': [
        [400, 150],
        [460, 160],
        [350, 140],
      ],
    });
    const iv = claimInterval(byId('fig6-premium-down-2'), 'down-2', g, undefined)!;
    expect(iv.lo).toBeGreaterThan(250);
    expect(iv.hi).toBeLessThan(350);
    expect(claimVerdict(byId('fig6-premium-down-2'), 305, iv)).toBe('contradicted');
    expect(fig6Interval(g, 'down-2', 'premium')!.lo).toBeCloseTo(iv.lo / 100);
    // The gap per run: +50-300, +60-318.2, +40-288.9 points.
    const gap = claimInterval(byId('fig6-gap-down-2'), 'down-2', g, undefined)!;
    expect((gap.lo + gap.hi) / 2).toBeCloseTo((50 + 60 + 40 - 300 - 318.18 - 288.89) / 3, 0);
  });

  it('two runs and phases too short for blocks: no interval, and the verdict says so', () => {
    const two = group('plb', {
      ref: [
        [100, 100],
        [110, 100],
      ],
      'down-2': [
        [400, 150],
        [460, 160],
      ],
    });
    const iv = claimInterval(byId('fig6-premium-down-2'), 'down-2', two, undefined);
    expect(iv).toBeNull();
    expect(claimVerdict(byId('fig6-premium-down-2'), 305, iv)).toBe('no interval');
    // With the pooled bootstrap's interval (fewer than 3 runs), that one decides.
    const pooled = group('plb', { ref: [[100, 100]], 'down-2': [[400, 150]] }, { lo: 2.5, hi: 3.5 });
    expect(claimInterval(byId('fig6-premium-down-2'), 'down-2', pooled, undefined)).toEqual({
      lo: 250,
      hi: 350,
    });
  });

  it("Fig. 5: the ratio of plb's and rr's means over their runs", () => {
    const phases = (p: number[]): Runs => ({
      ref: p.map(() => [100, 100]),
      'down-1': p.map((v) => [v, 100]),
    });
    const plb = group('plb', phases([80, 82, 78]));
    const rr = group('rr', phases([100, 101, 99]));
    const iv = claimInterval(byId('fig5-premium'), 'down-1', plb, rr)!;
    // (rr - plb) / rr = 20 %: three runs a side, t with Welch's 2 degrees of freedom.
    expect(iv.lo).toBeGreaterThan(12);
    expect(iv.hi).toBeLessThan(28);
    expect(claimVerdict(byId('fig5-premium'), 20, iv)).toBe('reproduced');
    expect(fig5Interval(plb, rr, 'down-1', 'premium')!.hi).toBeCloseTo(iv.hi / 100);
  });
});
