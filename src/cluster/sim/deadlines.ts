import type { VirtualClock } from '../../clock/virtual.js';

/** Something with a deadline: `expire` runs at the deadline unless `settled` is true by then. */
export interface Expiring {
  settled: boolean;
  expire(): void;
}

/**
 * Timeouts of one length (every query of a run has the same timeout): deadlines are then in
 * arrival order, so a FIFO with one clock timer for its oldest live entry replaces a timer per
 * query, which would otherwise pile up (cancelled) in the clock's heap for the whole timeout.
 * Deadlines and entries sit in two arrays side by side (no object per entry).
 */
export class DeadlineQueue {
  private ats: number[] = [];
  private xs: Expiring[] = [];
  private head = 0;
  private armed = false;
  private readonly onTimer = (): void => this.fire();

  constructor(
    private readonly clock: VirtualClock,
    private readonly ms: number,
  ) {}

  add(x: Expiring): void {
    this.ats.push(this.clock.now() + this.ms);
    this.xs.push(x);
    if (!this.armed) this.arm();
  }

  private arm(): void {
    // Settled entries at the head need no timer.
    const xs = this.xs;
    while (this.head < xs.length && (xs[this.head] as Expiring).settled) this.head++;
    if (this.head > 1024 && this.head * 2 > xs.length) {
      this.ats = this.ats.slice(this.head);
      this.xs = xs.slice(this.head);
      this.head = 0;
    }
    if (this.head >= this.xs.length) {
      this.armed = false;
      return;
    }
    this.armed = true;
    this.clock.after((this.ats[this.head] as number) - this.clock.now(), this.onTimer);
  }

  private fire(): void {
    const now = this.clock.now();
    const due: Expiring[] = [];
    for (; this.head < this.xs.length; this.head++) {
      if ((this.ats[this.head] as number) > now) break;
      const x = this.xs[this.head] as Expiring;
      if (!x.settled) due.push(x);
    }
    this.arm();
    for (const x of due) if (!x.settled) x.expire();
  }
}
