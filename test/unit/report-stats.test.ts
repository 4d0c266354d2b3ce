import { describe, expect, it } from 'vitest';
import { quantile, stat } from '../../src/metrics/math.js';

describe('quantile (type 7, linear interpolation)', () => {
  it('matches R quantile(type=7) on 1..4', () => {
    // R: quantile(c(1,2,3,4)) -> 1.00 1.75 2.50 3.25 4.00
    expect(quantile([4, 1, 3, 2], 0)).toBe(1);
    expect(quantile([4, 1, 3, 2], 0.25)).toBeCloseTo(1.75, 12);
    expect(quantile([4, 1, 3, 2], 0.5)).toBeCloseTo(2.5, 12);
    expect(quantile([4, 1, 3, 2], 0.75)).toBeCloseTo(3.25, 12);
    expect(quantile([4, 1, 3, 2], 1)).toBe(4);
  });

  it('interpolates between order statistics of three repeats', () => {
    // h = 2p: q1 halfway between the 1st and 2nd, q3 halfway between the 2nd and 3rd
    expect(quantile([16, 10, 12], 0.25)).toBe(11);
    expect(quantile([16, 10, 12], 0.5)).toBe(12);
    expect(quantile([16, 10, 12], 0.75)).toBe(14);
  });

  it('handles one value, no values and a bad p', () => {
    expect(quantile([7], 0.25)).toBe(7);
    expect(quantile([], 0.5)).toBeNull();
    expect(() => quantile([1], 1.5)).toThrow(RangeError);
  });
});

describe('stat', () => {
  it('leaves out nulls and counts what remains', () => {
    expect(stat([3, null, 1, 2, undefined])).toEqual({ median: 2, q1: 1.5, q3: 2.5, n: 3 });
    expect(stat([null, null])).toEqual({ median: null, q1: null, q3: null, n: 0 });
  });

  it('does not reorder its input', () => {
    const xs = [3, 1, 2];
    stat(xs);
    expect(xs).toEqual([3, 1, 2]);
  });
});
