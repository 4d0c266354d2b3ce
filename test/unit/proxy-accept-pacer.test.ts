/**
 * Accept backpressure's decisions (accept-pacer.ts): time and the loop turn's length are passed
 * in, so nothing here waits or measures.
 */
import { describe, expect, it } from 'vitest';
import { AcceptPacer, DEFAULT_PACER, type PacerOptions } from '../../src/proxy/admission/accept-pacer.js';

const opts = (o: Partial<PacerOptions> = {}): PacerOptions => ({
  perTurn: 3,
  slowPerTurn: 1,
  lagMs: 50,
  maxHoldMs: 1000,
  ...o,
});

describe('AcceptPacer', () => {
  it('starts clients at once while the turn has room, then holds the rest in order', () => {
    const p = new AcceptPacer<number>(opts());
    expect([1, 2, 3, 4, 5].map((i) => p.offer(i, 0))).toEqual(['start', 'start', 'start', 'hold', 'hold']);
    expect(p.held).toBe(2);
    expect(p.turn(1, undefined)).toEqual({ start: [4, 5], expired: [] });
    expect(p.held).toBe(0);
    expect(p.counters).toMatchObject({ held: 2, peakHeld: 2, expired: 0 });
  });

  it('a client never overtakes one held before it, even when the turn has room', () => {
    const p = new AcceptPacer<string>(opts({ perTurn: 2 }));
    p.offer('a', 0);
    p.offer('b', 0);
    expect(p.offer('c', 0)).toBe('hold');
    expect(p.turn(1, undefined).start).toEqual(['c']);
    // One of the turn's two is used by c; d may start, e waits for the next turn.
    expect(p.offer('d', 2)).toBe('start');
    expect(p.offer('e', 2)).toBe('hold');
    expect(p.offer('f', 2)).toBe('hold');
    expect(p.turn(3, 1).start).toEqual(['e', 'f']);
  });

  it('starts at most perTurn per turn, however many are held', () => {
    const p = new AcceptPacer<number>(opts({ perTurn: 4 }));
    for (let i = 0; i < 20; i++) p.offer(i, 0);
    const turns: number[][] = [];
    for (let t = 1; p.held > 0; t++) turns.push(p.turn(t, 1).start);
    expect(turns).toEqual([
      [4, 5, 6, 7],
      [8, 9, 10, 11],
      [12, 13, 14, 15],
      [16, 17, 18, 19],
    ]);
  });

  it('a turn longer than lagMs lowers the next turn to slowPerTurn; a quick one restores it', () => {
    const p = new AcceptPacer<number>(opts({ perTurn: 3, slowPerTurn: 1, lagMs: 50 }));
    for (let i = 0; i < 12; i++) p.offer(i, 0);
    expect(p.turn(1, 80).start).toEqual([3]);
    expect(p.turn(2, 51).start).toEqual([4]);
    // No measurement (the first turn after a quiet spell): the last state holds.
    expect(p.turn(3, undefined).start).toEqual([5]);
    expect(p.turn(4, 50).start).toEqual([6, 7, 8]);
    expect(p.counters.slowTurns).toBe(2);
    // While slow, an accept between turns gets the slow budget too.
    p.drain();
    p.turn(5, 90);
    expect(p.offer(100, 5)).toBe('start');
    expect(p.offer(101, 5)).toBe('hold');
  });

  it('a client held longer than maxHoldMs expires (oldest first) before the turn starts anyone', () => {
    const p = new AcceptPacer<string>(opts({ perTurn: 1, maxHoldMs: 1000 }));
    p.offer('started', 0);
    p.offer('old1', 0);
    p.offer('old2', 10);
    p.offer('young', 900);
    expect(p.turn(1005, 1)).toEqual({ start: ['old2'], expired: ['old1'] });
    expect(p.turn(2000, 1)).toEqual({ start: [], expired: ['young'] });
    expect(p.counters.expired).toBe(2);
    expect(p.held).toBe(0);
  });

  it('even a lagging loop moves the held clients on: every turn starts at least slowPerTurn', () => {
    const p = new AcceptPacer<number>(opts({ perTurn: 10, slowPerTurn: 2, maxHoldMs: 1e9 }));
    for (let i = 0; i < 1000; i++) p.offer(i, 0);
    let started = 10;
    for (let t = 1; t <= 100; t++) started += p.turn(t, 10_000).start.length;
    expect(started).toBe(210);
    expect(p.counters.peakHeld).toBe(990);
  });

  it('drain hands back everything held, in order, and the pacer is empty after it', () => {
    const p = new AcceptPacer<number>(opts({ perTurn: 1 }));
    for (let i = 0; i < 5; i++) p.offer(i, 0);
    expect(p.drain()).toEqual([1, 2, 3, 4]);
    expect(p.held).toBe(0);
    expect(p.turn(1, 1)).toEqual({ start: [], expired: [] });
  });

  it('keeps its order across the compaction of a long queue', () => {
    const p = new AcceptPacer<number>(opts({ perTurn: 500, maxHoldMs: 1e9 }));
    const n = 5000;
    for (let i = 0; i < n; i++) p.offer(i, 0);
    const out: number[] = [];
    for (let t = 1; p.held > 0; t++) {
      out.push(...p.turn(t, 1).start);
      // Arrivals between turns go to the back.
      if (t === 3) for (let i = n; i < n + 700; i++) p.offer(i, t);
    }
    expect(out).toEqual(Array.from({ length: n + 700 - 500 }, (_, i) => i + 500));
  });

  it('refuses a budget below 1; the defaults are sane', () => {
    expect(() => new AcceptPacer(opts({ slowPerTurn: 0 }))).toThrow(RangeError);
    expect(DEFAULT_PACER.slowPerTurn).toBeGreaterThanOrEqual(1);
    expect(DEFAULT_PACER.perTurn).toBeGreaterThan(DEFAULT_PACER.slowPerTurn);
  });
});
