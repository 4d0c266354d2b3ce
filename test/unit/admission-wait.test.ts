import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock/virtual.js';
import { isPlbError } from '../../src/core/errors.js';
import { createRouter } from '../../src/router/index.js';
import type { AdmittingRouter } from '../../src/router/admission/admission.js';
import { AdmissionWaiter } from '../../src/workload/admission-wait.js';

function setup() {
  const router = createRouter({
    strategy: 'plb-admit',
    replicas: ['r1', 'r2'],
    slowStartMs: 0,
    admission: { limits: { mode: 'fixed', limit: 1 }, queue: { capacity: 2, timeoutMs: 1000 } },
  }) as unknown as AdmittingRouter<object>;
  const clock = new VirtualClock();
  return { router, clock, waiter: new AdmissionWaiter(router, clock) };
}

describe('AdmissionWaiter', () => {
  it('holds a session until a slot frees, premium first, and reports the wait', async () => {
    const { router, clock, waiter } = setup();
    await clock.run(async () => {
      const a = await waiter.acquire('freemium');
      await waiter.acquire('premium');
      const f = waiter.acquire('freemium').catch((e: unknown) => e);
      const p = waiter.acquire('premium');
      expect(waiter.waiting).toBe(2);
      await clock.sleep(300);
      router.release(a.replica, 'freemium', clock.now());
      waiter.released();
      await expect(p).resolves.toEqual({ replica: a.replica, queueMs: 300 });
      // the freemium waiter times out at its deadline, with an admission error
      await clock.sleep(1000);
      const err = await f;
      expect(isPlbError(err, 'ADMISSION_TIMEOUT')).toBe(true);
      expect(waiter.waiting).toBe(0);
    });
  });

  it('refuses when the queue is full, and a client that leaves gives up its place', async () => {
    const { clock, waiter } = setup();
    await waiter.acquire('premium');
    await waiter.acquire('premium');
    const ac = new AbortController();
    const left = waiter.acquire('freemium', ac.signal);
    const stays = waiter.acquire('freemium');
    const full = await waiter.acquire('freemium').catch((e: unknown) => e);
    expect(isPlbError(full, 'ADMISSION_FULL')).toBe(true);
    ac.abort();
    expect(isPlbError(await left.catch((e: unknown) => e), 'INTERRUPTED')).toBe(true);
    expect(waiter.waiting).toBe(1);
    waiter.stop();
    expect(isPlbError(await stays.catch((e: unknown) => e), 'INTERRUPTED')).toBe(true);
    void clock;
  });
});
