import type { VirtualClock } from '../../clock/virtual.js';

/**
 * Something with deadlines: `expire(token)` runs at a deadline unless `waiting(token)` is false by
 * then. The token names which of its deadlines (a connection's statement by its number), so the
 * queue holds the long-lived owner, not each short-lived statement, for the whole timeout.
 */
export interface Expiring {
  waiting(token: number): boolean;
  expire(token: number): void;
}

/**
 * Timeouts of one length (every query of a run has the same timeout): deadlines are then in
 * arrival order, so a FIFO with one clock timer for its oldest live entry replaces a timer per
 * query, which would otherwise pile up (cancelled) in the clock's heap for the whole timeout.
 * Deadlines, owners and tokens sit in three arrays side by side (no object per entry).
 */
export class DeadlineQueue {
  private ats: number[] = [];
  private xs: Expiring[] = [];
  private tokens: number[] = [];
  private head = 0;
  private armed = false;
  private readonly onTimer = (): void => this.fire();

  constructor(
    private readonly clock: VirtualClock,
    private readonly ms: number,
  ) {}

  add(x: Expiring, token: number): void {
    this.ats.push(this.clock.now() + this.ms);
    this.xs.push(x);
    this.tokens.push(token);
    if (!this.armed) this.arm();
  }

  private arm(): void {
    // Settled entries at the head need no timer.
    const xs = this.xs;
    const tokens = this.tokens;
    while (this.head < xs.length && !(xs[this.head] as Expiring).waiting(tokens[this.head] as number))
      this.head++;
    if (this.head > 1024 && this.head * 2 > xs.length) {
      this.ats = this.ats.slice(this.head);
      this.xs = xs.slice(this.head);
      this.tokens = tokens.slice(this.head);
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
    const dueTokens: number[] = [];
    for (; this.head < this.xs.length; this.head++) {
      if ((this.ats[this.head] as number) > now) break;
      const x = this.xs[this.head] as Expiring;
      const token = this.tokens[this.head] as number;
      if (x.waiting(token)) {
        due.push(x);
        dueTokens.push(token);
      }
    }
    this.arm();
    for (let i = 0; i < due.length; i++) {
      const x = due[i] as Expiring;
      const token = dueTokens[i] as number;
      if (x.waiting(token)) x.expire(token);
    }
  }
}
