import { describe, expect, it } from 'vitest';
import { within } from '../../src/clock/index.js';
import { VirtualClock } from '../../src/clock/virtual.js';

describe('VirtualClock', () => {
  it('jumps to the next due timer when every task waits, in due order', async () => {
    const clock = new VirtualClock();
    const seen: string[] = [];
    const result = await clock.run(async () => {
      await Promise.all([
        clock.sleep(3000).then(() => seen.push(`a@${clock.now()}`)),
        clock.sleep(1000).then(() => seen.push(`b@${clock.now()}`)),
        (async () => {
          await clock.sleep(500);
          seen.push(`c@${clock.now()}`);
          await clock.sleep(500);
          seen.push(`d@${clock.now()}`);
        })(),
      ]);
      return clock.now();
    });
    expect(result).toBe(3000);
    // b and d are due at the same instant: b was set first.
    expect(seen).toEqual(['c@500', 'b@1000', 'd@1000', 'a@3000']);
  });

  it('an aborted sleep resolves at once and its timer never fires', async () => {
    const clock = new VirtualClock();
    const ac = new AbortController();
    const end = await clock.run(async () => {
      const long = clock.sleep(60_000, ac.signal);
      await clock.sleep(10);
      ac.abort();
      await long;
      return clock.now();
    });
    expect(end).toBe(10);
    expect(clock.fired).toBe(1);
  });

  it('within() gives up waiting on the clock, not on the wall', async () => {
    const clock = new VirtualClock();
    const started = Date.now();
    const out = await clock.run(() => within(clock, 3_600_000, new Promise<string>(() => undefined)));
    expect(out).toBeUndefined();
    expect(clock.now()).toBe(3_600_000);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('says so when every task waits and nothing is due (a stalled simulation)', async () => {
    const clock = new VirtualClock();
    await expect(clock.run(() => new Promise<void>(() => undefined))).rejects.toThrow(/simulation stalled/);
  });

  it('a cancelled timer does not fire and does not hold the clock back', async () => {
    const clock = new VirtualClock();
    let fired = false;
    await clock.run(async () => {
      const cancel = clock.timer(100, () => {
        fired = true;
      });
      cancel();
      await clock.sleep(200);
    });
    expect(fired).toBe(false);
    expect(clock.now()).toBe(200);
  });

  it('a positive wait below the resolution still moves time on', async () => {
    const clock = new VirtualClock();
    await clock.run(async () => {
      await clock.sleep(262240.33917307097);
      const t = clock.now();
      // A run-relative clock far from its origin asks for less than the ulp of now (5.8e-11).
      await clock.sleep(2.9e-11);
      expect(clock.now()).toBeGreaterThan(t);
    });
  });

  it('after() and handle() timers, functions and tasks, fire in the order set; a cancelled handle never', async () => {
    const clock = new VirtualClock();
    const seen: string[] = [];
    await clock.run(async () => {
      clock.after(50, () => seen.push(`fn@${clock.now()}`));
      clock.after(50, { cancelled: false, onTimer: () => seen.push(`task@${clock.now()}`) });
      const h = clock.handle(50, () => seen.push('cancelled'));
      clock.handle(10, () => seen.push(`handle@${clock.now()}`));
      h.cancelled = true;
      await clock.sleep(50);
      seen.push(`sleep@${clock.now()}`);
    });
    // The sleep was set last for t=50: it resolves after the other timers of that instant fired.
    expect(seen).toEqual(['handle@10', 'fn@50', 'task@50', 'sleep@50']);
    expect(clock.fired).toBe(4);
  });
});
