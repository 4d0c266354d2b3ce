import { describe, expect, it } from 'vitest';
import { Fifo } from '../../src/core/fifo.js';

describe('Fifo', () => {
  it('gives items back in the order they came, across its compactions', () => {
    const q = new Fifo<number>();
    const out: number[] = [];
    let next = 0;
    // Interleaved pushes and shifts, long enough to cut the consumed front off several times.
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 300; i++) q.push(next++);
      for (let i = 0; i < 250; i++) out.push(q.shift() as number);
    }
    while (q.size > 0) out.push(q.shift() as number);
    expect(out).toEqual(Array.from({ length: next }, (_, i) => i));
    expect(q.shift()).toBeUndefined();
    expect(q.peek()).toBeUndefined();
  });

  it('peeks without taking, and clears', () => {
    const q = new Fifo<string>();
    q.push('a');
    q.push('b');
    expect(q.peek()).toBe('a');
    expect(q.size).toBe(2);
    q.clear();
    expect(q.size).toBe(0);
    q.push('c');
    expect(q.shift()).toBe('c');
  });
});
