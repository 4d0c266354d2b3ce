// Indexed min-heaps over replica indices, grouped, so least-loaded choice costs O(log K) at K=1000.
// Ordering is (key, index): the same least key / lowest index rule as the plain scans in plb-rules.
import { PlbError } from '../errors.js';

/** A binary min-heap of replica indices; `pos` and `key` are shared by all heaps of one group set. */
class IndexedHeap {
  readonly items: number[] = [];

  constructor(
    private readonly pos: Int32Array,
    private readonly key: Float64Array,
    /** true: the top is the greatest key (ties still to the lowest index) */
    private readonly max = false,
  ) {}

  get size(): number {
    return this.items.length;
  }

  top(): number {
    return this.items.length > 0 ? (this.items[0] as number) : -1;
  }

  push(i: number): void {
    this.items.push(i);
    this.pos[i] = this.items.length - 1;
    this.up(this.items.length - 1);
  }

  remove(i: number): void {
    const p = this.pos[i] as number;
    const last = this.items.pop() as number;
    this.pos[i] = -1;
    if (p < this.items.length) {
      this.items[p] = last;
      this.pos[last] = p;
      this.up(p);
      this.down(this.pos[last] as number);
    }
  }

  update(i: number): void {
    if (this.items.length === 1) return;
    const p = this.pos[i] as number;
    this.up(p);
    this.down(this.pos[i] as number);
  }

  private less(a: number, b: number): boolean {
    const ka = this.key[a] as number;
    const kb = this.key[b] as number;
    if (this.max) return ka > kb || (ka === kb && a < b);
    return ka < kb || (ka === kb && a < b);
  }

  private up(p: number): void {
    const items = this.items;
    const i = items[p] as number;
    while (p > 0) {
      const parent = (p - 1) >> 1;
      const j = items[parent] as number;
      if (!this.less(i, j)) break;
      items[p] = j;
      this.pos[j] = p;
      p = parent;
    }
    items[p] = i;
    this.pos[i] = p;
  }

  private down(p: number): void {
    const items = this.items;
    const n = items.length;
    const i = items[p] as number;
    for (;;) {
      let c = 2 * p + 1;
      if (c >= n) break;
      const r = c + 1;
      if (r < n && this.less(items[r] as number, items[c] as number)) c = r;
      const j = items[c] as number;
      if (!this.less(j, i)) break;
      items[p] = j;
      this.pos[j] = p;
      p = c;
    }
    items[p] = i;
    this.pos[i] = p;
  }
}

/**
 * Replicas placed in named groups. Warm replicas live in a heap keyed by (sessions+1)/weight; replicas
 * still in slow start live in a short list and are scored with their ramp at the time of the query,
 * then move to the heap when their ramp reaches 1.
 */
export class GroupedLeastLoaded<G extends string> {
  private readonly heaps = {} as Record<G, IndexedHeap>;
  /** max-heaps for the groups asked for, so the most loaded member is found without a scan */
  private readonly maxHeaps = {} as Record<G, IndexedHeap | undefined>;
  private readonly maxPos: Int32Array;
  private readonly groupOf: (G | undefined)[];
  private readonly ramping: number[] = [];
  private readonly isRamping: Uint8Array;
  private readonly key: Float64Array;
  private readonly pos: Int32Array;

  constructor(
    size: number,
    groups: readonly G[],
    /** the admission key of replica i at nowMs, and whether it is still ramping then */
    private readonly keyAt: (i: number, nowMs: number) => number,
    private readonly rampingAt: (i: number, nowMs: number) => boolean,
    private readonly warmKey: (i: number) => number,
    maxGroups: readonly G[] = [],
  ) {
    this.key = new Float64Array(size);
    this.pos = new Int32Array(size).fill(-1);
    this.maxPos = new Int32Array(size).fill(-1);
    for (const g of maxGroups) this.maxHeaps[g] = new IndexedHeap(this.maxPos, this.key, true);
    this.groupOf = new Array<G | undefined>(size).fill(undefined);
    this.isRamping = new Uint8Array(size);
    for (const g of groups) this.heaps[g] = new IndexedHeap(this.pos, this.key);
  }

  group(i: number): G | undefined {
    return this.groupOf[i];
  }

  /** Put replica i into group g (undefined: into none), as of nowMs. */
  place(i: number, g: G | undefined, nowMs: number): void {
    this.take(i);
    this.groupOf[i] = g;
    if (g === undefined) return;
    this.key[i] = this.warmKey(i);
    if (this.rampingAt(i, nowMs)) {
      this.isRamping[i] = 1;
      this.ramping.push(i);
    } else {
      this.pushWarm(i, g);
    }
  }

  private pushWarm(i: number, g: G): void {
    this.heap(g).push(i);
    this.maxHeaps[g]?.push(i);
  }

  /** Replica i's sessions or weight changed. */
  changed(i: number, warmKey: number = this.warmKey(i)): void {
    this.key[i] = warmKey;
    const g = this.groupOf[i];
    if (g !== undefined && this.isRamping[i] === 0) {
      this.heaps[g].update(i);
      const max = this.maxHeaps[g];
      if (max !== undefined) max.update(i);
    }
  }

  /** The warm member of g with the greatest key (g must have a max-heap), or -1. */
  worstWarm(g: G): number {
    const h = this.maxHeaps[g];
    if (h === undefined) throw new PlbError('INTERNAL', `no max-heap for replica group ${g}`);
    return h.top();
  }

  /** Members of g still in slow start, in index order. */
  rampingMembers(g: G): number[] {
    const out: number[] = [];
    for (const i of this.ramping) if (this.groupOf[i] === g) out.push(i);
    return out.sort((a, b) => a - b);
  }

  /** The admission key of a warm replica (ramp 1), as the heaps order it. */
  warmKeyOf(i: number): number {
    return this.key[i] as number;
  }

  hasRamping(): boolean {
    return this.ramping.length > 0;
  }

  /** The replica with the least key over the given groups at nowMs (ties: lowest index), or -1. */
  best(groups: readonly G[], nowMs: number): number {
    if (this.ramping.length > 0) this.graduate(nowMs);
    let best = -1;
    let bestKey = Number.POSITIVE_INFINITY;
    for (let n = 0; n < groups.length; n++) {
      const i = this.heaps[groups[n] as G].top();
      if (i < 0) continue;
      const k = this.key[i] as number;
      if (k < bestKey || (k === bestKey && i < best)) {
        best = i;
        bestKey = k;
      }
    }
    if (this.ramping.length === 0) return best;
    for (const i of this.ramping) {
      if (!groups.includes(this.groupOf[i] as G)) continue;
      const k = this.keyAt(i, nowMs);
      if (k < bestKey || (k === bestKey && i < best)) {
        best = i;
        bestKey = k;
      }
    }
    return best;
  }

  /** Members of group g, in index order. */
  members(g: G): number[] {
    const out = [...this.heap(g).items];
    for (const i of this.ramping) if (this.groupOf[i] === g) out.push(i);
    return out.sort((a, b) => a - b);
  }

  size(g: G): number {
    let n = this.heap(g).size;
    for (const i of this.ramping) if (this.groupOf[i] === g) n += 1;
    return n;
  }

  private graduate(nowMs: number): void {
    for (let k = this.ramping.length - 1; k >= 0; k--) {
      const i = this.ramping[k] as number;
      if (this.rampingAt(i, nowMs)) continue;
      this.ramping.splice(k, 1);
      this.isRamping[i] = 0;
      this.pushWarm(i, this.groupOf[i] as G);
    }
  }

  private take(i: number): void {
    const g = this.groupOf[i];
    if (g === undefined) return;
    if (this.isRamping[i] === 1) {
      this.ramping.splice(this.ramping.indexOf(i), 1);
      this.isRamping[i] = 0;
    } else {
      this.heap(g).remove(i);
      this.maxHeaps[g]?.remove(i);
    }
    this.groupOf[i] = undefined;
  }

  private heap(g: G): IndexedHeap {
    const h = this.heaps[g];
    if (h === undefined) throw new PlbError('INTERNAL', `unknown replica group ${g}`);
    return h;
  }
}
