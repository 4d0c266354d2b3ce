import { parseLagWeights } from '../../src/cli/router-values.js';
import { describe, expect, it } from 'vitest';
import { createRouter } from '../../src/router/index.js';
import { DEFAULT_LAG_WEIGHTS, lagWeight } from '../../src/router/lag-weight.js';

describe('lag-derived weight', () => {
  it('is full up to the low threshold, linear to the floor at the high one, drained above', () => {
    expect(lagWeight(0)).toBe(1);
    expect(lagWeight(200)).toBe(1);
    expect(lagWeight(500)).toBeCloseTo(0.5);
    expect(lagWeight(740)).toBeCloseTo(0.1);
    // The floor: never below 10 % before draining.
    expect(lagWeight(790)).toBe(0.1);
    expect(lagWeight(800)).toBe(0.1);
    expect(lagWeight(801)).toBe(0);
  });

  it('never increases with lag', () => {
    let last = 1;
    for (let lag = 0; lag <= 1200; lag += 7) {
      const w = lagWeight(lag);
      expect(w).toBeLessThanOrEqual(last);
      last = w;
    }
  });

  it('leaves the weight alone when the lag is unknown', () => {
    expect(lagWeight(null)).toBe(1);
    expect(lagWeight(Number.NaN)).toBe(1);
  });

  it('parses low:high:floor, defaults as the reference has them', () => {
    expect(parseLagWeights('200ms:800ms:10%')).toEqual(DEFAULT_LAG_WEIGHTS);
    expect(parseLagWeights('1s:2.5s:25%')).toEqual({ lowMs: 1000, highMs: 2500, floor: 0.25 });
  });

  it('names the flag on bad input', () => {
    for (const bad of [
      '200ms:800ms',
      '800ms:200ms:10%',
      '200:800ms:10%',
      '200ms:800ms:0%',
      '200ms:800ms:150%',
    ])
      expect(() => parseLagWeights(bad)).toThrow(/^--lag-weights: /);
  });
});

describe('Router.setWeight', () => {
  it('moves new wlc sessions away from a replica whose weight fell, and back when it recovers', () => {
    const r = createRouter({ strategy: 'wlc', replicas: ['r1', 'r2'], slowStartMs: 0 });
    r.setWeight('r1', lagWeight(790));
    const picks = Array.from({ length: 11 }, () => r.admit('premium', 0).replica);
    // r1 at 10 % of r2's weight: r2 takes about ten sessions for each one r1 takes.
    expect(picks.filter((p) => p === 'r1')).toHaveLength(1);
    r.setWeight('r1', 1);
    expect(r.snapshot().find((s) => s.id === 'r1')?.weight).toBe(1);
    const next = Array.from({ length: 9 }, () => r.admit('premium', 0).replica);
    expect(next.filter((p) => p === 'r1')).toHaveLength(9);
  });

  it('takes only a finite weight > 0 of a known replica', () => {
    const r = createRouter({ strategy: 'plb', replicas: ['r1', 'r2', 'r3', 'r4', 'r5'] });
    expect(() => r.setWeight('r1', 0)).toThrow(/weight of r1 must be a finite number > 0/);
    expect(() => r.setWeight('r9', 1)).toThrow();
    r.setWeight('r1', 0.5);
    expect(r.snapshot()[0]?.weight).toBe(0.5);
  });
});
