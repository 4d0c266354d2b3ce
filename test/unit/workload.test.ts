import { describe, expect, it } from 'vitest';
import { HealthTracker } from '../../src/cluster/health.js';
import { isPlbError } from '../../src/core/errors.js';
import { expandSeries } from '../../src/bench/series.js';
import { makeQuery } from '../../src/workload/statements.js';
import { Rng } from '../../src/core/rng.js';
import { parseMix, splitByMix } from '../../src/workload/spec.js';

describe('Rng', () => {
  it('reproduces the same stream from the same seed', () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const xs = Array.from({ length: 100 }, () => a.next());
    expect(Array.from({ length: 100 }, () => b.next())).toEqual(xs);
    expect(new Rng(43).next()).not.toEqual(xs[0]);
  });

  it('stays in range and forks independent deterministic streams', () => {
    const r = new Rng(7);
    for (let i = 0; i < 1000; i++) {
      const x = r.next();
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThan(1);
      const n = r.int(3, 5);
      expect(n).toBeGreaterThanOrEqual(3);
      expect(n).toBeLessThanOrEqual(5);
    }
    expect(new Rng(1).fork(5).next()).toEqual(new Rng(1).fork(5).next());
    expect(new Rng(1).fork(5).next()).not.toEqual(new Rng(1).fork(6).next());
  });

  it('draws exponential values with the requested mean and weighted keys by weight', () => {
    const r = new Rng(3);
    let sum = 0;
    const n = 20_000;
    for (let i = 0; i < n; i++) sum += r.exp(10);
    expect(sum / n).toBeGreaterThan(9.5);
    expect(sum / n).toBeLessThan(10.5);
    const counts = { a: 0, b: 0, c: 0 };
    for (let i = 0; i < n; i++) counts[r.weighted({ a: 1, b: 3, c: 0 })]++;
    expect(counts.c).toBe(0);
    expect(counts.b / counts.a).toBeGreaterThan(2.7);
    expect(counts.b / counts.a).toBeLessThan(3.3);
  });
});

describe('mix', () => {
  it('parses premium:freemium and splits clients by it', () => {
    expect(parseMix('25:75')).toEqual({ premium: 25, freemium: 75 });
    expect(splitByMix(48, { premium: 25, freemium: 75 })).toEqual({ premium: 12, freemium: 36 });
    expect(splitByMix(10, { premium: 1, freemium: 0 })).toEqual({ premium: 10, freemium: 0 });
  });

  it('rejects a malformed mix naming the flag', () => {
    for (const bad of ['25', '25:75:1', 'a:b', '0:0', '-1:2']) {
      let err: unknown;
      try {
        parseMix(bad);
      } catch (e) {
        err = e;
      }
      expect(isPlbError(err, 'BAD_INPUT')).toBe(true);
      expect((err as Error).message).toMatch(/^--mix: /);
    }
  });
});

describe('HealthTracker', () => {
  it('marks down after `fall` consecutive failures and up after `rise` successes', () => {
    const t = new HealthTracker(['r1'], 2, 3);
    expect(t.observe('r1', false)).toBeNull();
    expect(t.observe('r1', true)).toBeNull(); // a success resets the failure streak
    expect(t.observe('r1', false)).toBeNull();
    expect(t.observe('r1', false)).toBe('down');
    expect(t.observe('r1', false)).toBeNull();
    expect(t.isHealthy('r1')).toBe(false);
    expect(t.observe('r1', true)).toBeNull();
    expect(t.observe('r1', true)).toBeNull();
    expect(t.observe('r1', true)).toBe('up');
    expect(t.observe('r9', false)).toBeNull();
  });
});

describe('series', () => {
  it('runs every strategy of a repeat with the same seed', () => {
    const runs = expandSeries(['plb', 'rr'], [{ premium: 25, freemium: 75 }], 2, 100);
    expect(runs.map((r) => `${r.strategy}/${r.repeat}/${r.seed}`)).toEqual([
      'plb/1/100',
      'rr/1/100',
      'plb/2/101',
      'rr/2/101',
    ]);
  });
});

describe('queries', () => {
  it('builds parameterised templates inside the dataset', () => {
    const r = new Rng(1);
    const point = makeQuery('point', 1000, r);
    expect(point.text).toMatch(/WHERE id = \$1/);
    expect(point.values[0]).toBeGreaterThanOrEqual(1);
    expect(point.values[0]).toBeLessThanOrEqual(1000);
    const range = makeQuery('range', 1000, r);
    expect((range.values[1] as number) - (range.values[0] as number)).toBe(10);
    expect(makeQuery('scan', 1000, r).text).toMatch(/GROUP BY grp/);
  });
});
