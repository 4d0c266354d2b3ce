import { PlbError } from '../core/errors.js';
import { MinHeap } from '../core/min-heap.js';
import { sleepWith, type Cancel, type Clock } from './index.js';

interface Due {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * Virtual time for the simulator. Timers sit in a heap; `run(main)` lets every ready task run
 * (all promise continuations drain before a setImmediate), then jumps the clock to the earliest
 * due timer and fires every timer due at that instant, in the order they were set. Nothing on the
 * simulated path may wait for real I/O: the clock would not wait for it. Same program, same
 * timers -> the same order of events, every time.
 */
export class VirtualClock implements Clock {
  readonly kind = 'virtual' as const;
  private t = 0;
  private seq = 0;
  // Due time, then the order set: timers for one instant fire in the order they were set.
  private readonly heap = new MinHeap<Due>((a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq));
  /** Timers fired so far (a measure of the work a simulation did). */
  fired = 0;

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWith((fn) => this.timer(ms, fn), signal);
  }

  timer(ms: number, fn: () => void): Cancel {
    // A positive wait below the clock's resolution (a run-relative clock's `target - now` far
    // from the origin) must still move time on, or a loop waiting for time to pass never ends.
    let at = this.t + Math.max(0, ms);
    if (ms > 0 && at === this.t) at = this.t + Math.abs(this.t) * Number.EPSILON;
    const due: Due = { at, seq: this.seq++, fn, cancelled: false };
    this.heap.push(due);
    return () => {
      due.cancelled = true;
    };
  }

  /** Drives the clock until `main` settles; its result (or error) is returned. */
  async run<T>(main: () => Promise<T>): Promise<T> {
    let settled = false;
    const p = main().finally(() => {
      settled = true;
    });
    p.catch(() => undefined);
    for (;;) {
      await new Promise<void>((r) => setImmediate(r));
      if (settled) return p;
      const first = this.pop();
      if (!first)
        throw new PlbError(
          'INTERNAL',
          `simulation stalled at t=${(this.t / 1000).toFixed(3)} s: every task waits and no timer is due`,
        );
      this.t = first.at;
      this.fire(first);
      while (this.heap.peek()?.at === first.at) this.fire(this.heap.pop() as Due);
    }
  }

  private fire(d: Due): void {
    if (d.cancelled) return;
    this.fired++;
    d.fn();
  }

  /** The earliest live timer (cancelled ones are dropped as they surface). */
  private pop(): Due | undefined {
    for (;;) {
      const top = this.heap.pop();
      if (top === undefined || !top.cancelled) return top;
    }
  }
}
