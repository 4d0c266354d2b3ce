/**
 * A 4-ary min-heap of items on (key, seq): ties on key come out in seq order, so with distinct
 * seqs (the order they were added) the order is the same on every run. The virtual clock's timers
 * and the simulated CPU's jobs go through it a few times per simulated query, with 10^5 entries
 * at a thousand replicas: keys and seqs sit in typed arrays beside the items, so a sift compares
 * numbers in two flat arrays instead of chasing a pointer to each item (and an item needs no key
 * fields of its own); four children a node halve the depth of a binary heap, and a sift reads
 * them side by side. plb's one general heap (the router's least-loaded choice keeps an indexed
 * heap of its own: it moves an element in place when its key changes).
 */
export class SeqHeap<T> {
  private items: (T | undefined)[] = [];
  private keys = new Float64Array(64);
  private seqs = new Float64Array(64);
  private n = 0;

  get size(): number {
    return this.n;
  }

  /** The item with the least (key, seq), or undefined when empty. */
  peek(): T | undefined {
    return this.n > 0 ? this.items[0] : undefined;
  }

  /** The least key, or +Infinity when empty. */
  peekKey(): number {
    return this.n > 0 ? (this.keys[0] as number) : Number.POSITIVE_INFINITY;
  }

  push(x: T, key: number, seq: number): void {
    if (this.n === this.keys.length) this.grow();
    const keys = this.keys;
    const seqs = this.seqs;
    const items = this.items;
    let i = this.n++;
    while (i > 0) {
      const p = (i - 1) >> 2;
      const pk = keys[p] as number;
      if (pk < key || (pk === key && (seqs[p] as number) < seq)) break;
      keys[i] = pk;
      seqs[i] = seqs[p] as number;
      items[i] = items[p];
      i = p;
    }
    keys[i] = key;
    seqs[i] = seq;
    items[i] = x;
  }

  pop(): T | undefined {
    if (this.n === 0) return undefined;
    const items = this.items;
    const top = items[0];
    const n = --this.n;
    const keys = this.keys;
    const seqs = this.seqs;
    const k = keys[n] as number;
    const s = seqs[n] as number;
    const last = items[n];
    items[n] = undefined;
    if (n === 0) return top;
    let i = 0;
    for (;;) {
      const first = 4 * i + 1;
      if (first >= n) break;
      // The least of up to four children, adjacent in the arrays (one or two cache lines).
      let c = first;
      let ck = keys[first] as number;
      let cs = seqs[first] as number;
      const end = Math.min(first + 4, n);
      for (let j = first + 1; j < end; j++) {
        const jk = keys[j] as number;
        if (jk < ck || (jk === ck && (seqs[j] as number) < cs)) {
          c = j;
          ck = jk;
          cs = seqs[j] as number;
        }
      }
      if (k < ck || (k === ck && s < cs)) break;
      keys[i] = ck;
      seqs[i] = cs;
      items[i] = items[c];
      i = c;
    }
    keys[i] = k;
    seqs[i] = s;
    items[i] = last;
    return top;
  }

  clear(): void {
    this.items = [];
    this.n = 0;
  }

  private grow(): void {
    const keys = new Float64Array(this.keys.length * 2);
    keys.set(this.keys);
    this.keys = keys;
    const seqs = new Float64Array(this.seqs.length * 2);
    seqs.set(this.seqs);
    this.seqs = seqs;
  }
}
