import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPlbError } from '../../src/core/errors.js';
import { AdmittingRouter, placeOf } from '../../src/router/admission/admission.js';
import type { AdmissionOptions } from '../../src/router/admission/admission-types.js';
import { createRouter, type Router, type ServiceClass } from '../../src/router/index.js';
import { SessionLimits } from '../../src/router/admission/session-limits.js';
import { SloGuard } from '../../src/router/admission/slo-guard.js';

const ids = ['r1', 'r2', 'r3', 'r4', 'r5'];

function admitting(
  limit: number,
  opts: Partial<Omit<AdmissionOptions, 'slowStartMs'>> = {},
  strategy: 'plb-admit' | 'lc-queue' = 'plb-admit',
  slowStartMs = 0,
): AdmittingRouter<number> {
  return createRouter({
    strategy,
    replicas: ids,
    slowStartMs,
    admission: {
      limits: { mode: 'fixed', limit },
      queue: { capacity: 1000, timeoutMs: 5000 },
      ...opts,
    },
  }) as unknown as AdmittingRouter<number>;
}

const total = (r: Router) => r.snapshot().reduce((s, x) => s + x.sessions.premium + x.sessions.freemium, 0);

describe('admission: limits and queue', () => {
  it('fills every replica to its limit, then queues, and hands a freed slot to premium first', () => {
    const r = admitting(2);
    let t = 0;
    for (let i = 0; i < 10; i++) expect(r.request(i % 2 ? 'premium' : 'freemium', i, t)).not.toBe('queued');
    expect(total(r)).toBe(10);
    expect(r.request('freemium', 100, t)).toBe('queued');
    expect(r.request('premium', 101, t)).toBe('queued');
    // freemium leaves a mixed replica: the waiting premium takes it, the freemium still waits
    const mixed = r.snapshot().find((s) => s.role === 'mixed' && s.sessions.freemium > 0);
    expect(mixed).toBeDefined();
    r.release(mixed!.id, 'freemium', ++t);
    const got = r.pump(t);
    expect(got.map((h) => h.ticket)).toEqual([101]);
    expect(got[0]!.replica).toBe(mixed!.id);
    expect(r.queued('freemium')).toBe(1);
  });

  it('times a waiter out after its queue timeout, with its wait', () => {
    const r = admitting(1);
    for (let i = 0; i < 5; i++) r.request('premium', i, 0);
    expect(r.request('freemium', 9, 0)).toBe('queued');
    expect(r.pump(4999)).toEqual([]);
    expect(r.pump(5000)).toEqual([{ ticket: 9, cls: 'freemium', waitMs: 5000 }]);
  });

  it('admit() (no waiting) throws ADMISSION_FULL when full and NO_REPLICA when nobody is up', () => {
    const r = admitting(1);
    for (let i = 0; i < 5; i++) r.admit('premium', 0);
    expect(() => r.admit('premium', 0)).toThrow(expect.objectContaining({ code: 'ADMISSION_FULL' }));
    for (const id of ids) r.markDown(id, 1);
    let err: unknown;
    try {
      r.admit('premium', 2);
    } catch (e) {
      err = e;
    }
    expect(isPlbError(err, 'NO_REPLICA')).toBe(true);
  });

  // Each class keeps the last ceil(0.25 x 4) = 1 slot of its own replicas from the other's flood:
  // the flood overflows there up to 3, and the class still finds a slot at once (freemium is
  // never starved by premium, premium never shut out by freemium).
  it.each([
    ['premium', 'freemium', 'premiumReserve'],
    ['freemium', 'premium', 'freemiumReserve'],
  ] as const)('keeps the %s reserve of its own replicas from a %s flood', (own, flood, option) => {
    for (const share of [0.25, 0]) {
      const r = admitting(4, { [option]: share });
      for (let i = 0; i < 100; i++) r.request(flood, i, 0);
      const mine = r.snapshot().filter((s) => s.role === own);
      expect(mine.length).toBeGreaterThan(0);
      for (const s of mine) expect(s.sessions[flood]).toBe(share ? 3 : 4);
      const got = r.request(own, 1000, 0);
      if (!share) {
        expect(got).toBe('queued');
        continue;
      }
      expect(got).not.toBe('queued');
      expect(mine.map((s) => s.id)).toContain((got as { replica: string }).replica);
    }
  });

  it('lc-queue keeps no reserve (HAProxy has no classes), and a reserve outside [0, 1] is refused', () => {
    const r = admitting(4, { premiumReserve: 0.5 }, 'lc-queue');
    for (let i = 0; i < 100; i++) r.request('freemium', i, 0);
    expect(total(r)).toBe(20);
    expect(() => admitting(4, { premiumReserve: 1.5 })).toThrow(/premium reserve must be in \[0, 1\]/);
  });

  it('lc-queue: one FIFO for both classes (no priority)', () => {
    const r = admitting(1, {}, 'lc-queue');
    for (let i = 0; i < 5; i++) r.request('freemium', i, 0);
    expect(r.request('freemium', 10, 1)).toBe('queued');
    expect(r.request('premium', 11, 2)).toBe('queued');
    r.release('r1', 'freemium', 3);
    expect(r.pump(3).map((h) => h.ticket)).toEqual([10]);
  });

  it('a rejoining replica with slow start takes the queue in priority order, a few at first', () => {
    const r = admitting(10, {}, 'plb-admit', 10_000);
    r.markDown('r1', 0);
    let n = 0;
    while (r.request(n % 4 === 0 ? 'premium' : 'freemium', n, 0) !== 'queued') n++;
    for (let i = 0; i < 20; i++) r.request(i % 2 ? 'premium' : 'freemium', 1000 + i, 1);
    r.markUp('r1', 100);
    const early = r.pump(1100); // ramp 0.1: a limit of 1 session
    expect(early.length).toBe(1);
    expect(early[0]!.cls).toBe('premium');
    const later = r.pump(10_100).filter((h) => h.replica);
    // premium first: every premium waiter is out before the first freemium one
    const firstFree = later.findIndex((h) => h.cls === 'freemium');
    expect(later.slice(firstFree).every((h) => h.cls === 'freemium')).toBe(true);
    expect(
      r.snapshot().find((s) => s.id === 'r1')!.sessions.premium + r.snapshot()[0]!.sessions.freemium,
    ).toBeLessThanOrEqual(10);
  });
});

describe('SLO guard', () => {
  it('takes borrowed, then shared, then own capacity, never below the min share', () => {
    const g = new SloGuard({ target: { kind: 'absolute', ms: 10 }, minShare: 0.25, step: 0.25 });
    for (let t = 0; t < 100; t++) g.observe('premium', 50, t * 10);
    const caps: number[][] = [];
    for (let k = 1; k <= 6; k++) {
      g.update(k * 1000 - 1000);
      caps.push((['borrowed', 'shared', 'own'] as const).map((p) => g.freemiumCap(p, 100)));
    }
    // level 0 until the first interval passes, then 0.25, 0.5, 0.75, 1, 1
    expect(caps[0]).toEqual([100, 100, 100]);
    expect(caps[1]).toEqual([0, 50, 100]);
    expect(caps[2]).toEqual([0, 25, 100]);
    expect(caps[3]).toEqual([0, 25, 50]);
    expect(caps[4]).toEqual([0, 25, 25]);
    expect(caps[5]).toEqual([0, 25, 25]);
  });

  it('a relative target waits for its reference (the p95 before the first failure)', () => {
    const g = new SloGuard({ target: { kind: 'relative', factor: 1.2 } });
    for (let t = 0; t < 100; t++) g.observe('premium', 10, t * 10);
    expect(g.targetMs()).toBeUndefined();
    g.freezeReference(1000);
    expect(g.targetMs()).toBeCloseTo(12);
  });

  it('rejects a target that is not a positive duration and a share outside [0, 1]', () => {
    expect(() => new SloGuard({ target: { kind: 'absolute', ms: 0 } })).toThrow(/duration/);
    expect(() => new SloGuard({ target: { kind: 'relative', factor: 1 }, minShare: 2 })).toThrow(/min share/);
  });

  it('freemium keeps its min share of every own and mixed replica however long premium is slow', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 1, max: 500 }),
        (share, limit) => {
          const g = new SloGuard({ target: { kind: 'absolute', ms: 1 }, minShare: share });
          for (let t = 0; t < 60; t++) {
            for (let i = 0; i < 30; i++) g.observe('premium', 100, t * 1000 + i);
            g.update(t * 1000);
          }
          expect(g.level).toBe(1);
          for (const p of ['own', 'shared'] as const)
            expect(g.freemiumCap(p, limit)).toBeGreaterThanOrEqual(Math.ceil(share * limit));
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('gradient limits', () => {
  it('lower a replica whose latency rises past its long average, and hold an idle one', () => {
    const l = new SessionLimits(['a', 'b'], { mode: 'gradient', limit: 100 });
    for (let s = 0; s < 10; s++) {
      l.observe('a', 10);
      l.observe('b', 10);
      l.update(s * 1000, () => 100);
    }
    const before = l.base('a');
    for (let s = 10; s < 20; s++) {
      l.observe('a', 100);
      l.observe('b', 10);
      l.update(s * 1000, (id) => (id === 'a' ? 100 : 0));
    }
    expect(l.base('a')).toBeLessThan(before);
    expect(l.base('b')).toBe(l.base('b'));
    expect(() => new SessionLimits(['a'], { mode: 'fixed', limit: 0 })).toThrow(/>= 1/);
  });
});

describe('admission invariants over random event and arrival sequences', () => {
  type Op =
    | { t: 'arrive'; cls: ServiceClass }
    | { t: 'leave'; pick: number }
    | { t: 'cancel'; pick: number }
    | { t: 'down'; r: number }
    | { t: 'up'; r: number }
    | { t: 'slow'; ms: number }
    | { t: 'tick'; ms: number };
  const clsArb = fc.constantFrom<ServiceClass>('premium', 'freemium');
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    { weight: 8, arbitrary: clsArb.map((cls) => ({ t: 'arrive' as const, cls })) },
    { weight: 5, arbitrary: fc.nat(1000).map((pick) => ({ t: 'leave' as const, pick })) },
    { weight: 1, arbitrary: fc.nat(1000).map((pick) => ({ t: 'cancel' as const, pick })) },
    { weight: 1, arbitrary: fc.nat(4).map((r) => ({ t: 'down' as const, r })) },
    { weight: 1, arbitrary: fc.nat(4).map((r) => ({ t: 'up' as const, r })) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 200 }).map((ms) => ({ t: 'slow' as const, ms })) },
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 3000 }).map((ms) => ({ t: 'tick' as const, ms })) },
  );

  it('never exceeds a limit, keeps FIFO per class and premium first, and every waiter ends', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom(0, 5000),
        fc.constantFrom<'plb-admit' | 'lc-queue'>('plb-admit', 'lc-queue'),
        fc.constantFrom(0, 0.25, 0.5),
        fc.constantFrom(0, 0.25),
        fc.array(opArb, { minLength: 1, maxLength: 250 }),
        (limit, slowStartMs, strategy, premiumReserve, freemiumReserve, ops) => {
          const r = admitting(
            limit,
            {
              guard: { target: { kind: 'absolute', ms: 50 }, minShare: 0.25 },
              queue: { capacity: 20, timeoutMs: 4000 },
              premiumReserve,
              freemiumReserve,
            },
            strategy,
            slowStartMs,
          );
          const open: { replica: string; cls: ServiceClass }[] = [];
          const waiting: { ticket: number; cls: ServiceClass }[] = [];
          let now = 0;
          let next = 0;
          const handle = (hs: ReturnType<typeof r.pump>) => {
            for (const h of hs) {
              const i = waiting.findIndex((w) => w.ticket === h.ticket);
              expect(i).toBeGreaterThanOrEqual(0);
              // FIFO within a class: the handed-out waiter is the oldest one of its class still waiting
              if (h.replica && strategy === 'plb-admit')
                expect(waiting.find((w) => w.cls === h.cls)?.ticket).toBe(h.ticket);
              if (!h.replica) expect(h.waitMs).toBeGreaterThanOrEqual(4000);
              waiting.splice(i, 1);
              if (h.replica) open.push({ replica: h.replica, cls: h.cls });
            }
          };
          for (const op of ops) {
            const before = r.snapshot();
            if (op.t === 'tick') now += op.ms;
            else if (op.t === 'slow') r.observe('premium', 'r1', op.ms, now);
            else if (op.t === 'down') r.markDown(ids[op.r]!, now);
            else if (op.t === 'up') r.markUp(ids[op.r]!, now);
            else if (op.t === 'arrive') {
              const ticket = next++;
              const got = r.request(op.cls, ticket, now);
              if (got === 'queued') waiting.push({ ticket, cls: op.cls });
              else if (got !== 'full') open.push({ replica: got.replica, cls: op.cls });
              else expect(waiting.length).toBe(20);
            } else if (op.t === 'cancel') {
              const w = waiting[op.pick % Math.max(1, waiting.length)];
              if (w) {
                expect(r.cancel(w.ticket)).toBe(true);
                waiting.splice(waiting.indexOf(w), 1);
              }
            } else {
              const s = open[op.pick % Math.max(1, open.length)];
              if (s) {
                open.splice(open.indexOf(s), 1);
                expect(r.release(s.replica, s.cls, now)).toBe(true);
              }
            }
            handle(r.pump(now));
            // limits: a replica whose count rose is within its (ramped) limit; one may stand above
            // it only from sessions it held before (a rejoin with a small ramp), never by admissions
            const after = r.snapshot();
            after.forEach((s, i) => {
              const n = s.sessions.premium + s.sessions.freemium;
              const b = before[i]!;
              if (n > b.sessions.premium + b.sessions.freemium)
                expect(n).toBeLessThanOrEqual(r.limitOf(s, now));
              // a class admitted onto the other's replica leaves that class its reserve
              const reserves = { premium: premiumReserve, freemium: freemiumReserve };
              for (const [own, other] of [
                ['premium', 'freemium'],
                ['freemium', 'premium'],
              ] as const) {
                if (strategy !== 'plb-admit' || s.role !== own) continue;
                if (s.sessions[other] <= b.sessions[other]) continue;
                const limit = r.limitOf(s, now);
                expect(n).toBeLessThanOrEqual(limit - Math.ceil(reserves[own] * limit));
              }
            });
            // no one waits while a slot fits the oldest waiter of its class (work conservation)
            if (strategy === 'plb-admit') {
              for (const cls of ['premium', 'freemium'] as const) {
                if (!waiting.some((w) => w.cls === cls)) continue;
                expect(r.snapshot().some((s) => r.fits(s, cls, now))).toBe(false);
              }
            }
            expect(r.queued()).toBe(waiting.length);
          }
          // no starvation: after the timeout every waiter has been admitted or timed out
          handle(r.pump(now + 4000));
          expect(waiting).toEqual([]);
          expect(total(r)).toBe(open.length);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('never admits past the limit: admissions into a replica at its limit do not happen', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.array(clsArb, { minLength: 1, maxLength: 100 }),
        (limit, arrivals) => {
          const r = admitting(limit);
          arrivals.forEach((cls, i) => r.request(cls, i, 0));
          for (const s of r.snapshot())
            expect(s.sessions.premium + s.sessions.freemium).toBeLessThanOrEqual(limit);
          expect(total(r)).toBe(Math.min(arrivals.length, 5 * limit));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('placeOf: own role, mixed is shared, borrowed only when borrowed by the class', () => {
    expect(placeOf({ role: 'mixed' }, 'premium')).toBe('shared');
    expect(placeOf({ role: 'premium' }, 'premium')).toBe('own');
    expect(placeOf({ role: 'premium' }, 'freemium')).toBeUndefined();
    expect(placeOf({ role: 'premium', borrowedBy: 'freemium' }, 'freemium')).toBe('borrowed');
  });
});
