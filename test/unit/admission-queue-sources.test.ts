import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AdmissionQueue } from '../../src/router/admission/admission-queue.js';
import type { AdmittingRouter } from '../../src/router/admission/admission.js';
import { createRouter } from '../../src/router/index.js';
import { AdmissionGate } from '../../src/proxy/admission/admission-gate.js';
import { VirtualClock } from '../../src/clock/virtual.js';
import { isPlbError } from '../../src/core/errors.js';
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

  it('random sequences: FIFO within a host, every host served before any is served twice, fair drops when full, accounting', () => {
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
        const capacity = 6;
        const q = new AdmissionQueue<number>({ capacity, perClass: true, timeoutMs });
        let model: { id: number; cls: ServiceClass; src: string; at: number }[] = [];
        let now = 0;
        let next = 0;
        for (const op of ops) {
          if (op.t === 'tick') now += op.ms;
          else if (op.t === 'push') {
            const id = next++;
            const src = `h${op.src}`;
            const mine = model.filter((m) => m.cls === op.cls);
            const count = (h: string): number => mine.filter((m) => m.src === h).length;
            const most = Math.max(0, ...mine.filter((m) => m.src !== src).map((m) => count(m.src)));
            const ok = q.push(op.cls, id, now, src);
            const dropped = q.takeDropped().map((d) => d.item);
            if (mine.length < capacity) {
              expect([ok, dropped]).toEqual([true, []]);
            } else if (most >= count(src) + 2) {
              // full: the host with the most waiters gave its newest one's place
              expect(ok).toBe(true);
              expect(dropped).toHaveLength(1);
              const gone = mine.find((m) => m.id === dropped[0]);
              expect(count(gone!.src)).toBe(most);
              expect(mine.filter((m) => m.src === gone!.src).at(-1)!.id).toBe(gone!.id);
              model = model.filter((m) => m.id !== gone!.id);
            } else expect([ok, dropped]).toEqual([false, []]);
            if (ok) model.push({ id, cls: op.cls, src, at: now });
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

describe('the queue full: the host with the most waiters gives a place to a host with fewer', () => {
  it('its newest waiter is dropped (takeDropped) while it has two more than the newcomer’s host', () => {
    const q = new AdmissionQueue<string>({ capacity: 5, perClass: true, timeoutMs: 1000 });
    for (let i = 0; i < 5; i++) expect(q.push('premium', `a${i}`, i, 'a')).toBe(true);
    expect(q.push('premium', 'a5', 5, 'a')).toBe(false);
    expect(q.hasDropped()).toBe(false);
    expect(q.push('premium', 'b0', 6, 'b')).toBe(true);
    expect(q.push('premium', 'b1', 7, 'b')).toBe(true);
    // a 3, b 2: even now
    expect(q.push('premium', 'b2', 8, 'b')).toBe(false);
    expect(q.takeDropped()).toEqual([
      { cls: 'premium', item: 'a4', waitMs: 2 },
      { cls: 'premium', item: 'a3', waitMs: 4 },
    ]);
    expect(q.takeDropped()).toEqual([]);
    expect(q.size('premium')).toBe(5);
    // the other class's places are its own
    expect(q.push('freemium', 'f0', 9, 'b')).toBe(true);
    expect(q.drain(10, () => true).map((x) => x.item)).toEqual(['a0', 'b0', 'a1', 'b1', 'a2', 'f0']);
  });

  it('with one host it refuses as it always did', () => {
    const q = new AdmissionQueue<string>({ capacity: 2, timeoutMs: 1000 });
    expect(q.push('premium', 'x', 0)).toBe(true);
    expect(q.push('premium', 'y', 0)).toBe(true);
    expect(q.push('premium', 'z', 0)).toBe(false);
    expect(q.hasDropped()).toBe(false);
  });

  it('through the gate: the dropped waiter is refused ADMISSION_FULL (counted), the newcomer waits and is served', async () => {
    const router = createRouter({
      strategy: 'plb-admit',
      replicas: ['r1'],
      slowStartMs: 0,
      admission: {
        limits: { mode: 'fixed', limit: 1 },
        queue: { capacity: 3, perClass: true, timeoutMs: 60_000 },
      },
    }) as unknown as AdmittingRouter<object>;
    const g = new AdmissionGate(router, router, new VirtualClock());
    expect(g.acquire('premium', {}, 'flood')).toBe('r1');
    const flood = [0, 1, 2].map(() => g.acquire('premium', {}, 'flood') as Promise<string>);
    const outcome = flood.map((p) =>
      p.then(
        () => 'served',
        (err: unknown) => (isPlbError(err, 'ADMISSION_FULL') ? 'full' : 'other'),
      ),
    );
    const client = g.acquire('premium', {}, 'client') as Promise<string>;
    expect(await outcome[2]).toBe('full');
    expect(g.counters.premium.queueFull).toBe(1);
    g.release('r1', 'premium');
    await expect(client).resolves.toBe('r1');
    g.release('r1', 'premium');
    expect(await outcome[0]).toBe('served');
    g.close();
  });
});
