/**
 * A binary min-heap under a strict order `less` (ties broken by the caller, e.g. by a sequence
 * number, so equal keys come out in insertion order). Used by the virtual clock (timers by due
 * time) and the simulator's CPU (jobs by finish level): O(log n) push and pop.
 */
export class MinHeap<T> {
  private readonly h: T[] = [];

  constructor(private readonly less: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.h.length;
  }

  /** The least element, left in place. */
  peek(): T | undefined {
    return this.h[0];
  }

  push(x: T): void {
    const h = this.h;
    h.push(x);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = h[p] as T;
      if (!this.less(x, parent)) break;
      h[i] = parent;
      i = p;
    }
    h[i] = x;
  }

  /** Removes and returns the least element. */
  pop(): T | undefined {
    const h = this.h;
    const top = h[0];
    const last = h.pop();
    if (top === undefined || last === undefined || h.length === 0) return top;
    const n = h.length;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && this.less(h[r] as T, h[l] as T) ? r : l;
      if (!this.less(h[c] as T, last)) break;
      h[i] = h[c] as T;
      i = c;
    }
    h[i] = last;
    return top;
  }

  clear(): void {
    this.h.length = 0;
  }
}
