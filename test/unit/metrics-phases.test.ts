import { describe, expect, it } from 'vitest';
import { computePhases, livePhaseName, type FaultMark } from '../../src/faults/actions.js';
import { phaseIndexAt } from '../../src/metrics/phases.js';
import { faultIntervalOf, faultIntervalPhases } from '../../src/metrics/summary/fault-interval.js';

const R = ['r1', 'r2', 'r3', 'r4', 'r5'];
const base = { refWindowMs: 30_000, warmupMs: 10_000, replicas: R };
const f = (tMs: number, replica: string, action: string): FaultMark => ({ tMs, replica, action });

describe('computePhases', () => {
  it('no faults: one steady phase from warm-up end to end', () => {
    expect(computePhases({ ...base, faults: [], endMs: 60_000 })).toEqual([
      { name: 'steady', startMs: 10_000, endMs: 60_000, survivors: 5, down: [], kind: 'steady' },
    ]);
    // Interrupted during warm-up: nothing to report.
    expect(computePhases({ ...base, faults: [], endMs: 8_000 })).toEqual([]);
  });

  it('single fault: ref then down-1, then rejoin-1', () => {
    const phases = computePhases({
      ...base,
      faults: [f(120_000, 'r1', 'down'), f(210_000, 'r1', 'rejoin')],
      endMs: 300_000,
    });
    expect(phases).toEqual([
      { name: 'ref', startMs: 90_000, endMs: 120_000, survivors: 5, down: [], kind: 'ref' },
      { name: 'down-1', startMs: 120_000, endMs: 210_000, survivors: 4, down: ['r1'], kind: 'down' },
      { name: 'rejoin-1', startMs: 210_000, endMs: 300_000, survivors: 5, down: [], kind: 'recovery' },
    ]);
  });

  it('cascade: counts per action, K+ and down lists follow the events', () => {
    const phases = computePhases({
      ...base,
      faults: [
        f(60_000, 'r1', 'down'),
        f(90_000, 'r3', 'stop'),
        f(120_000, 'r1', 'rejoin'),
        f(150_000, 'r3', 'rejoin'),
      ],
      endMs: 180_000,
    });
    expect(phases.map((p) => [p.name, p.startMs, p.endMs, p.survivors, p.down])).toEqual([
      ['ref', 30_000, 60_000, 5, []],
      ['down-1', 60_000, 90_000, 4, ['r1']],
      ['stop-1', 90_000, 120_000, 3, ['r1', 'r3']],
      ['rejoin-1', 120_000, 150_000, 4, ['r3']],
      ['rejoin-2', 150_000, 180_000, 5, []],
    ]);
  });

  it('pause, unpause and throttle: throttle keeps K+', () => {
    const phases = computePhases({
      ...base,
      faults: [f(50_000, 'r2', 'pause'), f(60_000, 'r4', 'throttle'), f(70_000, 'r2', 'unpause')],
      endMs: 80_000,
    });
    expect(phases.map((p) => [p.name, p.survivors, p.down])).toEqual([
      ['ref', 5, []],
      ['pause-1', 4, ['r2']],
      ['throttle-1', 4, ['r2']],
      ['unpause-1', 5, []],
    ]);
    // ref is clipped at the end of warm-up: [max(50-30, 10), 50).
    expect(phases[0]?.startMs).toBe(20_000);
  });

  it('simultaneous events form one boundary named after the last one', () => {
    const phases = computePhases({
      ...base,
      faults: [
        f(60_000, 'r1', 'down'),
        f(60_000, 'r2', 'down'),
        f(60_000.5, 'r3', 'down'),
        f(90_000, 'r1', 'rejoin'),
      ],
      endMs: 120_000,
    });
    expect(phases).toEqual([
      { name: 'ref', startMs: 30_000, endMs: 60_000, survivors: 5, down: [], kind: 'ref' },
      {
        name: 'down-3',
        startMs: 60_000,
        endMs: 90_000,
        survivors: 2,
        down: ['r1', 'r2', 'r3'],
        kind: 'down',
      },
      {
        name: 'rejoin-1',
        startMs: 90_000,
        endMs: 120_000,
        survivors: 3,
        down: ['r2', 'r3'],
        kind: 'recovery',
      },
    ]);
  });

  it('events out of order are sorted; the order at one time is kept', () => {
    const phases = computePhases({
      ...base,
      faults: [f(90_000, 'r1', 'rejoin'), f(60_000, 'r1', 'down'), f(60_000, 'r1', 'rejoin')],
      endMs: 100_000,
    });
    expect(phases.map((p) => [p.name, p.survivors])).toEqual([
      ['ref', 5],
      ['rejoin-1', 5],
      ['rejoin-2', 5],
    ]);
  });

  it('a fault before the end of warm-up: no ref, the phase starts at warm-up end', () => {
    const phases = computePhases({
      ...base,
      faults: [f(5_000, 'r1', 'down'), f(8_000, 'r2', 'down'), f(40_000, 'r1', 'rejoin')],
      endMs: 60_000,
    });
    expect(phases).toEqual([
      { name: 'down-2', startMs: 10_000, endMs: 40_000, survivors: 3, down: ['r1', 'r2'], kind: 'down' },
      { name: 'rejoin-1', startMs: 40_000, endMs: 60_000, survivors: 4, down: ['r2'], kind: 'recovery' },
    ]);
  });

  it('a run that stopped early ends its last phase at endMs and drops later ones', () => {
    const phases = computePhases({ ...base, faults: [f(60_000, 'r1', 'down')], endMs: 60_000 });
    expect(phases.map((p) => p.name)).toEqual(['ref']);
  });
});

describe('live phase name and lookup', () => {
  const faults = [f(60_000, 'r1', 'down'), f(60_000, 'r2', 'down'), f(90_000, 'r1', 'rejoin')];
  it('warmup, steady, then the latest boundary', () => {
    expect(livePhaseName(faults, 5_000, 10_000)).toBe('warmup');
    expect(livePhaseName(faults, 30_000, 10_000)).toBe('steady');
    expect(livePhaseName(faults, 60_000, 10_000)).toBe('down-2');
    expect(livePhaseName(faults, 95_000, 10_000)).toBe('rejoin-1');
  });
  it('phaseIndexAt: start inclusive, end exclusive', () => {
    const phases = computePhases({ ...base, faults, endMs: 120_000 });
    expect(phaseIndexAt(phases, 29_999)).toBe(-1);
    expect(phaseIndexAt(phases, 30_000)).toBe(0);
    expect(phaseIndexAt(phases, 59_999.9)).toBe(0);
    expect(phaseIndexAt(phases, 60_000)).toBe(1);
    expect(phaseIndexAt(phases, 119_999)).toBe(2);
    expect(phaseIndexAt(phases, 120_000)).toBe(-1);
  });
});

describe("faultIntervalOf (the paper's whole fault interval)", () => {
  const rq3 = computePhases({
    ...base,
    endMs: 360_000,
    faults: [
      f(120_000, 'r1', 'down'),
      f(180_000, 'r2', 'down'),
      f(240_000, 'r1', 'rejoin'),
      f(300_000, 'r2', 'rejoin'),
    ],
  });

  it('runs from the first down until every replica is back', () => {
    expect(rq3.map((p) => p.name)).toEqual(['ref', 'down-1', 'down-2', 'rejoin-1', 'rejoin-2']);
    expect(faultIntervalOf(rq3)).toEqual({
      name: 'fault',
      startMs: 120_000,
      endMs: 300_000,
      survivors: 3,
      down: ['r1', 'r2'],
    });
    expect(faultIntervalPhases(rq3)?.map((p) => [p.name, p.startMs, p.endMs])).toEqual([
      ['ref', 90_000, 120_000],
      ['fault', 120_000, 300_000],
    ]);
  });

  it('to the end of the run when a replica never rejoins; none without a down', () => {
    const rq2 = computePhases({
      ...base,
      endMs: 300_000,
      faults: [f(120_000, 'r1', 'down'), f(180_000, 'r2', 'down'), f(240_000, 'r1', 'rejoin')],
    });
    expect(faultIntervalOf(rq2)).toMatchObject({ startMs: 120_000, endMs: 300_000, survivors: 3 });
    expect(faultIntervalOf(computePhases({ ...base, faults: [], endMs: 60_000 }))).toBeUndefined();
  });
});
