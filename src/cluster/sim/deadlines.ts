import type { Cancel, Clock } from '../../clock/index.js';

/** Something with a deadline: `expire` runs at the deadline unless `settled` is true by then. */
export interface Expiring {
  settled: boolean;
  expire(): void;
}

/**
 * Timeouts of one length (every query of a run has the same timeout): deadlines are then in
 * arrival order, so a FIFO with one clock timer for its oldest live entry replaces a timer per
 * query, which would otherwise pile up (cancelled) in the clock's heap for the whole timeout.
 */
export class DeadlineQueue {
  private items: { at: number; x: Expiring }[] = [];
  private head = 0;
  private cancel: Cancel | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly ms: number,
  ) {}

  add(x: Expiring): void {
    this.items.push({ at: this.clock.now() + this.ms, x });
    if (this.cancel === undefined) this.arm();
  }

  private arm(): void {
    // Settled entries at the head need no timer.
    while (this.head < this.items.length && (this.items[this.head]?.x.settled ?? true)) this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    const first = this.items[this.head];
    if (first === undefined) {
      this.cancel = undefined;
      return;
    }
    this.cancel = this.clock.timer(first.at - this.clock.now(), () => this.fire());
  }

  private fire(): void {
    const now = this.clock.now();
    const due: Expiring[] = [];
    for (; this.head < this.items.length; this.head++) {
      const e = this.items[this.head] as { at: number; x: Expiring };
      if (e.at > now) break;
      if (!e.x.settled) due.push(e.x);
    }
    this.arm();
    for (const x of due) if (!x.settled) x.expire();
  }
}
