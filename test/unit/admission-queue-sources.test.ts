import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AdmissionQueue } from '../../src/router/admission-queue.js';
import type { AdmittingRouter } from '../../src/router/admission.js';
import { createRouter } from '../../src/router/index.js';
import type { ServiceClass } from '../../src/core/service-class.js';

/** Admits up to n (per drain), in the order offered. */
const upTo = (n: number) => {
  let left = n;
  return (): boolean => left-- > 0;
};

describe('AdmissionQueue: client hosts (sources) take turns within a class', () => {
  it('a second host with one waiter behind a flood host is offered right after the flood’s oldest', () => {
    const q = new AdmissionQueue<string>({ capacity: 100, timeoutMs: 1000 });
    for (let i = 0; i < 20; i++) q.push('premium', `flood${i}`, i, '10.0.0.2');
    q.push('premium', 'client', 30, '10.0.0.1');
    expect(q.drain(40, upTo(2)).map((x) => x.item)).toEqual(['flood0', 'client']);
    // then the flood goes on, in its own order
    expect(q.drain(41, upTo(3)).map((x) => x.item)).toEqual(['flood1', 'flood2', 'flood3']);
  });

  it('a host arriving after the only host was served goes first at the next free slot', () => {
    const q = new AdmissionQueue<string>({ capacity: 100, timeoutMs: 1000 });
    for (let i = 0; i < 5; i++) q.push('freemium', `flood${i}`, i, 'a');
    expect(q.drain(5, upTo(1)).map((x) => x.item)).toEqual(['flood0']);
    q.push('freemium', 'client', 6, 'b');
    expect(q.drain(7, upTo(1)).map((x) => x.item)).toEqual(['client']);
  });

  it('a host whose sessions were admitted without waiting counts as served: a new host goes before its waiters', () => {
    const q = new AdmissionQueue<string>({ capacity: 100, timeoutMs: 1000 });
    q.admitted('premium', 'flood');
    for (let i = 0; i < 5; i++) q.push('premium', `flood${i}`, i, 'flood');
    q.push('premium', 'client', 6, 'client');
    expect(q.drain(7, upTo(2)).map((x) => x.item)).toEqual(['client', 'flood0']);
    // never served, the first host to wait keeps its place
    const r = new AdmissionQueue<string>({ capacity: 100, timeoutMs: 1000 });
    r.push('premium', 'a1', 0, 'a');
    r.push('premium', 'b1', 1, 'b');
    expect(r.drain(2, upTo(1)).map((x) => x.item)).toEqual(['a1']);
  });

  it('a refusal keeps the turn with the host whose turn it was', () => {
    const q = new AdmissionQueue<string>({ capacity: 100, timeoutMs: 1000 });
    q.push('premium', 'a1', 0, 'a');
    q.push('premium', 'a2', 1, 'a');
    q.push('premium', 'b1', 2, 'b');
    const offered: string[] = [];
    expect(q.drain(3, (_c, item) => (offered.push(item), false))).toEqual([]);
    expect(offered).toEqual(['a1']);
    expect(q.drain(3, upTo(3)).map((x) => x.item)).toEqual(['a1', 'b1', 'a2']);
  });

  it('three hosts in turn, FIFO within each; premium before freemium still', () => {
    const q = new AdmissionQueue<string>({ capacity: 100, timeoutMs: 1000 });
    for (const [item, src] of [
      ['a1', 'a'],
      ['a2', 'a'],
      ['a3', 'a'],
      ['b1', 'b'],
      ['c1', 'c'],
      ['b2', 'b'],
    ] as const)
      q.push('freemium', item, 0, src);
    q.push('premium', 'p1', 1, 'a');
    expect(q.drain(2, () => true).map((x) => x.item)).toEqual(['p1', 'a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });

  it('with one host (or none given) it is the FIFO it always was', () => {
    const q = new AdmissionQueue<string>({ capacity: 100, timeoutMs: 1000 });
    const r = new AdmissionQueue<string>({ capacity: 100, timeoutMs: 1000 });
    for (let i = 0; i < 8; i++) {
      q.push('premium', `s${i}`, i, 'only');
      r.push('premium', `s${i}`, i);
    }
    q.remove('s3');
    r.remove('s3');
    for (const n of [2, 0, 3]) {
      expect(q.drain(10, upTo(n)).map((x) => x.item)).toEqual(r.drain(10, upTo(n)).map((x) => x.item));
    }
    expect(q.drain(10, () => true).map((x) => x.item)).toEqual(['s6', 's7']);
  });

  it('expire, remove and nextDeadline see every host’s waiters', () => {
    const q = new AdmissionQueue<string>({ capacity: 100, timeoutMs: 100 });
    q.push('premium', 'a1', 0, 'a');
    q.push('premium', 'b1', 10, 'b');
    q.push('premium', 'a2', 20, 'a');
    q.push('premium', 'c1', 30, 'c');
    expect(q.nextDeadline()).toBe(100);
    expect(q.remove('a1')).toBe(true);
    expect(q.nextDeadline()).toBe(110);
    expect(q.expire(120).map((x) => x.item)).toEqual(['b1', 'a2']);
    expect(q.size('premium')).toBe(1);
    expect(q.nextDeadline()).toBe(130);
    expect(q.remove('b1')).toBe(false);
    expect(q.drain(121, () => true).map((x) => x.item)).toEqual(['c1']);
    expect(q.size()).toBe(0);
    expect(q.nextDeadline()).toBeUndefined();
  });

  it('capacity counts every host’s waiters', () => {
    const q = new AdmissionQueue<string>({ capacity: 2, perClass: true, timeoutMs: 100 });
    expect(q.push('premium', 'a', 0, 'x')).toBe(true);
    expect(q.push('premium', 'b', 0, 'y')).toBe(true);
    expect(q.push('premium', 'c', 0, 'z')).toBe(false);
    expect(q.push('freemium', 'd', 0, 'z')).toBe(true);
  });

  it('random sequences: FIFO within a host, every host served before any is served twice, accounting', () => {
    type Op =
      | { t: 'push'; cls: ServiceClass; src: number }
      | { t: 'drain'; n: number }
      | { t: 'expire' }
      | { t: 'remove'; pick: number }
      | { t: 'tick'; ms: number };
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .record({ cls: fc.constantFrom<ServiceClass>('premium', 'freemium'), src: fc.nat(3) })
          .map((r) => ({ t: 'push' as const, ...r })),
      },
      { weight: 3, arbitrary: fc.nat(6).map((n) => ({ t: 'drain' as const, n })) },
      { weight: 1, arbitrary: fc.constant({ t: 'expire' as const }) },
      { weight: 1, arbitrary: fc.nat(1000).map((pick) => ({ t: 'remove' as const, pick })) },
      { weight: 3, arbitrary: fc.integer({ min: 0, max: 300 }).map((ms) => ({ t: 'tick' as const, ms })) },
    );
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 150 }), (ops) => {
        const timeoutMs = 500;
        const q = new AdmissionQueue<number>({ capacity: 1000, timeoutMs });
        let model: { id: number; cls: ServiceClass; src: string; at: number }[] = [];
        let now = 0;
        let next = 0;
        for (const op of ops) {
          if (op.t === 'tick') now += op.ms;
          else if (op.t === 'push') {
            const id = next++;
            q.push(op.cls, id, now, `h${op.src}`);
            model.push({ id, cls: op.cls, src: `h${op.src}`, at: now });
          } else if (op.t === 'remove') {
            const victim = model[op.pick % Math.max(1, model.length)];
            if (victim) {
              expect(q.remove(victim.id)).toBe(true);
              model = model.filter((m) => m.id !== victim.id);
            }
          } else if (op.t === 'expire') {
            const got = q.expire(now).map((g) => g.item);
            const want = model.filter((m) => m.at + timeoutMs <= now).map((m) => m.id);
            expect(new Set(got)).toEqual(new Set(want));
            model = model.filter((m) => m.at + timeoutMs > now);
          } else {
            q.expire(now);
            model = model.filter((m) => m.at + timeoutMs > now);
            const got = q.drain(now, upTo(op.n));
            expect(got.length).toBe(Math.min(op.n, model.length));
            for (const cls of ['premium', 'freemium'] as const) {
              const mine = got.filter((g) => g.cls === cls).map((g) => model.find((m) => m.id === g.item));
              const seen = new Map<string, number>();
              for (const m of mine) {
                if (!m) throw new Error('handed out a session that was not waiting');
                // FIFO within a host: the oldest of its host still waiting
                const oldest = model.find((x) => x.cls === cls && x.src === m.src);
                expect(oldest?.id).toBe(m.id);
                // in turn: no host served again before every other host still waiting had its turn
                const others = new Set(
                  model.filter((x) => x.cls === cls && x.src !== m.src).map((x) => x.src),
                );
                for (const h of others) expect(seen.get(m.src) ?? 0).toBeLessThanOrEqual(seen.get(h) ?? 0);
                model = model.filter((x) => x.id !== m.id);
                seen.set(m.src, (seen.get(m.src) ?? 0) + 1);
              }
            }
          }
          expect(q.size()).toBe(model.length);
          const oldest = model.reduce((d, m) => Math.min(d, m.at + timeoutMs), Infinity);
          expect(q.nextDeadline()).toBe(model.length ? oldest : undefined);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('AdmittingRouter: the client host a session comes from', () => {
  it('a host that holds every slot and has waiters: a newcomer host gets the next freed slot', () => {
    const r = createRouter({
      strategy: 'plb-admit',
      replicas: ['r1'],
      slowStartMs: 0,
      admission: { limits: { mode: 'fixed', limit: 3 }, queue: { capacity: 100, timeoutMs: 5000 } },
    }) as unknown as AdmittingRouter<string>;
    for (let i = 0; i < 3; i++) expect(r.request('premium', `held${i}`, 0, 'flood')).not.toBe('queued');
    for (let i = 0; i < 5; i++) expect(r.request('premium', `wait${i}`, 1, 'flood')).toBe('queued');
    expect(r.request('premium', 'client', 2, 'client')).toBe('queued');
    r.release('r1', 'premium', 3);
    expect(r.pump(3).map((h) => h.ticket)).toEqual(['client']);
    r.release('r1', 'premium', 4);
    expect(r.pump(4).map((h) => h.ticket)).toEqual(['wait0']);
  });
});
