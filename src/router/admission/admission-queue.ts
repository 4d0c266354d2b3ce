import { PlbError } from '../../core/errors.js';
import type { ServiceClass } from '../../core/service-class.js';

/**
 * The admission queue: sessions that found no free slot wait here, premium before freemium, each
 * until its deadline (arrival + timeoutMs). Pure: every call gets the time.
 *
 * Blocking is per class: when premium's next waiter cannot be admitted, freemium's may still be
 * (the classes may use different replicas), but a class never skips the waiter whose turn it is,
 * so premium is always offered a freed slot first. Within a class the waiters are kept per source
 * (the client's host): the sources take turns, each its oldest first. A flood from one host then
 * waits behind a client from another, not in front of it; and when the places are full, the host
 * with the most waiters gives its newest one's place to a host with fewer. With one source this
 * is a FIFO.
 */
export interface AdmissionQueueOptions {
  /** The most sessions waiting at once, both classes together (>= 1); with perClass, each class's. */
  capacity: number;
  /**
   * Each class its own capacity places (absent: one capacity shared): a flood of one class then
   * fills only its own places, and the other class's sessions still get theirs.
   */
  perClass?: boolean;
  /** How long a session may wait before it fails (> 0 ms; Infinity = never). */
  timeoutMs: number;
}

export interface QueuedItem<T> {
  cls: ServiceClass;
  item: T;
  /** Time spent in the queue up to the call that handed it out or expired it. */
  waitMs: number;
}

interface Entry<T> {
  cls: ServiceClass;
  item: T;
  source: string;
  enqueuedMs: number;
  deadlineMs: number;
  live: boolean;
}

/** The order the queue serves the classes in. */
export const QUEUE_ORDER: readonly ServiceClass[] = ['premium', 'freemium'];

/** A FIFO with lazy deletion: entries taken out elsewhere (live false) stay until they reach the head. */
class Fifo<T> {
  private readonly entries: Entry<T>[] = [];
  private head = 0;
  /** Live entries (counted down by whoever takes one out). */
  live = 0;

  push(e: Entry<T>): void {
    this.entries.push(e);
    this.live++;
  }

  /** The oldest live entry, skipping (and forgetting) the others. */
  peek(): Entry<T> | undefined {
    while (this.head < this.entries.length) {
      const e = this.entries[this.head] as Entry<T>;
      if (e.live) return e;
      this.head++;
    }
    this.compact();
    return undefined;
  }

  /** The newest live entry, forgetting removed ones at the tail. */
  newest(): Entry<T> | undefined {
    while (this.entries.length > this.head) {
      const e = this.entries[this.entries.length - 1] as Entry<T>;
      if (e.live) return e;
      this.entries.pop();
    }
    return undefined;
  }

  private compact(): void {
    if (this.head > 64 && this.head * 2 > this.entries.length) {
      this.entries.splice(0, this.head);
      this.head = 0;
    }
  }
}

/**
 * One class's waiters: in arrival order (deadlines), and per source in the order the sources take
 * their turns (a Map's order: the source whose turn it is first; served, it goes last).
 */
class ClassWaiters<T> {
  readonly arrivals = new Fifo<T>();
  readonly sources = new Map<string, Fifo<T>>();
  /** The source served last: a source arriving while it is the only one goes before it. */
  lastServed: string | undefined;

  get live(): number {
    return this.arrivals.live;
  }

  add(e: Entry<T>): void {
    this.arrivals.push(e);
    let fifo = this.sources.get(e.source);
    if (!fifo) {
      this.sources.set(e.source, (fifo = new Fifo()));
      const first = this.sources.keys().next().value as string;
      if (first === this.lastServed && first !== e.source) this.toBack(first);
    }
    fifo.push(e);
  }

  /** The source whose turn it is, and its oldest waiter. */
  next(): { source: string; entry: Entry<T> } | undefined {
    const first = this.sources.entries().next();
    if (first.done) return undefined;
    const [source, fifo] = first.value;
    const entry = fifo.peek();
    return entry && { source, entry };
  }

  take(e: Entry<T>): void {
    e.live = false;
    this.arrivals.live--;
    const fifo = this.sources.get(e.source) as Fifo<T>;
    if (--fifo.live === 0) this.sources.delete(e.source);
  }

  /** The newest waiter of the source with the most, if it has at least two more than `source`. */
  newestOfLargest(source: string): Entry<T> | undefined {
    let largest: Fifo<T> | undefined;
    for (const fifo of this.sources.values()) if (!largest || fifo.live > largest.live) largest = fifo;
    const mine = this.sources.get(source);
    if (!largest || largest === mine || largest.live < (mine?.live ?? 0) + 2) return undefined;
    return largest.newest();
  }

  /** source was served: the others go before it next. */
  served(source: string): void {
    this.lastServed = source;
    if (this.sources.has(source)) this.toBack(source);
  }

  private toBack(source: string): void {
    const fifo = this.sources.get(source) as Fifo<T>;
    this.sources.delete(source);
    this.sources.set(source, fifo);
  }
}

export class AdmissionQueue<T> {
  readonly capacity: number;
  readonly timeoutMs: number;
  readonly perClass: boolean;
  private readonly classes: Record<ServiceClass, ClassWaiters<T>> = {
    premium: new ClassWaiters(),
    freemium: new ClassWaiters(),
  };
  private readonly index = new Map<T, Entry<T>>();
  /** Waiters that gave their place to another host's (push), until takeDropped(). */
  private dropped: QueuedItem<T>[] = [];

  constructor(opts: AdmissionQueueOptions) {
    if (!Number.isInteger(opts.capacity) || opts.capacity < 1)
      throw new PlbError(
        'BAD_INPUT',
        `admission queue capacity must be an integer >= 1 (got ${opts.capacity})`,
      );
    if (!(opts.timeoutMs > 0))
      throw new PlbError('BAD_INPUT', `admission queue timeout must be > 0 ms (got ${opts.timeoutMs})`);
    this.capacity = opts.capacity;
    this.timeoutMs = opts.timeoutMs;
    this.perClass = opts.perClass ?? false;
  }

  /** Waiting sessions of cls, or of both classes. */
  size(cls?: ServiceClass): number {
    if (cls) return this.classes[cls].live;
    return this.classes.premium.live + this.classes.freemium.live;
  }

  has(item: T): boolean {
    return this.index.has(item);
  }

  /**
   * Queues item from source (its client's host; absent: one source shared by all); false (and
   * nothing queued) when the queue (cls's places) is full or item already waits. Full, a host with
   * at least two more waiters of cls than source has gives up its newest one's place (takeDropped).
   */
  push(cls: ServiceClass, item: T, nowMs: number, source = ''): boolean {
    if (this.index.has(item)) return false;
    if (this.size(this.perClass ? cls : undefined) >= this.capacity) {
      const e = this.classes[cls].newestOfLargest(source);
      if (!e) return false;
      this.classes[cls].take(e);
      this.index.delete(e.item);
      this.dropped.push({ cls, item: e.item, waitMs: Math.max(0, nowMs - e.enqueuedMs) });
    }
    const e: Entry<T> = {
      cls,
      item,
      source,
      enqueuedMs: nowMs,
      deadlineMs: nowMs + this.timeoutMs,
      live: true,
    };
    this.classes[cls].add(e);
    this.index.set(item, e);
    return true;
  }

  /**
   * Offers the waiting sessions to tryAdmit, premium first; within a class the sources in turn,
   * each its oldest first; a class stops at its first refusal (the source whose turn it was keeps
   * it). Only sessions inside their deadline are offered: a class whose next waiter has expired
   * stops there, so call expire(nowMs) first. Returns the admitted ones, in order.
   */
  drain(nowMs: number, tryAdmit: (cls: ServiceClass, item: T, waitMs: number) => boolean): QueuedItem<T>[] {
    const out: QueuedItem<T>[] = [];
    for (const cls of QUEUE_ORDER) {
      const waiters = this.classes[cls];
      for (;;) {
        const next = waiters.next();
        if (!next || next.entry.deadlineMs <= nowMs) break;
        const e = next.entry;
        const waitMs = Math.max(0, nowMs - e.enqueuedMs);
        if (!tryAdmit(cls, e.item, waitMs)) break;
        // tryAdmit may have removed it (re-entrancy): only take it out if it still waits.
        if (e.live) waiters.take(e);
        this.index.delete(e.item);
        waiters.served(next.source);
        out.push({ cls, item: e.item, waitMs });
      }
    }
    return out;
  }

  /**
   * A session of cls from source was admitted without waiting (nobody of cls waited): its source
   * was served last, so a source that starts waiting while only that one waits goes first.
   */
  admitted(cls: ServiceClass, source = ''): void {
    this.classes[cls].served(source);
  }

  /** Takes out and returns every session whose deadline is at or before nowMs, oldest first per class. */
  expire(nowMs: number): QueuedItem<T>[] {
    const out: QueuedItem<T>[] = [];
    for (const cls of QUEUE_ORDER) {
      const waiters = this.classes[cls];
      for (;;) {
        const e = waiters.arrivals.peek();
        if (!e || e.deadlineMs > nowMs) break;
        waiters.take(e);
        this.index.delete(e.item);
        out.push({ cls, item: e.item, waitMs: Math.max(0, nowMs - e.enqueuedMs) });
      }
    }
    return out;
  }

  /** The waiters that gave their place to another host's since the last call (refuse them as full). */
  takeDropped(): QueuedItem<T>[] {
    const out = this.dropped;
    if (out.length > 0) this.dropped = [];
    return out;
  }

  /** Whether takeDropped() has any. */
  hasDropped(): boolean {
    return this.dropped.length > 0;
  }

  /** A waiting session left (client gone); false when it was not waiting. */
  remove(item: T): boolean {
    const e = this.index.get(item);
    if (!e) return false;
    this.index.delete(item);
    this.classes[e.cls].take(e);
    return true;
  }

  /** The earliest deadline of a waiting session (when the caller should next call expire), if any. */
  nextDeadline(): number | undefined {
    let best: number | undefined;
    for (const cls of QUEUE_ORDER) {
      const e = this.classes[cls].arrivals.peek();
      if (e && (best === undefined || e.deadlineMs < best)) best = e.deadlineMs;
    }
    return best;
  }

  /** The waiting sessions, premium first, oldest first (for snapshots and tests). */
  waiting(nowMs: number): QueuedItem<T>[] {
    const out: QueuedItem<T>[] = [];
    for (const e of this.index.values()) out.push({ cls: e.cls, item: e.item, waitMs: nowMs - e.enqueuedMs });
    return out.sort((a, b) => QUEUE_ORDER.indexOf(a.cls) - QUEUE_ORDER.indexOf(b.cls));
  }
}
