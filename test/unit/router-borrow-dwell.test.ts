import { describe, expect, it } from 'vitest';
import { BORROW_DWELL_MS, BorrowDwell, createRouter, type ServiceClass } from '../../src/router/index.js';

describe('BorrowDwell (hold=dwell)', () => {
  it('passes once the condition held at every check for the dwell, then starts over', () => {
    const d = new BorrowDwell(2000);
    expect(d.pass('borrow', 'premium', true, 0)).toBe(false);
    expect(d.pass('borrow', 'premium', true, 1999)).toBe(false);
    expect(d.pass('borrow', 'premium', true, 2000)).toBe(true);
    // started over: a new dwell from the next check that sees it
    expect(d.pass('borrow', 'premium', true, 2001)).toBe(false);
    expect(d.pass('borrow', 'premium', true, 4001)).toBe(true);
  });

  it('one check that sees the condition false resets it; classes and kinds are apart', () => {
    const d = new BorrowDwell(1000);
    expect(d.pass('return', 'freemium', true, 0)).toBe(false);
    expect(d.pass('borrow', 'freemium', true, 0)).toBe(false);
    expect(d.pass('return', 'premium', true, 0)).toBe(false);
    expect(d.pass('return', 'freemium', false, 900)).toBe(false);
    expect(d.pass('return', 'freemium', true, 1000)).toBe(false);
    expect(d.pass('borrow', 'freemium', true, 1000)).toBe(true);
    expect(d.pass('return', 'premium', true, 1000)).toBe(true);
    expect(d.pass('return', 'freemium', true, 2000)).toBe(true);
  });

  it('a zero dwell acts at the first check, as hold=none', () => {
    expect(new BorrowDwell(0).pass('borrow', 'premium', true, 5)).toBe(true);
    expect(BORROW_DWELL_MS).toBeGreaterThan(0);
  });
});

/**
 * Premium sessions pile up on their two replicas, then leave and come back in bursts faster than
 * the dwell: hold=none borrows and returns a freemium replica at each swing, hold=dwell does not
 * follow swings shorter than the dwell and still borrows under pressure that lasts.
 */
function swings(hold: 'none' | 'dwell', swingMs: number): number {
  const changes: string[] = [];
  const router = createRouter({
    strategy: 'plb',
    replicas: ['r1', 'r2', 'r3', 'r4', 'r5'],
    readings: { hold },
    onRoleChange: (c) => changes.push(c.reason),
  });
  const open: { replica: string; cls: ServiceClass }[] = [];
  let now = 0;
  for (let cycle = 0; cycle < 20; cycle++) {
    // a burst of premium sessions (pressure well above the freemium replicas' load)
    for (let i = 0; i < 30; i++, now += swingMs / 60)
      open.push({ replica: router.admit('premium', now).replica, cls: 'premium' });
    // they leave; a few new ones see the pressure gone
    while (open.length > 0) {
      const s = open.pop()!;
      router.release(s.replica, s.cls, now);
    }
    for (let i = 0; i < 4; i++, now += swingMs / 8) {
      const a = router.admit('premium', now).replica;
      router.release(a, 'premium', now);
    }
  }
  return changes.filter((r) => r === 'borrow' || r === 'return').length;
}

describe('hold=dwell against flapping', () => {
  it('borrows and returns at every short swing under hold=none, far less under hold=dwell', () => {
    const none = swings('none', 500);
    const dwell = swings('dwell', 500);
    expect(none).toBeGreaterThanOrEqual(20);
    expect(dwell).toBeLessThan(none / 4);
  });

  it('pressure that lasts longer than the dwell still borrows under hold=dwell', () => {
    expect(swings('dwell', 20_000)).toBeGreaterThan(0);
  });
});
