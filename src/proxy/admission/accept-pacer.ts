/**
 * Backpressure on freemium startups, the decisions only: no sockets and no timers; time and the last
 * loop turn's length are passed in, so it is tested without waiting (paced-intake.ts runs it).
 * At most `perTurn` items (a freemium session whose startup packet is in, to be routed) are let
 * through per event-loop turn, `slowPerTurn` after a turn longer than `lagMs`; the rest are held,
 * first in first out. A flood then reaches the loop's expensive part a slice at a time, and a
 * premium session's reads wait behind at most one slice instead of thousands of startups. An item
 * held longer than `maxHoldMs` comes out as expired (refused 53300), so a held client is answered
 * within that bound even when turns are slow; every turn lets at least `slowPerTurn` through.
 */
import { Fifo } from '../../core/fifo.js';

export interface PacerOptions {
  /** Let through per loop turn. */
  perTurn: number;
  /** Let through per turn after a turn longer than lagMs (at least 1: the held ones move on). */
  slowPerTurn: number;
  /** A loop turn longer than this is a lagging loop. */
  lagMs: number;
  /** Held longer than this: refused (53300). */
  maxHoldMs: number;
}

export const DEFAULT_PACER: PacerOptions = {
  perTurn: 64,
  slowPerTurn: 8,
  lagMs: 50,
  maxHoldMs: 5000,
};

export interface PacerCounters {
  /** Items that had to wait for a turn. */
  held: number;
  /** Held ones refused after maxHoldMs. */
  expired: number;
  /** The most held at once. */
  peakHeld: number;
  /** Turns that found the loop lagging. */
  slowTurns: number;
}

/** What one turn does: let these through, refuse those (held too long). */
export interface Turn<T> {
  start: T[];
  expired: T[];
}

export class AcceptPacer<T> {
  readonly counters: PacerCounters = { held: 0, expired: 0, peakHeld: 0, slowTurns: 0 };
  private readonly queue = new Fifo<{ item: T; at: number }>();
  /** Let through since the last turn (arrivals between two turns count against it). */
  private startedThisTurn = 0;
  private slow = false;

  constructor(private readonly o: PacerOptions = DEFAULT_PACER) {
    if (!(o.perTurn >= 1) || !(o.slowPerTurn >= 1))
      throw new RangeError('AcceptPacer: perTurn and slowPerTurn must be >= 1');
  }

  /** Held now. */
  get held(): number {
    return this.queue.size;
  }

  /** How many may start in this turn. */
  private get budget(): number {
    return (this.slow ? this.o.slowPerTurn : this.o.perTurn) - this.startedThisTurn;
  }

  /**
   * An item arrived at `now`: 'start' it at once (nobody held ahead of it and the turn has room)
   * or 'hold' it (kept here until a turn starts or expires it). A 'hold' wants a turn.
   */
  offer(item: T, now: number): 'start' | 'hold' {
    if (this.held === 0 && this.budget > 0) {
      this.startedThisTurn += 1;
      return 'start';
    }
    this.queue.push({ item, at: now });
    this.counters.held += 1;
    if (this.held > this.counters.peakHeld) this.counters.peakHeld = this.held;
    return 'hold';
  }

  /**
   * A loop turn at `now`; the last one took `turnMs` (undefined: no turn ran just before, e.g.
   * the first after a quiet spell). Expires the held past maxHoldMs (oldest first), then starts as
   * many as this turn's budget allows. Call it once per turn while `held > 0`.
   */
  turn(now: number, turnMs: number | undefined): Turn<T> {
    this.startedThisTurn = 0;
    if (turnMs !== undefined) {
      this.slow = turnMs > this.o.lagMs;
      if (this.slow) this.counters.slowTurns += 1;
    }
    const expired: T[] = [];
    while (this.held > 0 && now - (this.queue.peek() as { at: number }).at > this.o.maxHoldMs)
      expired.push(this.take());
    this.counters.expired += expired.length;
    const start: T[] = [];
    while (this.held > 0 && this.budget > 0) {
      start.push(this.take());
      this.startedThisTurn += 1;
    }
    return { start, expired };
  }

  /** Everything still held, in order (the proxy stops); the pacer is empty after. */
  drain(): T[] {
    const out: T[] = [];
    while (this.held > 0) out.push(this.take());
    return out;
  }

  private take(): T {
    return (this.queue.shift() as { item: T }).item;
  }
}
