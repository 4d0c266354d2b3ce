import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AdmissionQueue } from '../../src/router/admission/admission-queue.js';
import type { AdmittingRouter } from '../../src/router/admission/admission.js';
import { buildRouter, type ServiceClass } from '../../src/router/index.js';
import { proxyAdmission } from '../../src/proxy/admission/replica-limits.js';

// The proxy's admission defaults (proxyAdmission): each class its own queue places, and a floor
// for freemium on its own replicas as premium has its reserve. Two replicas under plb: r1
// premium's, r2 freemium's.

const LIMIT = 20;
const QUEUE = 5;

function proxyRouter(
  over: { premiumReserve?: number; freemiumReserve?: number } = {},
): AdmittingRouter<number> {
  return buildRouter({
    strategy: 'plb',
    replicas: ['r1', 'r2'],
    slowStartMs: 0,
    admission: proxyAdmission({ limit: LIMIT, queue: QUEUE, timeoutMs: 10_000, ...over }),
  }) as unknown as AdmittingRouter<number>;
}

/** A flood of n sessions of cls: what each request got. */
function flood(r: AdmittingRouter<number>, cls: ServiceClass, n: number, from: number): string[] {
  const got: string[] = [];
  for (let i = 0; i < n; i++) {
    const a = r.request(cls, from + i, 0);
    got.push(typeof a === 'string' ? a : 'placed');
  }
  return got;
}

const held = (r: AdmittingRouter<number>, id: string, cls: ServiceClass): number =>
  r.snapshot().find((s) => s.id === id)?.sessions[cls] ?? 0;

describe('admission queue: each class its own places', () => {
  it('a class fills only its own capacity; the other class still queues', () => {
    const q = new AdmissionQueue<number>({ capacity: 3, timeoutMs: 100, perClass: true });
    for (let i = 0; i < 3; i++) expect(q.push('freemium', i, 0)).toBe(true);
    expect(q.push('freemium', 3, 0)).toBe(false);
    for (let i = 10; i < 13; i++) expect(q.push('premium', i, 0)).toBe(true);
    expect(q.push('premium', 13, 0)).toBe(false);
    expect(q.size()).toBe(6);
  });

  it('shared (the default, the bench): one class fills the places of both', () => {
    const q = new AdmissionQueue<number>({ capacity: 3, timeoutMs: 100 });
    for (let i = 0; i < 3; i++) expect(q.push('freemium', i, 0)).toBe(true);
    expect(q.push('premium', 10, 0)).toBe(false);
  });

  it('per class, a push is refused only when its own class has capacity waiting (random sequences)', () => {
    const op = fc.record({
      kind: fc.constantFrom('push', 'remove', 'drain'),
      cls: fc.constantFrom<ServiceClass>('premium', 'freemium'),
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.array(op, { maxLength: 60 }), (capacity, ops) => {
        const q = new AdmissionQueue<number>({ capacity, timeoutMs: 1000, perClass: true });
        const waiting: Record<ServiceClass, number[]> = { premium: [], freemium: [] };
        ops.forEach((o, n) => {
          if (o.kind === 'push') {
            const ok = q.push(o.cls, n, 0);
            expect(ok).toBe(waiting[o.cls].length < capacity);
            if (ok) waiting[o.cls].push(n);
          } else if (o.kind === 'remove') {
            const first = waiting[o.cls].shift();
            if (first !== undefined) expect(q.remove(first)).toBe(true);
          } else {
            // One session of o.cls admitted (its oldest), none of the other.
            let taken = 0;
            q.drain(1, (cls) => cls === o.cls && taken++ === 0);
            waiting[o.cls].shift();
          }
          expect(q.size('premium')).toBe(waiting.premium.length);
          expect(q.size('freemium')).toBe(waiting.freemium.length);
        });
      }),
    );
  });
});

describe('proxy admission defaults: a flood of either class', () => {
  it('a premium flood leaves freemium its floor on its own replica, and its own queue places', () => {
    const r = proxyRouter();
    const got = flood(r, 'premium', 100, 0);
    // r1 whole, r2 less freemium's floor (ceil(0.1 x 20) = 2); then the queue's 5; then refused.
    const floor = Math.ceil(0.1 * LIMIT);
    expect(got.filter((g) => g === 'placed')).toHaveLength(2 * LIMIT - floor);
    expect(got.filter((g) => g === 'queued')).toHaveLength(QUEUE);
    expect(r.queued('premium')).toBe(QUEUE);
    // A freemium client: a slot at once on its own replica, for each of the floor's slots.
    for (let i = 0; i < floor; i++) {
      const a = r.request('freemium', 1000 + i, 0);
      expect(a).toMatchObject({ replica: 'r2' });
    }
    // Past the floor freemium waits in its own places, not refused by premium's full ones.
    expect(r.request('freemium', 2000, 0)).toBe('queued');
    expect(held(r, 'r2', 'freemium')).toBe(floor);
  });

  it('a freemium flood leaves premium its reserve and its own queue places', () => {
    const r = proxyRouter();
    flood(r, 'freemium', 100, 0);
    const reserve = Math.ceil(0.1 * LIMIT);
    expect(held(r, 'r1', 'freemium')).toBe(LIMIT - reserve);
    expect(r.queued('freemium')).toBe(QUEUE);
    for (let i = 0; i < reserve; i++)
      expect(r.request('premium', 1000 + i, 0)).toMatchObject({ replica: 'r1' });
    expect(r.request('premium', 2000, 0)).toBe('queued');
  });

  it('a mixed flood: neither class takes the other’s reserved slots or queue places', () => {
    const r = proxyRouter();
    // Interleaved, as a flood of both arrives.
    for (let i = 0; i < 200; i++) r.request(i % 2 ? 'premium' : 'freemium', i, 0);
    const reserve = Math.ceil(0.1 * LIMIT);
    expect(held(r, 'r1', 'premium')).toBeGreaterThanOrEqual(reserve);
    expect(held(r, 'r2', 'freemium')).toBeGreaterThanOrEqual(reserve);
    expect(r.queued('premium')).toBe(QUEUE);
    expect(r.queued('freemium')).toBe(QUEUE);
    // A premium session that ends hands its slot to premium's oldest waiter, not a newcomer.
    r.release('r1', 'premium', 1);
    const out = r.pump(1);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ cls: 'premium', replica: 'r1' });
  });

  it('--admission-freemium-reserve 0: a premium flood takes both replicas whole (the earlier default)', () => {
    const r = proxyRouter({ freemiumReserve: 0 });
    flood(r, 'premium', 100, 0);
    expect(held(r, 'r2', 'premium')).toBe(LIMIT);
    expect(r.request('freemium', 1000, 0)).toBe('queued');
  });
});
