// Indexed heaps over replica indices, grouped, so least-loaded choice costs O(log K) at K=1000.
// Ordering is (key, index): the same least key / lowest index rule as the plain scans in plb-rules.
// Groups are small integers and heaps are typed arrays: admit/release run here per session, so the hot
// path avoids string-keyed lookups and allocations.
import { PlbError } from '../core/errors.js';

/** No group: the replica is out of the pool. */
export const NO_GROUP = -1;

/**
 * A binary heap of replica indices by (key, index); `pos` and `key` are shared per heap family.
 * order 1: the top is the least key; order -1: the greatest. Ties go to the lowest index either way.
 */
class IndexedHeap {
  items: Int32Array;
  size = 0;

  constructor(
    capacity: number,
    private pos: Int32Array,
    private key: Float64Array,
    private readonly order: 1 | -1,
  ) {
    this.items = new Int32Array(capacity);
  }

  /** Room for more replicas: the shared arrays were reallocated (grown, contents kept). */
  resize(capacity: number, pos: Int32Array, key: Float64Array): void {
    const items = new Int32Array(capacity);
    items.set(this.items.subarray(0, this.size));
    this.items = items;
    this.pos = pos;
    this.key = key;
  }

  top(): number {
    return this.size > 0 ? (this.items[0] as number) : -1;
  }

  push(i: number): void {
    const p = this.size++;
    this.items[p] = i;
    this.up(i, p);
  }

  remove(i: number): void {
    const items = this.items;
    const p = this.pos[i] as number;
    const n = --this.size;
    const last = items[n] as number;
    this.pos[i] = -1;
    if (p < n) {
      items[p] = last;
      this.pos[last] = p;
      this.up(last, p);
      this.down(last, this.pos[last] as number);
    }
  }

  /** i's key grew: it can only move away from the top of a min-heap, toward it in a max-heap. */
  raised(i: number): void {
    if (this.order === 1) this.down(i, this.pos[i] as number);
    else this.up(i, this.pos[i] as number);
  }

  /** i's key shrank: the mirror of raised. */
  lowered(i: number): void {
    if (this.order === 1) this.up(i, this.pos[i] as number);
    else this.down(i, this.pos[i] as number);
  }

  /** a (key ka) goes above b (key kb). */
  private above(a: number, ka: number, b: number, kb: number): boolean {
    const o = this.order;
    return o * ka < o * kb || (ka === kb && a < b);
  }

  private up(i: number, p: number): void {
    const items = this.items;
    const pos = this.pos;
    const ki = this.key[i] as number;
    while (p > 0) {
      const parent = (p - 1) >> 1;
      const j = items[parent] as number;
      if (!this.above(i, ki, j, this.key[j] as number)) break;
      items[p] = j;
      pos[j] = p;
      p = parent;
    }
    items[p] = i;
    pos[i] = p;
  }

  private down(i: number, p: number): void {
    const items = this.items;
    const pos = this.pos;
    const key = this.key;
    const n = this.size;
    const ki = key[i] as number;
    for (;;) {
      let c = 2 * p + 1;
      if (c >= n) break;
      let j = items[c] as number;
      let kj = key[j] as number;
      const rc = c + 1;
      if (rc < n) {
        const jr = items[rc] as number;
        const kr = key[jr] as number;
        if (this.above(jr, kr, j, kj)) {
          c = rc;
          j = jr;
          kj = kr;
        }
      }
      if (!this.above(j, kj, i, ki)) break;
      items[p] = j;
      pos[j] = p;
      p = c;
    }
    items[p] = i;
    pos[i] = p;
  }
}

/**
 * Replicas placed in numbered groups (0 .. groups-1). Warm replicas live in a heap keyed by
 * (sessions+1)/weight; replicas still in slow start live in a short list and are scored with their ramp
 * at the time of the query, then move to the heap when their ramp reaches 1. Queries name groups by a
 * bit mask (bit g = group g).
 */
export class GroupedLeastLoaded {
  private readonly heaps: IndexedHeap[] = [];
  /** max-heaps for the groups asked for, so the most loaded member is found without a scan */
  private readonly maxHeaps: (IndexedHeap | undefined)[] = [];
  private groupOf: Int8Array;
  private readonly ramping: number[] = [];
  private isRamping: Uint8Array;
  private key: Float64Array;
  private pos: Int32Array;
  private maxPos: Int32Array;

  constructor(
    size: number,
    groups: number,
    /** the admission key of replica i at nowMs, and whether it is still ramping then */
    private readonly keyAt: (i: number, nowMs: number) => number,
    private readonly rampingAt: (i: number, nowMs: number) => boolean,
    private readonly warmKey: (i: number) => number,
    maxGroups: readonly number[] = [],
  ) {
    this.key = new Float64Array(size);
    this.pos = new Int32Array(size).fill(-1);
    this.maxPos = new Int32Array(size).fill(-1);
    for (let g = 0; g < groups; g++) {
      this.heaps.push(new IndexedHeap(size, this.pos, this.key, 1));
      this.maxHeaps.push(
        maxGroups.includes(g) ? new IndexedHeap(size, this.maxPos, this.key, -1) : undefined,
      );
    }
    this.groupOf = new Int8Array(size).fill(NO_GROUP);
    this.isRamping = new Uint8Array(size);
  }

  /** Room for replicas up to index size - 1 (a replica added at run time); the new ones in no group. */
  grow(size: number): void {
    if (size <= this.key.length) return;
    const key = new Float64Array(size);
    key.set(this.key);
    const pos = new Int32Array(size).fill(-1);
    pos.set(this.pos);
    const maxPos = new Int32Array(size).fill(-1);
    maxPos.set(this.maxPos);
    const groupOf = new Int8Array(size).fill(NO_GROUP);
    groupOf.set(this.groupOf);
    const isRamping = new Uint8Array(size);
    isRamping.set(this.isRamping);
    this.key = key;
    this.pos = pos;
    this.maxPos = maxPos;
    this.groupOf = groupOf;
    this.isRamping = isRamping;
    for (const h of this.heaps) h.resize(size, this.pos, this.key);
    for (const h of this.maxHeaps) h?.resize(size, this.maxPos, this.key);
  }

  group(i: number): number {
    return this.groupOf[i] as number;
  }

  /** Put replica i into group g (NO_GROUP: into none), as of nowMs. */
  place(i: number, g: number, nowMs: number): void {
    this.take(i);
    this.groupOf[i] = g;
    if (g === NO_GROUP) return;
    this.key[i] = this.warmKey(i);
    if (this.rampingAt(i, nowMs)) {
      this.isRamping[i] = 1;
      this.ramping.push(i);
    } else {
      this.pushWarm(i, g);
    }
  }

  private pushWarm(i: number, g: number): void {
    this.heap(g).push(i);
    this.maxHeaps[g]?.push(i);
  }

  /** Replica i's warm key grew to warmKey (a session was admitted). */
  raised(i: number, warmKey: number): void {
    this.key[i] = warmKey;
    const g = this.groupOf[i] as number;
    if (g !== NO_GROUP && this.isRamping[i] === 0) {
      (this.heaps[g] as IndexedHeap).raised(i);
      const max = this.maxHeaps[g];
      if (max !== undefined) max.raised(i);
    }
  }

  /** Replica i's warm key shrank to warmKey (a session was released). */
  lowered(i: number, warmKey: number): void {
    this.key[i] = warmKey;
    const g = this.groupOf[i] as number;
    if (g !== NO_GROUP && this.isRamping[i] === 0) {
      (this.heaps[g] as IndexedHeap).lowered(i);
      const max = this.maxHeaps[g];
      if (max !== undefined) max.lowered(i);
    }
  }

  /** Replica i's sessions or weight changed, in either direction. */
  changed(i: number, warmKey: number = this.warmKey(i)): void {
    const old = this.key[i] as number;
    if (warmKey > old) this.raised(i, warmKey);
    else this.lowered(i, warmKey);
  }

  /** The warm member of g with the least key (ties: lowest index), or -1; ignores ramping members. */
  warmTop(g: number): number {
    return (this.heaps[g] as IndexedHeap).top();
  }

  /** The warm member of g with the greatest key (g must have a max-heap), or -1. */
  worstWarm(g: number): number {
    const h = this.maxHeaps[g];
    if (h === undefined) throw new PlbError('INTERNAL', `no max-heap for replica group ${g}`);
    return h.top();
  }

  /** Members of g still in slow start, in index order. */
  rampingMembers(g: number): number[] {
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

  /** The replica with the least key over the groups in mask at nowMs (ties: lowest index), or -1. */
  best(mask: number, nowMs: number): number {
    if (this.ramping.length > 0) this.graduate(nowMs);
    const key = this.key;
    let best = -1;
    let bestKey = Number.POSITIVE_INFINITY;
    for (let g = 0, m = mask; m !== 0; g++, m >>>= 1) {
      if ((m & 1) === 0) continue;
      const i = (this.heaps[g] as IndexedHeap).top();
      if (i < 0) continue;
      const k = key[i] as number;
      if (k < bestKey || (k === bestKey && i < best)) {
        best = i;
        bestKey = k;
      }
    }
    if (this.ramping.length === 0) return best;
    for (const i of this.ramping) {
      if (((mask >>> (this.groupOf[i] as number)) & 1) === 0) continue;
      const k = this.keyAt(i, nowMs);
      if (k < bestKey || (k === bestKey && i < best)) {
        best = i;
        bestKey = k;
      }
    }
    return best;
  }

  /** Members of group g, in index order. */
  members(g: number): number[] {
    const h = this.heap(g);
    const out = Array.from(h.items.subarray(0, h.size));
    for (const i of this.ramping) if (this.groupOf[i] === g) out.push(i);
    return out.sort((a, b) => a - b);
  }

  size(g: number): number {
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
      this.pushWarm(i, this.groupOf[i] as number);
    }
  }

  private take(i: number): void {
    const g = this.groupOf[i] as number;
    if (g === NO_GROUP) return;
    if (this.isRamping[i] === 1) {
      this.ramping.splice(this.ramping.indexOf(i), 1);
      this.isRamping[i] = 0;
    } else {
      this.heap(g).remove(i);
      this.maxHeaps[g]?.remove(i);
    }
    this.groupOf[i] = NO_GROUP;
  }

  private heap(g: number): IndexedHeap {
    const h = this.heaps[g];
    if (h === undefined) throw new PlbError('INTERNAL', `unknown replica group ${g}`);
    return h;
  }
}
