// The heap under the virtual clock and the simulated CPU: (key, seq) order, ties by seq, across
// growth and interleaved pushes and pops (the simulator's order of events rests on it).
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/rng.js';
import { SeqHeap } from '../../src/core/seq-heap.js';

describe('SeqHeap', () => {
  it('pops in (key, seq) order, ties on key in seq order, through growth and interleaving', () => {
    const rng = new Rng(3);
    const heap = new SeqHeap<{ key: number; seq: number }>();
    const live: { key: number; seq: number }[] = [];
    const out: { key: number; seq: number }[] = [];
    const expected: { key: number; seq: number }[] = [];
    let seq = 0;
    for (let round = 0; round < 50; round++) {
      // Few distinct keys: many ties.
      for (let i = 0; i < 40; i++) {
        const x = { key: rng.int(0, 20), seq: seq++ };
        heap.push(x, x.key, x.seq);
        live.push(x);
      }
      live.sort((a, b) => a.key - b.key || a.seq - b.seq);
      for (let i = 0; i < 25; i++) {
        expected.push(live.shift() as { key: number; seq: number });
        expect(heap.peekKey()).toBe(expected[expected.length - 1]?.key);
        out.push(heap.pop() as { key: number; seq: number });
      }
    }
    expect(out).toEqual(expected);
    expect(heap.size).toBe(live.length);
    heap.clear();
    expect(heap.size).toBe(0);
    expect(heap.pop()).toBeUndefined();
    expect(heap.peek()).toBeUndefined();
    expect(heap.peekKey()).toBe(Number.POSITIVE_INFINITY);
  });
});
