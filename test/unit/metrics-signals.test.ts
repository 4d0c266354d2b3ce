import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SIGNAL_THRESHOLDS,
  computeSignals,
  longestGapMs,
  shareSpread,
  type SignalInput,
} from '../../src/metrics/signals.js';

const rep = (id: string, o: Partial<SignalInput> = {}): SignalInput => ({
  id,
  up: true,
  queries: 100,
  sessionsOpened: 10,
  cpu: 0.5,
  weight: 1,
  longestQuietS: 1,
  ...o,
});

describe('shareSpread', () => {
  it('is max over mean, null without values or with a zero mean', () => {
    expect(shareSpread([1, 1, 1])).toBe(1);
    expect(shareSpread([3, 1, 1, 1])).toBe(2);
    expect(shareSpread([])).toBeNull();
    expect(shareSpread([0, 0])).toBeNull();
  });
});

describe('computeSignals', () => {
  it('an even fleet raises no alert and realises its weights', () => {
    const s = computeSignals([rep('a'), rep('b'), rep('c')], 30);
    expect(s).toEqual({
      queryShareSpread: 1,
      cpuShareSpread: 1,
      silent: [],
      weightRatio: { a: 1, b: 1, c: 1 },
      weightDeviation: 0,
      alerts: [],
    });
  });

  it('alerts on query and CPU spread over the guide thresholds (1.4 and 1.5)', () => {
    // queries 300,100,100: mean 166.7, spread 1.8; CPU 0.9,0.3,0.3: spread 1.8
    const s = computeSignals(
      [rep('a', { queries: 300, cpu: 0.9 }), rep('b', { cpu: 0.3 }), rep('c', { cpu: 0.3 })],
      30,
    );
    expect(s.queryShareSpread).toBe(1.8);
    expect(s.cpuShareSpread).toBe(1.8);
    expect(s.alerts).toEqual(['queryShareSpread', 'cpuShareSpread']);
  });

  it('only counts replicas up; a down replica is neither spread nor silent', () => {
    const s = computeSignals(
      [rep('a'), rep('b'), rep('c', { up: false, queries: 0, sessionsOpened: 0, cpu: null })],
      30,
    );
    expect(s.queryShareSpread).toBe(1);
    expect(s.silent).toEqual([]);
    expect(Object.keys(s.weightRatio)).toEqual(['a', 'b']);
  });

  it('a replica up with no new session for the window is silent', () => {
    const s = computeSignals([rep('a'), rep('b', { longestQuietS: 12, sessionsOpened: 2 })], 30);
    expect(s.silent).toEqual(['b']);
    expect(s.alerts).toContain('silent');
    // Without the gap, a whole span at least the window long with no session.
    const t = computeSignals(
      [rep('a', { longestQuietS: undefined }), rep('b', { longestQuietS: undefined, sessionsOpened: 0 })],
      10,
    );
    expect(t.silent).toEqual(['b']);
    const short = computeSignals(
      [rep('a', { longestQuietS: undefined }), rep('b', { longestQuietS: undefined, sessionsOpened: 0 })],
      5,
    );
    expect(short.silent).toEqual([]);
  });

  it('realised vs configured weight: share of sessions over share of weight', () => {
    // weights 2:1:1, sessions 10:10:10 -> a gets 1/3 of sessions for 1/2 of the weight.
    const s = computeSignals([rep('a', { weight: 2 }), rep('b'), rep('c')], 30);
    expect(s.weightRatio['a']).toBeCloseTo(2 / 3, 4);
    expect(s.weightRatio['b']).toBeCloseTo(4 / 3, 4);
    expect(s.weightDeviation).toBeCloseTo(1 / 3, 4);
    expect(s.alerts).not.toContain('weightDeviation');
    const t = computeSignals([rep('a', { sessionsOpened: 40 }), rep('b', { sessionsOpened: 5 })], 30);
    expect(t.alerts).toContain('weightDeviation');
  });

  it('takes other thresholds', () => {
    const s = computeSignals([rep('a', { queries: 120 }), rep('b')], 30, {
      ...DEFAULT_SIGNAL_THRESHOLDS,
      queryShareSpread: 1.05,
    });
    expect(s.alerts).toEqual(['queryShareSpread']);
  });
});

describe('longestGapMs', () => {
  it('covers start to first, between events, last to end, in any order', () => {
    expect(longestGapMs([], 0, 5000)).toBe(5000);
    expect(longestGapMs([3000, 1000], 0, 4000)).toBe(2000);
    expect(longestGapMs([500, 1000], 0, 9000)).toBe(8000);
  });
});
