import { parseClientZones, parseMaxLag } from '../../src/cli/router-values.js';
import { describe, expect, it } from 'vitest';
import {
  chooseZone,
  clientZone,
  createRouter,
  maxLagFactor,
  poolPressure,
  STRATEGY_NAMES,
} from '../../src/router/index.js';

const ids = ['r1', 'r2', 'r3', 'r4', 'r5'];
const zones = { r1: 'a', r2: 'a', r3: 'b', r4: 'b', r5: 'b' };
const zoneOf = (id: string): string => zones[id as keyof typeof zones];

describe('chooseZone', () => {
  it('keeps the own zone until it is spill times as loaded as the best other', () => {
    expect(
      chooseZone(
        new Map([
          ['a', 7],
          ['b', 4],
        ]),
        'a',
        2,
      ),
    ).toBe('a');
    expect(
      chooseZone(
        new Map([
          ['a', 8],
          ['b', 4],
        ]),
        'a',
        2,
      ),
    ).toBe('b');
  });
  it('never spills a lightly loaded zone', () => {
    expect(
      chooseZone(
        new Map([
          ['a', 3],
          ['b', 1],
        ]),
        'a',
        2,
      ),
    ).toBe('a');
  });
  it('goes elsewhere when the own zone has no room, nowhere when none has', () => {
    expect(
      chooseZone(
        new Map([
          ['a', Infinity],
          ['b', 9],
        ]),
        'a',
        2,
      ),
    ).toBe('b');
    expect(
      chooseZone(
        new Map([
          ['a', Infinity],
          ['b', Infinity],
        ]),
        'a',
        2,
      ),
    ).toBeUndefined();
  });
  it('without an own zone takes the least loaded', () => {
    expect(
      chooseZone(
        new Map([
          ['a', 3],
          ['b', 2],
        ]),
        undefined,
        2,
      ),
    ).toBe('b');
  });
});

describe('poolPressure', () => {
  it('is the best key among healthy replicas that may take the class', () => {
    const s = (id: string, role: 'premium' | 'mixed' | 'freemium', n: number, healthy = true) => ({
      id,
      healthy,
      role,
      weight: 1,
      sessions: { premium: n, freemium: 0 },
    });
    expect(poolPressure([s('r1', 'premium', 3), s('r2', 'freemium', 0)], 'premium')).toBe(4);
    expect(poolPressure([s('r1', 'premium', 0, false)], 'premium')).toBe(Infinity);
  });
});

describe('client zones', () => {
  it('parses shares and deals draws in order', () => {
    const shares = parseClientZones('a:30,b:70');
    expect(shares).toEqual({ a: 0.3, b: 0.7 });
    expect(clientZone(shares, 0.29)).toBe('a');
    expect(clientZone(shares, 0.31)).toBe('b');
    expect(() => parseClientZones('a=1')).toThrow(/--client-zones/);
    expect(() => parseClientZones('a:0')).toThrow(/not all be 0/);
  });
});

describe('zoned router', () => {
  for (const strategy of STRATEGY_NAMES) {
    it(`${strategy}: sessions stay in their zone while it has room, spill after a zone-down`, () => {
      const router = createRouter({ strategy, replicas: ids, zones, slowStartMs: 0 });
      for (let i = 0; i < 20; i++) {
        const cls = i % 2 === 0 ? 'premium' : 'freemium';
        const zone = i % 4 < 2 ? 'a' : 'b';
        // A zone's own pool may lack a role for a class (plb/static scale roles per zone): then it spills.
        const { replica } = router.admit(cls, 0, zone);
        if (strategy === 'rr' || strategy === 'lc' || strategy === 'wlc') expect(zoneOf(replica)).toBe(zone);
      }
      router.markDown('r1', 1);
      router.markDown('r2', 1);
      const { replica } = router.admit('premium', 2, 'a');
      expect(zoneOf(replica)).toBe('b');
      expect(router.snapshot().map((s) => s.id)).toEqual(ids);
    });
  }

  it('spills when the own zone is twice as loaded', () => {
    const router = createRouter({ strategy: 'lc', replicas: ids, zones });
    const landed = Array.from({ length: 10 }, () => zoneOf(router.admit('premium', 0, 'a').replica));
    // a: 2 replicas, b: 3 idle; a's key reaches 4 (the floor, 2x b's 1) at its 7th session.
    expect(landed.slice(0, 6)).toEqual(['a', 'a', 'a', 'a', 'a', 'a']);
    expect(landed[6]).toBe('b');
  });

  it('homeZone: an admission that names no zone prefers it (a proxy in that zone); one that names one, its own', () => {
    const router = createRouter({ strategy: 'lc', replicas: ids, zones, homeZone: 'b' });
    expect(Array.from({ length: 4 }, () => zoneOf(router.admit('premium', 0).replica))).toEqual([
      'b',
      'b',
      'b',
      'b',
    ]);
    expect(zoneOf(router.admit('premium', 0, 'a').replica)).toBe('a');
  });

  it('without zones behaves as before (the zone argument is ignored)', () => {
    const plain = createRouter({ strategy: 'wlc', replicas: ids });
    const withArg = createRouter({ strategy: 'wlc', replicas: ids });
    for (let i = 0; i < 12; i++)
      expect(withArg.admit('premium', i, 'a').replica).toBe(plain.admit('premium', i).replica);
  });

  it('needs a zone for every replica', () => {
    expect(() => createRouter({ strategy: 'lc', replicas: ids, zones: { r1: 'a' } })).toThrow(
      /replica r2 has no zone/,
    );
  });

  it('release, setWeight and role changes go to the owning zone', () => {
    const router = createRouter({ strategy: 'plb', replicas: ids, zones });
    const { replica } = router.admit('freemium', 0, 'b');
    expect(router.release(replica, 'freemium', 1)).toBe(true);
    expect(router.release('nope', 'freemium', 1)).toBe(false);
    router.setWeight('r3', 2);
    expect(router.snapshot().find((s) => s.id === 'r3')?.weight).toBe(2);
    router.markDown('r4', 5);
    expect(router.drainChanges().some((c) => c.replica === 'r4' && c.to === 'down')).toBe(true);
  });
});

describe('max-lag eviction', () => {
  it('evicts above the budget only', () => {
    expect(maxLagFactor(999, 1000)).toBe(1);
    expect(maxLagFactor(1000, 1000)).toBe(1);
    expect(maxLagFactor(1001, 1000)).toBe(0);
    expect(maxLagFactor(null, 1000)).toBe(1);
  });
  it('parses 1s and 500ms', () => {
    expect(parseMaxLag('1s')).toBe(1000);
    expect(parseMaxLag('500ms')).toBe(500);
    expect(() => parseMaxLag('0s')).toThrow(/--max-lag/);
    expect(() => parseMaxLag('fast')).toThrow(/--max-lag/);
  });
});
