import { describe, expect, it } from 'vitest';
import { createRouter, describeStrategies, isStrategyName, STRATEGY_NAMES } from '../../src/router/index.js';

const ids5 = ['r1', 'r2', 'r3', 'r4', 'r5'];
const admitN = (
  r: ReturnType<typeof createRouter>,
  n: number,
  cls: 'premium' | 'freemium' = 'premium',
  t = 0,
) => Array.from({ length: n }, () => r.admit(cls, t).replica);

describe('strategy names', () => {
  it('lists the strategies for CLI flags', () => {
    expect(STRATEGY_NAMES).toEqual(['plb', 'rr', 'static', 'lc', 'wlc', 'plb-admit', 'lc-queue']);
    expect(isStrategyName('wlc')).toBe(true);
    expect(isStrategyName('x')).toBe(false);
    expect(describeStrategies().split('\n')).toHaveLength(7);
  });
});

describe('rr', () => {
  it('rotates over healthy replicas, class-blind, and reports role mixed', () => {
    const r = createRouter({ strategy: 'rr', replicas: ids5 });
    expect([...admitN(r, 3), ...admitN(r, 4, 'freemium')]).toEqual([
      'r1',
      'r2',
      'r3',
      'r4',
      'r5',
      'r1',
      'r2',
    ]);
    r.markDown('r3', 1);
    expect(admitN(r, 4)).toEqual(['r4', 'r5', 'r1', 'r2']);
    r.markUp('r3', 2);
    expect(admitN(r, 2)).toEqual(['r3', 'r4']);
    expect(r.snapshot().every((s) => s.role === 'mixed')).toBe(true);
    expect(r.drainChanges().map((c) => `${c.replica}:${c.from}>${c.to}`)).toEqual([
      'r3:mixed>down',
      'r3:down>mixed',
    ]);
  });
  it('throws NO_REPLICA when all are down', () => {
    const r = createRouter({ strategy: 'rr', replicas: ['a'] });
    r.markDown('a', 0);
    expect(() => r.admit('freemium', 0)).toThrow(expect.objectContaining({ code: 'NO_REPLICA' }));
  });
});

describe('static', () => {
  it('partitions 3:2 with round robin inside each partition', () => {
    const r = createRouter({ strategy: 'static', replicas: ids5 });
    expect(r.snapshot().map((s) => s.role)).toEqual([
      'premium',
      'premium',
      'premium',
      'freemium',
      'freemium',
    ]);
    expect(admitN(r, 4)).toEqual(['r1', 'r2', 'r3', 'r1']);
    expect(admitN(r, 3, 'freemium')).toEqual(['r4', 'r5', 'r4']);
  });
  it('strands a class whose partition is down (NO_REPLICA) while the other partition has room', () => {
    const r = createRouter({ strategy: 'static', replicas: ids5, partition: { premium: 3, freemium: 2 } });
    r.markDown('r4', 0);
    r.markDown('r5', 0);
    expect(() => r.admit('freemium', 1)).toThrow(expect.objectContaining({ code: 'NO_REPLICA' }));
    expect(r.admit('premium', 1).replica).toBe('r1');
  });
  it('scales the partition to other K', () => {
    const r = createRouter({ strategy: 'static', replicas: Array.from({ length: 10 }, (_, i) => `r${i}`) });
    expect(r.snapshot().filter((s) => s.role === 'premium')).toHaveLength(6);
  });
});

describe('lc and wlc', () => {
  it('lc picks the least sessions and ignores weights', () => {
    const r = createRouter({ strategy: 'lc', replicas: [{ id: 'a', weight: 3 }, 'b'] });
    expect(admitN(r, 4)).toEqual(['a', 'b', 'a', 'b']);
  });
  it('wlc follows weights', () => {
    const r = createRouter({ strategy: 'wlc', replicas: [{ id: 'a', weight: 3 }, 'b'] });
    const got = admitN(r, 8);
    expect(got.filter((x) => x === 'a')).toHaveLength(6);
  });
  it('lc floods a rejoining empty replica; wlc ramps it in slowly', () => {
    const flood = (strategy: 'lc' | 'wlc') => {
      const r = createRouter({ strategy, replicas: ids5, slowStartMs: 30_000 });
      admitN(r, 100);
      r.markDown('r1', 0);
      for (let i = 0; i < 20; i++) r.release('r1', 'premium', 0);
      r.markUp('r1', 1000);
      return admitN(r, 20, 'premium', 2000).filter((x) => x === 'r1').length;
    };
    expect(flood('lc')).toBe(20);
    expect(flood('wlc')).toBeLessThanOrEqual(1);
  });
  it('wlc reaches full weight after slowStartMs', () => {
    const r = createRouter({ strategy: 'wlc', replicas: ['a', 'b'], slowStartMs: 10_000 });
    r.markDown('b', 0);
    admitN(r, 10, 'premium', 0);
    r.markUp('b', 1000);
    expect(admitN(r, 10, 'premium', 11_000)).toEqual(Array(10).fill('b'));
  });
});
