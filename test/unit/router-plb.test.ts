import { describe, expect, it } from 'vitest';
import { isPlbError } from '../../src/core/errors.js';
import {
  admissionKey,
  canonicalRole,
  chooseRepairDonor,
  countRoles,
  createRouter,
  decidePlbAdmission,
  DEFAULT_BORROWING,
  READING_PRESETS,
  repairToTarget,
  resolveBorrowing,
  shouldBorrow,
  shouldReturn,
  slowStartRamp,
  type PlbReplicaView,
  type Role,
  type Router,
} from '../../src/router/index.js';

const ids5 = ['r1', 'r2', 'r3', 'r4', 'r5'];
const view = (index: number, role: Role, premium = 0, freemium = 0, extra: Partial<PlbReplicaView> = {}) =>
  ({ index, healthy: true, role, weight: 1, sessions: { premium, freemium }, ...extra }) as PlbReplicaView;
const roles = (r: Router) => r.snapshot().map((s) => (s.healthy ? s.role : 'down'));

describe('canonicalRole', () => {
  it('leaves non-borrowed replicas in their role, whatever they carry', () => {
    expect(canonicalRole(view(0, 'premium', 3, 4))).toBe('premium');
    expect(canonicalRole(view(0, 'mixed', 3, 0))).toBe('mixed');
    expect(canonicalRole(view(0, 'freemium', 0, 0))).toBe('freemium');
  });
  it('returns a borrowed replica with no borrower sessions to its role', () => {
    expect(canonicalRole(view(0, 'freemium', 0, 5, { borrowedBy: 'premium' }))).toBe('freemium');
    expect(canonicalRole(view(0, 'premium', 0, 0, { borrowedBy: 'freemium' }))).toBe('premium');
  });
  it('makes a borrowed replica carrying both classes mixed', () => {
    expect(canonicalRole(view(0, 'freemium', 2, 5, { borrowedBy: 'premium' }))).toBe('mixed');
    expect(canonicalRole(view(0, 'premium', 1, 1, { borrowedBy: 'freemium' }))).toBe('mixed');
  });
  it('gives a borrowed replica carrying only the borrower class to that class', () => {
    expect(canonicalRole(view(0, 'freemium', 2, 0, { borrowedBy: 'premium' }))).toBe('premium');
    expect(canonicalRole(view(0, 'premium', 0, 3, { borrowedBy: 'freemium' }))).toBe('freemium');
  });
});

describe('chooseRepairDonor', () => {
  const target = { premium: 2, mixed: 1, freemium: 1 };
  it('prefers a mixed donor with surplus, least loaded first', () => {
    const views = [
      view(0, 'premium', 5),
      view(1, 'mixed', 9, 9),
      view(2, 'mixed', 1, 1),
      view(3, 'freemium', 0, 0),
    ];
    const donor = chooseRepairDonor(views, 'premium', countRoles(views), target);
    expect(donor?.index).toBe(2);
  });
  it('crosses the boundary only from a role above its target (floor protected)', () => {
    const views = [
      view(0, 'premium', 5),
      view(1, 'mixed', 1, 1),
      view(2, 'freemium', 0, 9),
      view(3, 'freemium', 0, 2),
    ];
    const donor = chooseRepairDonor(views, 'premium', countRoles(views), target);
    expect(donor?.index).toBe(3);
  });
  it('never takes the last replica of a role at its floor', () => {
    const views = [view(0, 'premium', 5), view(1, 'mixed', 0, 0), view(2, 'freemium', 0, 0)];
    expect(
      chooseRepairDonor(views, 'premium', countRoles(views), { premium: 1, mixed: 1, freemium: 1 }),
    ).toBe(undefined);
  });
  it('weighs load by weight and breaks ties by index', () => {
    const views = [
      view(0, 'mixed', 4, 0, { weight: 1 }),
      view(1, 'mixed', 6, 0, { weight: 2 }),
      view(2, 'mixed', 3, 0, { weight: 1 }),
      view(3, 'mixed', 3, 0, { weight: 1 }),
    ];
    const donor = chooseRepairDonor(views, 'premium', countRoles(views), {
      premium: 1,
      mixed: 3,
      freemium: 0,
    });
    expect(donor?.index).toBe(1); // 6/2 = 3/1 = 3/1: the lowest index wins
  });
  it('ignores unhealthy replicas', () => {
    const views = [view(0, 'mixed', 0, 0, { healthy: false }), view(1, 'mixed', 9), view(2, 'mixed', 9)];
    expect(
      chooseRepairDonor(views, 'premium', countRoles(views), { premium: 1, mixed: 1, freemium: 0 })?.index,
    ).toBe(1);
  });
});

describe('repairToTarget', () => {
  it('losing a premium replica at K=5: the least-loaded freemium becomes premium', () => {
    const views = [
      view(0, 'premium', 0, 0, { healthy: false }),
      view(1, 'premium', 9),
      view(2, 'mixed', 4, 4),
      view(3, 'freemium', 0, 7),
      view(4, 'freemium', 0, 3),
    ];
    expect(repairToTarget(views, { premium: 2, mixed: 1, freemium: 1 })).toEqual([
      { index: 4, from: 'freemium', to: 'premium' },
    ]);
  });
  it('rejoin as mixed at K+=5: the least-loaded mixed goes to the short role', () => {
    const views = [
      view(0, 'mixed', 0, 0), // the rejoined replica
      view(1, 'premium', 9),
      view(2, 'mixed', 4, 4),
      view(3, 'premium', 5),
      view(4, 'freemium', 0, 3),
    ];
    expect(repairToTarget(views, { premium: 2, mixed: 1, freemium: 2 })).toEqual([
      { index: 0, from: 'mixed', to: 'freemium' },
    ]);
  });
  it('fills premium before mixed before freemium', () => {
    const views = [view(0, 'freemium'), view(1, 'freemium'), view(2, 'freemium'), view(3, 'freemium')];
    const moves = repairToTarget(views, { premium: 2, mixed: 1, freemium: 1 });
    expect(moves.map((m) => m.to)).toEqual(['premium', 'premium', 'mixed']);
    expect(moves.map((m) => m.index)).toEqual([0, 1, 2]);
  });
  it('does nothing when the target is met and does not modify its input', () => {
    const views = [view(0, 'premium'), view(1, 'mixed'), view(2, 'freemium')];
    expect(repairToTarget(views, { premium: 1, mixed: 1, freemium: 1 })).toEqual([]);
    expect(views.map((x) => x.role)).toEqual(['premium', 'mixed', 'freemium']);
  });
  it('refuses a target of the wrong size', () => {
    expect(() => repairToTarget([view(0, 'mixed')], { premium: 1, mixed: 1, freemium: 0 })).toThrow(
      /healthy/,
    );
  });
});

describe('slowStartRamp and admissionKey', () => {
  it('ramps linearly from markUp to full weight, with a floor', () => {
    expect(slowStartRamp(1000, undefined, 30_000)).toBe(1);
    expect(slowStartRamp(1000, 1000, 30_000)).toBe(0.01);
    expect(slowStartRamp(16_000, 1000, 30_000)).toBe(0.5);
    expect(slowStartRamp(31_000, 1000, 30_000)).toBe(1);
    expect(slowStartRamp(99_000, 1000, 30_000)).toBe(1);
    expect(slowStartRamp(1000, 1000, 0)).toBe(1);
  });
  it('counts the session being admitted so an empty cold replica is not free', () => {
    expect(admissionKey(0, 1, 1)).toBe(1);
    expect(admissionKey(0, 1, 0.1)).toBe(10);
    expect(admissionKey(3, 2, 1)).toBe(2);
  });
});

describe('borrowing rules', () => {
  const p = DEFAULT_BORROWING.premium;
  const f = DEFAULT_BORROWING.freemium;
  it('borrows only above minLoad and the pressure ratio', () => {
    expect(shouldBorrow(3, 1, p)).toBe(false); // below minLoad 4
    expect(shouldBorrow(6, 4, p)).toBe(true); // 6 >= 1.5 * 4
    expect(shouldBorrow(5.9, 4, p)).toBe(false);
    expect(shouldBorrow(8, 4, f)).toBe(true); // 8 >= 2 * 4
    expect(shouldBorrow(7.9, 4, f)).toBe(false);
    expect(shouldBorrow(100, 1, { ...p, enabled: false })).toBe(false);
  });
  it('returns when the borrowed replica no longer relieves or the pressure is gone', () => {
    expect(shouldReturn(10, 9.9, p)).toBe(false);
    expect(shouldReturn(10, 10, p)).toBe(true);
    expect(shouldReturn(10, 6.25, f)).toBe(true); // 6.25 >= 0.625 * 10
    expect(shouldReturn(10, 6.2, f)).toBe(false);
    expect(shouldReturn(1.9, 0, p)).toBe(true); // below minLoad / 2
  });
  it('never borrows and returns in the same state (hysteresis)', () => {
    for (const t of [p, f]) {
      for (let pressure = 0; pressure < 40; pressure += 1) {
        for (let key = 0; key < 40; key += 0.5) {
          expect(shouldBorrow(pressure, key, t) && shouldReturn(pressure, key, t)).toBe(false);
        }
      }
    }
  });
  it('validates thresholds', () => {
    expect(() => resolveBorrowing({ premium: { pressureRatio: 1 } })).toThrow(
      /borrowing.premium.pressureRatio/,
    );
    expect(() => resolveBorrowing({ freemium: { returnRatio: 0.2 } })).toThrow(
      /borrowing.freemium.returnRatio/,
    );
    expect(resolveBorrowing(false).premium.enabled).toBe(false);
  });
});

describe('decidePlbAdmission', () => {
  const b = resolveBorrowing(undefined);
  it('sends premium to the least loaded of premium and mixed', () => {
    const views = [
      view(0, 'premium', 3),
      view(1, 'premium', 2),
      view(2, 'mixed', 1, 1),
      view(3, 'freemium', 0, 0),
    ];
    expect(decidePlbAdmission(views, 'premium', 0, 30_000, b)).toEqual({
      replica: 1,
      reclaimed: [],
      returned: [],
      borrowed: -1,
    });
  });
  it('sends freemium to freemium or mixed, never to premium without borrowing', () => {
    // pressure (5+1) < 2 x premium's key (4+1): no borrowing
    const views = [view(0, 'premium', 4), view(1, 'mixed', 3, 3), view(2, 'freemium', 0, 5)];
    expect(decidePlbAdmission(views, 'freemium', 0, 30_000, b)).toEqual({
      replica: 2,
      reclaimed: [],
      returned: [],
      borrowed: -1,
    });
  });
  it('freemium borrows a premium replica only when it is far less loaded', () => {
    const views = [view(0, 'premium', 1), view(1, 'mixed', 3, 5), view(2, 'freemium', 0, 7)];
    expect(decidePlbAdmission(views, 'freemium', 0, 30_000, b)).toEqual({
      replica: 0,
      reclaimed: [],
      returned: [],
      borrowed: 0,
    });
  });
  it('premium borrows an idle freemium replica under pressure', () => {
    const views = [view(0, 'premium', 10), view(1, 'mixed', 5, 5), view(2, 'freemium', 0, 2)];
    expect(decidePlbAdmission(views, 'premium', 0, 30_000, b)).toEqual({
      replica: 2,
      reclaimed: [],
      returned: [],
      borrowed: 2,
    });
  });
  it('premium gives a borrowed replica back once it is as loaded as its own', () => {
    const views = [
      view(0, 'premium', 6),
      view(1, 'mixed', 3, 3),
      view(2, 'freemium', 3, 4, { borrowedBy: 'premium' }),
    ];
    expect(decidePlbAdmission(views, 'premium', 0, 30_000, b)).toEqual({
      replica: 0,
      reclaimed: [],
      returned: [2],
      borrowed: -1,
    });
  });
  it('uses the slow-start ramp', () => {
    const views = [view(0, 'premium', 5), view(1, 'premium', 0, 0, { upSinceMs: 0 })];
    expect(decidePlbAdmission(views, 'premium', 1000, 30_000, b).replica).toBe(0); // key 1/0.033 = 30 > 6
    expect(decidePlbAdmission(views, 'premium', 20_000, 30_000, b).replica).toBe(1); // key 1.5 < 6
  });
});

describe('createRouter plb', () => {
  it('assigns the first replicas premium, then mixed, then freemium', () => {
    expect(roles(createRouter({ strategy: 'plb', replicas: ids5 }))).toEqual([
      'premium',
      'premium',
      'mixed',
      'freemium',
      'freemium',
    ]);
    const ten = createRouter({
      strategy: 'plb',
      replicas: Array.from({ length: 10 }, (_, i) => `r${i + 1}`),
    });
    expect(countRoles(ten.snapshot().map((s, index) => ({ ...s, index })))).toEqual({
      premium: 4,
      mixed: 2,
      freemium: 4,
    });
  });

  it('follows the paper cascade: two premium replicas down, then both rejoin', () => {
    // plb's readings: K+=4 is 2:1:1 and the rejoined replica stays the shared one.
    const r = createRouter({
      strategy: 'plb',
      replicas: ids5,
      borrowing: false,
      readings: READING_PRESETS.plb,
    });
    for (let i = 0; i < 20; i++) r.admit(i % 4 === 0 ? 'premium' : 'freemium', i);
    r.markDown('r1', 1000);
    expect(countRoles(r.snapshot().map((s, index) => ({ ...s, index })))).toEqual({
      premium: 2,
      mixed: 1,
      freemium: 1,
    });
    r.markDown('r2', 2000);
    expect(countRoles(r.snapshot().map((s, index) => ({ ...s, index })))).toEqual({
      premium: 2,
      mixed: 0,
      freemium: 1,
    });
    r.markUp('r1', 3000);
    expect(countRoles(r.snapshot().map((s, index) => ({ ...s, index })))).toEqual({
      premium: 2,
      mixed: 1,
      freemium: 1,
    });
    expect(r.snapshot()[0]?.role).toBe('mixed'); // the rejoined replica is the shared capacity
    r.markUp('r2', 4000);
    expect(countRoles(r.snapshot().map((s, index) => ({ ...s, index })))).toEqual({
      premium: 2,
      mixed: 1,
      freemium: 2,
    });
    const changes = r.drainChanges();
    expect(changes[0]).toEqual({ replica: 'r1', from: 'premium', to: 'down', reason: 'down', nowMs: 1000 });
    expect(changes.some((c) => c.reason === 'repair')).toBe(true);
    expect(changes.filter((c) => c.reason === 'rejoin').map((c) => c.replica)).toEqual(['r1', 'r2']);
    expect(r.drainChanges()).toEqual([]);
  });

  it('keeps sessions pinned across role changes and counts releases after markDown', () => {
    const r = createRouter({ strategy: 'plb', replicas: ids5 });
    const a = r.admit('premium', 0).replica;
    r.markDown(a, 10);
    expect(r.release(a, 'premium', 20)).toBe(true);
    expect(r.release(a, 'premium', 21)).toBe(false); // never negative
    expect(r.release('nope', 'premium', 22)).toBe(false);
    expect(r.snapshot().find((s) => s.id === a)?.sessions).toEqual({ premium: 0, freemium: 0 });
  });

  it('throws NO_REPLICA when every replica is down, and BAD_INPUT for an unknown replica', () => {
    const r = createRouter({ strategy: 'plb', replicas: ['a', 'b'] });
    r.markDown('a', 0);
    r.markDown('b', 0);
    expect(() => r.admit('premium', 1)).toThrow(expect.objectContaining({ code: 'NO_REPLICA' }));
    expect(() => r.markDown('zz', 1)).toThrow(/unknown replica 'zz'/);
  });

  it('premium borrows a freemium replica under pressure and returns it when pressure subsides', () => {
    const r = createRouter({ strategy: 'plb', replicas: ['p', 'f'] }); // K=2 -> premium 1, freemium 1
    expect(roles(r)).toEqual(['premium', 'freemium']);
    for (let i = 0; i < 3; i++) expect(r.admit('premium', i).replica).toBe('p');
    const c = r.admit('premium', 3); // own key 4 >= minLoad 4 and >= 1.5 * 1
    expect(c.replica).toBe('f');
    expect(r.snapshot()[1]?.borrowedBy).toBe('premium');
    expect(r.drainChanges()).toEqual([
      { replica: 'f', from: 'freemium', to: 'freemium', borrowedBy: 'premium', reason: 'borrow', nowMs: 3 },
    ]);
    for (let i = 0; i < 3; i++) r.release('p', 'premium', 10);
    r.admit('premium', 11); // own key 1 < minLoad/2: return, then admit on p
    expect(r.snapshot()[1]?.borrowedBy).toBeUndefined();
    expect(r.drainChanges().map((x) => x.reason)).toEqual(['return']);
  });

  it('canonicalizes a borrowed replica at the next fault', () => {
    const r = createRouter({ strategy: 'plb', replicas: ['p', 'f', 'x'] }); // K=3 -> 2:0:1
    for (let i = 0; i < 8; i++) r.admit('premium', i); // p,f reach 3 each, then x is borrowed and takes 2
    r.admit('freemium', 13);
    const f = r.snapshot()[2];
    expect(f?.borrowedBy).toBe('premium');
    expect(f?.sessions.premium).toBeGreaterThan(0);
    r.drainChanges();
    r.markDown('p', 20); // K+=2 -> 1:0:1; x carried both classes -> mixed -> repaired
    const changes = r.drainChanges();
    expect(changes.find((c) => c.reason === 'canonicalize')).toMatchObject({
      replica: 'x',
      from: 'freemium',
      to: 'mixed',
    });
    expect(r.snapshot().every((s) => s.borrowedBy === undefined)).toBe(true);
  });

  it('gives a rejoining replica fewer new sessions during slow start than plain least loaded would', () => {
    const run = (slowStartMs: number) => {
      const r = createRouter({ strategy: 'plb', replicas: ids5, slowStartMs, borrowing: false });
      for (let i = 0; i < 200; i++) r.admit(i % 2 ? 'premium' : 'freemium', 0);
      r.markDown('r5', 100);
      const s = r.snapshot()[4]!.sessions;
      for (let i = 0; i < s.premium; i++) r.release('r5', 'premium', 100);
      for (let i = 0; i < s.freemium; i++) r.release('r5', 'freemium', 100);
      r.markUp('r5', 1000);
      const before = r.snapshot().map((x) => x.sessions.premium + x.sessions.freemium);
      for (let i = 0; i < 40; i++) r.admit(i % 2 ? 'premium' : 'freemium', 1000 + i * 10);
      return r.snapshot().map((x, j) => x.sessions.premium + x.sessions.freemium - before[j]!);
    };
    const slow = run(30_000);
    const flood = run(0);
    expect(flood[4]).toBe(40 / 2); // every session of its class goes to the empty replica
    expect(slow[4]).toBeLessThan(2);
  });

  it('validates options', () => {
    const bad = (o: object) => {
      try {
        createRouter({ strategy: 'plb', replicas: ids5, ...o } as never);
        return '';
      } catch (err) {
        return isPlbError(err, 'BAD_INPUT') ? err.message : 'wrong error';
      }
    };
    expect(bad({ strategy: 'nope' })).toMatch(/^strategy /);
    expect(bad({ replicas: [] })).toMatch(/^replicas /);
    expect(bad({ replicas: ['a', 'a'] })).toMatch(/duplicate id 'a'/);
    expect(bad({ replicas: [{ id: 'a', weight: 0 }] })).toMatch(/replicas\[0\]\.weight/);
    expect(bad({ slowStartMs: -1 })).toMatch(/^slowStartMs /);
    expect(bad({ reference: { premium: 0, mixed: 0, freemium: 0 } })).toMatch(/reference/);
  });
});
