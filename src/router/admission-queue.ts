import { PlbError } from '../core/errors.js';
import type { ServiceClass } from '../core/service-class.js';

/**
 * The admission queue: sessions that found no free slot wait here, premium before freemium, FIFO
 * within a class, each until its deadline (arrival + timeoutMs). Pure: every call gets the time.
 *
 * Blocking is per class: when premium's oldest waiter cannot be admitted, freemium's may still be
 * (the classes may use different replicas), but a class never skips its own oldest waiter, so FIFO
 * holds within a class and premium is always offered a freed slot first.
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
  enqueuedMs: number;
  deadlineMs: number;
  live: boolean;
}

/** The order the queue serves the classes in. */
export const QUEUE_ORDER: readonly ServiceClass[] = ['premium', 'freemium'];

/** A FIFO with lazy deletion: removed entries stay in the array until they reach the head. */
class Fifo<T> {
  private readonly entries: Entry<T>[] = [];
  private head = 0;
  live = 0;

  push(e: Entry<T>): void {
    this.entries.push(e);
    this.live++;
  }

  /** The oldest live entry, skipping (and forgetting) removed ones. */
  peek(): Entry<T> | undefined {
    while (this.head < this.entries.length) {
      const e = this.entries[this.head] as Entry<T>;
      if (e.live) return e;
      this.head++;
    }
    this.compact();
    return undefined;
  }

  shift(): void {
    const e = this.peek();
    if (!e) return;
    e.live = false;
    this.live--;
    this.head++;
    this.compact();
  }

  private compact(): void {
    if (this.head > 64 && this.head * 2 > this.entries.length) {
      this.entries.splice(0, this.head);
      this.head = 0;
    }
  }
}

export class AdmissionQueue<T> {
  readonly capacity: number;
  readonly timeoutMs: number;
  readonly perClass: boolean;
  private readonly fifos: Record<ServiceClass, Fifo<T>> = { premium: new Fifo(), freemium: new Fifo() };
  private readonly index = new Map<T, Entry<T>>();

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
    if (cls) return this.fifos[cls].live;
    return this.fifos.premium.live + this.fifos.freemium.live;
  }

  has(item: T): boolean {
    return this.index.has(item);
  }

  /** Queues item; false (and nothing queued) when the queue (cls's places) is full or item already waits. */
  push(cls: ServiceClass, item: T, nowMs: number): boolean {
    if (this.size(this.perClass ? cls : undefined) >= this.capacity || this.index.has(item)) return false;
    const e: Entry<T> = { cls, item, enqueuedMs: nowMs, deadlineMs: nowMs + this.timeoutMs, live: true };
    this.fifos[cls].push(e);
    this.index.set(item, e);
    return true;
  }

  /**
   * Offers the waiting sessions to tryAdmit, premium first, oldest first within a class; a class
   * stops at its first refusal. Only sessions inside their deadline are offered: a class whose oldest
   * waiter has expired stops there, so call expire(nowMs) first. Returns the admitted ones, in order.
   */
  drain(nowMs: number, tryAdmit: (cls: ServiceClass, item: T, waitMs: number) => boolean): QueuedItem<T>[] {
    const out: QueuedItem<T>[] = [];
    for (const cls of QUEUE_ORDER) {
      const fifo = this.fifos[cls];
      for (;;) {
        const e = fifo.peek();
        if (!e || e.deadlineMs <= nowMs) break;
        const waitMs = Math.max(0, nowMs - e.enqueuedMs);
        if (!tryAdmit(cls, e.item, waitMs)) break;
        // tryAdmit may have removed it (re-entrancy); only take it out if it is still the head.
        if (fifo.peek() === e) fifo.shift();
        this.index.delete(e.item);
        out.push({ cls, item: e.item, waitMs });
      }
    }
    return out;
  }

  /** Takes out and returns every session whose deadline is at or before nowMs, oldest first per class. */
  expire(nowMs: number): QueuedItem<T>[] {
    const out: QueuedItem<T>[] = [];
    for (const cls of QUEUE_ORDER) {
      const fifo = this.fifos[cls];
      for (;;) {
        const e = fifo.peek();
        if (!e || e.deadlineMs > nowMs) break;
        fifo.shift();
        this.index.delete(e.item);
        out.push({ cls, item: e.item, waitMs: Math.max(0, nowMs - e.enqueuedMs) });
      }
    }
    return out;
  }

  /** A waiting session left (client gone); false when it was not waiting. */
  remove(item: T): boolean {
    const e = this.index.get(item);
    if (!e) return false;
    this.index.delete(item);
    e.live = false;
    this.fifos[e.cls].live--;
    return true;
  }

  /** The earliest deadline of a waiting session (when the caller should next call expire), if any. */
  nextDeadline(): number | undefined {
    let best: number | undefined;
    for (const cls of QUEUE_ORDER) {
      const e = this.fifos[cls].peek();
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
