import { describe, expect, it } from 'vitest';
import type { SecondRecord } from '../../src/metrics/store/seconds.js';
import type { TimelineRow } from '../../src/metrics/store/timeline.js';
import { spreadSeries } from '../../src/report/charts/signal-charts.js';
import { signalsLine } from '../../src/report/tables/signals-table.js';
import type { PhaseSummary } from '../../src/run-format/summary.js';

const cells = (cpu: number | null, healthy: boolean) => ({
  cpu,
  lagMs: null,
  lagBytes: null,
  premium: 0,
  freemium: 0,
  role: 'shared',
  healthy,
  unreachable: 0,
  overloaded: 0,
  slow: 0,
});

function row(tS: number, a: number, b: number, bHealthy = true): TimelineRow {
  return {
    tS,
    phase: 'ref',
    harness: { cpu: null, loopP99Ms: null, loopMaxMs: null, hostBusy: null, hostSteal: null },
    classes: {},
    replicas: { a: cells(a, true), b: cells(bHealthy ? b : null, bHealthy) },
  };
}

const sec = (t: number, qa: number, qb: number): SecondRecord => ({
  t,
  classes: {},
  replicas: { a: { opened: 1, queries: qa }, b: { opened: 1, queries: qb } },
  loop: null,
});

describe('spreadSeries', () => {
  it('max/mean over a sliding window of the replicas healthy in that second', () => {
    const timeline = [row(0, 0.6, 0.2), row(1, 0.6, 0.2), row(2, 0.5, 0, false)];
    const seconds = new Map([
      [0, sec(0, 30, 10)],
      [1, sec(1, 30, 10)],
      [2, sec(2, 40, 0)],
    ]);
    const s = spreadSeries(timeline, seconds, 2);
    // t=0: queries 30/10 -> 30/20 = 1.5; CPU 0.6/0.2 -> 1.5
    expect(s[0]).toEqual({ t: 0, queryShareSpread: 1.5, cpuShareSpread: 1.5 });
    // t=1: window [0,1]: 60/20 -> 1.5
    expect(s[1]?.queryShareSpread).toBe(1.5);
    // t=2: b is not healthy: only a counts, spread 1.
    expect(s[2]).toEqual({ t: 2, queryShareSpread: 1, cpuShareSpread: 1 });
  });

  it('no query spread without seconds.jsonl (older runs)', () => {
    expect(spreadSeries([row(0, 0.5, 0.5)], new Map())[0]).toEqual({
      t: 0,
      queryShareSpread: null,
      cpuShareSpread: 1,
    });
  });
});

describe('signalsLine', () => {
  const phase = (name: string, signals?: PhaseSummary['signals']): PhaseSummary =>
    ({ name, ...(signals ? { signals } : {}) }) as PhaseSummary;
  const quiet = {
    queryShareSpread: 1.1,
    cpuShareSpread: 1.2,
    silent: [],
    weightRatio: {},
    weightDeviation: 0.1,
    alerts: [],
  };
  it('names the signals over threshold per phase, or says there is none', () => {
    expect(signalsLine([phase('ref', quiet)])).toBe('balance signals: no alert');
    expect(signalsLine([phase('ref')])).toBe('balance signals: -');
    const loud = phase('rejoin-1', {
      ...quiet,
      queryShareSpread: 1.46,
      silent: ['r2'],
      alerts: ['queryShareSpread', 'silent'],
    });
    expect(signalsLine([phase('ref', quiet), loud])).toBe(
      'balance signals: ALERT rejoin-1 query spread 1.46 > 1.4, silent r2',
    );
  });
});
