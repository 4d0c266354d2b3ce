/** What a SeqHeap orders by: `key`, then `seq` (distinct per element: the order they were added). */
export interface Keyed {
  key: number;
  seq: number;
}

/**
 * A binary min-heap on (key, seq) with the comparison written out: the virtual clock's timers and
 * the simulated CPU's jobs go through it a few times per simulated query, and a comparator call
 * per step was a tenth of a large simulation's time. Ties on key come out in seq order, so the
 * order is the same on every run. plb's one general heap (the router's least-loaded choice keeps
 * an indexed heap of its own: it moves an element in place when its key changes).
 */
export class SeqHeap<T extends Keyed> {
  private readonly h: T[] = [];

  get size(): number {
    return this.h.length;
  }

  peek(): T | undefined {
    return this.h[0];
  }

  push(x: T): void {
    const h = this.h;
    const k = x.key;
    const s = x.seq;
    let i = h.length;
    h.push(x);
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = h[p] as T;
      if (parent.key < k || (parent.key === k && parent.seq < s)) break;
      h[i] = parent;
      i = p;
    }
    h[i] = x;
  }

  pop(): T | undefined {
    const h = this.h;
    const top = h[0];
    const last = h.pop();
    if (top === undefined || last === undefined || h.length === 0) return top;
    const n = h.length;
    const k = last.key;
    const s = last.seq;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      let c = l;
      let child = h[l] as T;
      const r = l + 1;
      if (r < n) {
        const right = h[r] as T;
        if (right.key < child.key || (right.key === child.key && right.seq < child.seq)) {
          c = r;
          child = right;
        }
      }
      if (k < child.key || (k === child.key && s < child.seq)) break;
      h[i] = child;
      i = c;
    }
    h[i] = last;
    return top;
  }

  clear(): void {
    this.h.length = 0;
  }
}
