import { PlbError } from '../core/errors.js';
import { SeqHeap } from '../core/seq-heap.js';
import { sleepWith, type Cancel, type Clock } from './index.js';

/** Instants run per turn of Node's event loop (see run). */
const INSTANTS_PER_TURN = 256;

interface Due {
  /** Due time, ms. */
  key: number;
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
  private readonly heap = new SeqHeap<Due>();
  /** Timers fired so far (a measure of the work a simulation did). */
  fired = 0;
  /** Distinct instants the clock stopped at (each one drains every ready task). */
  instants = 0;

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    // Without a signal nothing cancels it: no cancel closure (a sleep per think time adds up).
    if (signal === undefined)
      return new Promise((resolve) => {
        this.schedule(ms, resolve);
      });
    return sleepWith((fn) => this.timer(ms, fn), signal);
  }

  timer(ms: number, fn: () => void): Cancel {
    const due = this.schedule(ms, fn);
    return () => {
      due.cancelled = true;
    };
  }

  private schedule(ms: number, fn: () => void): Due {
    // A positive wait below the clock's resolution (a run-relative clock's `target - now` far
    // from the origin) must still move time on, or a loop waiting for time to pass never ends.
    let at = this.t + Math.max(0, ms);
    if (ms > 0 && at === this.t) at = this.t + Math.abs(this.t) * Number.EPSILON;
    const due: Due = { key: at, seq: this.seq++, fn, cancelled: false };
    this.heap.push(due);
    return due;
  }

  /** Drives the clock until `main` settles; its result (or error) is returned. */
  async run<T>(main: () => Promise<T>): Promise<T> {
    let settled = false;
    const p = main().finally(() => {
      settled = true;
    });
    p.catch(() => undefined);
    await new Promise<void>((resolve, reject) => {
      let over = false;
      // One instant per immediate: Node drains every promise continuation between two immediates,
      // so each step sees the world the previous instant left. Queued a batch at a time, they run
      // in one turn of the event loop, whose own cost (a few µs) would otherwise be paid per instant.
      const step = (): void => {
        if (over) return;
        if (settled) {
          over = true;
          resolve();
          return;
        }
        const first = this.pop();
        if (!first) {
          over = true;
          reject(
            new PlbError(
              'INTERNAL',
              `simulation stalled at t=${(this.t / 1000).toFixed(3)} s: every task waits and no timer is due`,
            ),
          );
          return;
        }
        this.t = first.key;
        this.instants++;
        this.fire(first);
        while (this.heap.peek()?.key === first.key) this.fire(this.heap.pop() as Due);
      };
      const batch = (): void => {
        if (over) return;
        for (let i = 0; i < INSTANTS_PER_TURN; i++) setImmediate(step);
        setImmediate(batch);
      };
      batch();
    });
    return p;
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
