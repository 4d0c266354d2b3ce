import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPlbError } from '../../src/core/errors.js';
import { AdmissionQueue, type QueuedItem } from '../../src/router/admission/admission-queue.js';
import type { ServiceClass } from '../../src/core/service-class.js';

describe('AdmissionQueue', () => {
  it('serves premium before freemium and FIFO within a class', () => {
    const q = new AdmissionQueue<string>({ capacity: 10, timeoutMs: 1000 });
    q.push('freemium', 'f1', 0);
    q.push('premium', 'p1', 1);
    q.push('freemium', 'f2', 2);
    q.push('premium', 'p2', 3);
    const got = q.drain(10, () => true).map((x) => x.item);
    expect(got).toEqual(['p1', 'p2', 'f1', 'f2']);
    expect(q.size()).toBe(0);
  });

  it('stops a class at its first refusal but still offers the other class', () => {
    const q = new AdmissionQueue<string>({ capacity: 10, timeoutMs: 1000 });
    q.push('premium', 'p1', 0);
    q.push('premium', 'p2', 0);
    q.push('freemium', 'f1', 0);
    const offered: string[] = [];
    const got = q.drain(5, (cls, item) => {
      offered.push(item);
      return cls === 'freemium';
    });
    expect(offered).toEqual(['p1', 'f1']);
    expect(got).toEqual([{ cls: 'freemium', item: 'f1', waitMs: 5 }]);
    expect(q.size('premium')).toBe(2);
  });

  it('refuses a push when full and times sessions out with their wait', () => {
    const q = new AdmissionQueue<number>({ capacity: 2, timeoutMs: 100 });
    expect(q.push('premium', 1, 0)).toBe(true);
    expect(q.push('freemium', 2, 50)).toBe(true);
    expect(q.push('premium', 3, 60)).toBe(false);
    expect(q.nextDeadline()).toBe(100);
    expect(q.expire(99)).toEqual([]);
    expect(q.expire(100)).toEqual([{ cls: 'premium', item: 1, waitMs: 100 }]);
    expect(q.nextDeadline()).toBe(150);
    // an expired session is never offered to drain
    expect(q.drain(150, () => true)).toEqual([]);
    expect(q.expire(200)).toEqual([{ cls: 'freemium', item: 2, waitMs: 150 }]);
    expect(q.nextDeadline()).toBeUndefined();
  });

  it('forgets a session that left', () => {
    const q = new AdmissionQueue<string>({ capacity: 3, timeoutMs: 100 });
    q.push('premium', 'a', 0);
    q.push('premium', 'b', 1);
    expect(q.remove('a')).toBe(true);
    expect(q.remove('a')).toBe(false);
    expect(q.nextDeadline()).toBe(101);
    expect(q.drain(2, () => true).map((x) => x.item)).toEqual(['b']);
  });

  it('rejects a capacity below 1 and a timeout that is not positive', () => {
    for (const opts of [
      { capacity: 0, timeoutMs: 10 },
      { capacity: 1.5, timeoutMs: 10 },
      { capacity: 1, timeoutMs: 0 },
      { capacity: 1, timeoutMs: Number.NaN },
    ]) {
      let err: unknown;
      try {
        new AdmissionQueue(opts);
      } catch (e) {
        err = e;
      }
      expect(isPlbError(err, 'BAD_INPUT')).toBe(true);
    }
  });

  type Op =
    | { t: 'push'; cls: ServiceClass }
    | { t: 'drain'; slots: { premium: number; freemium: number } }
    | { t: 'expire' }
    | { t: 'remove'; pick: number }
    | { t: 'tick'; ms: number };
  const clsArb = fc.constantFrom<ServiceClass>('premium', 'freemium');
  const opArb: fc.Arbitrary<Op> = fc.oneof(
    { weight: 6, arbitrary: clsArb.map((cls) => ({ t: 'push' as const, cls })) },
    {
      weight: 3,
      arbitrary: fc
        .record({ premium: fc.nat(4), freemium: fc.nat(4) })
        .map((slots) => ({ t: 'drain' as const, slots })),
    },
    { weight: 2, arbitrary: fc.constant({ t: 'expire' as const }) },
    { weight: 1, arbitrary: fc.nat(1000).map((pick) => ({ t: 'remove' as const, pick })) },
    { weight: 3, arbitrary: fc.integer({ min: 0, max: 400 }).map((ms) => ({ t: 'tick' as const, ms })) },
  );

  it('keeps order, capacity, deadlines and accounts for every session (random sequences)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 1000 }),
        fc.array(opArb, { minLength: 1, maxLength: 200 }),
        (capacity, timeoutMs, ops) => {
          const q = new AdmissionQueue<number>({ capacity, timeoutMs });
          // the model: waiting sessions in arrival order
          let model: { id: number; cls: ServiceClass; at: number }[] = [];
          const done = new Set<number>();
          let now = 0;
          let next = 0;
          for (const op of ops) {
            if (op.t === 'tick') now += op.ms;
            else if (op.t === 'push') {
              const id = next++;
              const ok = q.push(op.cls, id, now);
              expect(ok).toBe(model.length < capacity);
              if (ok) model.push({ id, cls: op.cls, at: now });
            } else if (op.t === 'remove') {
              const victim = model[op.pick % Math.max(1, model.length)];
              if (victim) {
                expect(q.remove(victim.id)).toBe(true);
                model = model.filter((m) => m.id !== victim.id);
                done.add(victim.id);
              }
            } else if (op.t === 'expire') {
              const got = q.expire(now);
              const want = model.filter((m) => m.at + timeoutMs <= now);
              expect(new Set(got.map((g) => g.item))).toEqual(new Set(want.map((w) => w.id)));
              for (const g of got) expect(g.waitMs).toBeGreaterThanOrEqual(timeoutMs);
              model = model.filter((m) => m.at + timeoutMs > now);
              for (const g of got) done.add(g.item);
            } else {
              const left = { ...op.slots };
              const got: QueuedItem<number>[] = q.drain(now, (cls) => {
                if (left[cls] <= 0) return false;
                left[cls]--;
                return true;
              });
              // expected: per class, the oldest unexpired sessions up to the free slots, premium first
              const want: number[] = [];
              for (const cls of ['premium', 'freemium'] as const) {
                const live = model.filter((m) => m.cls === cls && m.at + timeoutMs > now);
                // a class stops at its oldest expired session only if it is still at the head:
                // expired sessions are always older than live ones (one timeout, time only advances)
                const head = model.find((m) => m.cls === cls);
                if (head && head.at + timeoutMs <= now) continue;
                want.push(...live.slice(0, op.slots[cls]).map((m) => m.id));
              }
              expect(got.map((g) => g.item)).toEqual(want);
              for (const g of got) expect(g.waitMs).toBeLessThan(timeoutMs);
              model = model.filter((m) => !want.includes(m.id));
              for (const id of want) {
                expect(done.has(id)).toBe(false);
                done.add(id);
              }
            }
            expect(q.size()).toBe(model.length);
            expect(q.size()).toBeLessThanOrEqual(capacity);
            expect(q.size('premium')).toBe(model.filter((m) => m.cls === 'premium').length);
            const oldest = model.reduce((d, m) => Math.min(d, m.at + timeoutMs), Infinity);
            expect(q.nextDeadline()).toBe(model.length ? oldest : undefined);
          }
          // no starvation: once time passes every deadline, nothing is left waiting
          q.expire(now + timeoutMs);
          expect(q.size()).toBe(0);
          expect(done.size + model.length).toBeLessThanOrEqual(next);
        },
      ),
      { numRuns: 300 },
    );
  });
});
