import { describe, expect, it } from 'vitest';
import { DEFAULT_LAG_WEIGHTS, lagWeight, parseLagWeights } from '../../src/router/lag-weight.js';

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
