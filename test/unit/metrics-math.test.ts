import { describe, expect, it } from 'vitest';
import { newLatencyHistogram, toLatencyUs } from '../../src/metrics/hdr/histogram.js';
import {
  coefficientOfVariation,
  goodputRetention,
  mean,
  nearestRank,
  p95Inflation,
  percentileMs,
  percentilesMs,
  perSecond,
  populationStddev,
  round,
} from '../../src/metrics/math.js';

describe('metric math', () => {
  it('mean, population stddev and coefficient of variation', () => {
    expect(mean([1, 2, 3, 4])).toBe(2.5);
    expect(mean([])).toBeNull();
    expect(populationStddev([2, 4, 4, 4, 5, 5, 7, 9])).toBe(2);
    expect(coefficientOfVariation([2, 4, 4, 4, 5, 5, 7, 9])).toBe(0.4);
    expect(coefficientOfVariation([0.5, 0.5, 0.5])).toBe(0);
    expect(coefficientOfVariation([0, 0])).toBeNull();
    expect(coefficientOfVariation([])).toBeNull();
  });

  it('goodput retention and p95 inflation against ref', () => {
    expect(goodputRetention(50, 100)).toBe(0.5);
    expect(goodputRetention(120, 100)).toBe(1.2);
    expect(goodputRetention(10, 0)).toBeNull();
    expect(goodputRetention(null, 10)).toBeNull();
    expect(p95Inflation(15, 10)).toBe(0.5);
    expect(p95Inflation(10, 10)).toBe(0);
    expect(p95Inflation(5, 10)).toBe(-0.5);
    expect(p95Inflation(null, 10)).toBeNull();
    expect(p95Inflation(10, null)).toBeNull();
    expect(p95Inflation(10, 0)).toBeNull();
  });

  it('rates and nearest-rank percentiles', () => {
    expect(perSecond(300, 30_000)).toBe(10);
    expect(perSecond(5, 0)).toBe(0);
    const ten = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(nearestRank(ten, 50)).toBe(5);
    expect(nearestRank(ten, 95)).toBe(10);
    expect(nearestRank(ten, 10)).toBe(1);
    expect(nearestRank(ten, 0)).toBe(1);
    expect(nearestRank([], 50)).toBeNull();
  });

  it('percentiles in ms from a microsecond histogram', () => {
    const h = newLatencyHistogram();
    expect(percentilesMs(h)).toEqual({ p50: null, p95: null, p99: null });
    // 1..2000 us are below 2048, where 3 significant digits are exact.
    for (let us = 1; us <= 2000; us++) h.recordValue(us);
    expect(percentilesMs(h)).toEqual({ p50: 1, p95: 1.9, p99: 1.98 });
  });

  it('latency conversion and rounding', () => {
    expect(toLatencyUs(1.5)).toBe(1500);
    expect(toLatencyUs(-3)).toBe(0);
    expect(toLatencyUs(Number.NaN)).toBe(0);
    expect(toLatencyUs(1e9)).toBe(60_000_000);
    expect(round(1.23456, 3)).toBe(1.235);
    expect(round(null, 3)).toBeNull();
    expect(round(Number.POSITIVE_INFINITY, 3)).toBeNull();
  });

  it('nearest rank of a list and of a histogram agree (one method for one run)', () => {
    // 1..37 ms: exact at 3 significant digits, an odd count so ranks fall between values.
    const xs = Array.from({ length: 37 }, (_, i) => (i + 1) * 1000);
    const h = newLatencyHistogram();
    for (const x of xs) h.recordValue(x);
    // Same rank: within the histogram's resolution (3 significant digits) of the exact value.
    for (const p of [1, 10, 25, 50, 52, 90, 95, 99, 100]) {
      const exact = (nearestRank(xs, p) as number) / 1000;
      expect(Math.abs((percentileMs(h, p) as number) - exact) / exact).toBeLessThan(1e-3);
    }
  });
});
