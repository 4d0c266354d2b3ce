import { PlbError } from '../core/errors.js';
import { SeqHeap } from '../core/seq-heap.js';
import { sleepWith, type Cancel, type Clock, type TimerTask } from './index.js';

/** Instants run per turn of Node's event loop (see run). */
const INSTANTS_PER_TURN = 256;

/** A timer set with `handle`: setting `cancelled` before it is due keeps it from firing. */
export interface TimerHandle {
  cancelled: boolean;
}

class Due implements TimerHandle, TimerTask {
  cancelled = false;
  constructor(private readonly fn: () => void) {}

  onTimer(): void {
    this.fn();
  }
}

/** What the heap holds: a bare function (nothing cancels it) or a task. */
type Entry = (() => void) | TimerTask;

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
  private readonly heap = new SeqHeap<Entry>();
  /** Timers fired so far (a measure of the work a simulation did). */
  fired = 0;
  /** Distinct instants the clock stopped at (each one drains every ready task). */
  instants = 0;
  /** Virtual time before the last restart (restart sets now() back to 0). */
  private before = 0;

  now(): number {
    return this.t;
  }

  /** Virtual ms since the clock was made, across restarts: a series' timeline, for run ids. */
  sinceCreated(): number {
    return this.before + this.t;
  }

  /**
   * Drops every pending timer and sets the time back to 0, so what runs next starts as if alone:
   * the work still waiting (a finished run's sessions) never resumes. Called between runs only,
   * from a task `run` is driving.
   */
  restart(): void {
    this.heap.clear();
    this.before += this.t;
    this.t = 0;
    this.seq = 0;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    // Without a signal nothing cancels it: the resolve function itself is the timer, and the
    // executor is made once (a sleep per think time adds up).
    if (signal === undefined) {
      this.sleepMs = ms;
      return new Promise(this.sleepExecutor);
    }
    return sleepWith((fn) => this.timer(ms, fn), signal);
  }

  private sleepMs = 0;
  private readonly sleepExecutor = (resolve: () => void): void => {
    this.schedule(this.sleepMs, resolve);
  };

  timer(ms: number, fn: () => void): Cancel {
    const due = this.handle(ms, fn);
    return () => {
      due.cancelled = true;
    };
  }

  /** Calls `fn` (or runs the task) once after `ms`; no handle, no closure: the simulator's hot path. */
  after(ms: number, fn: (() => void) | TimerTask): void {
    this.schedule(ms, fn);
  }

  /** Calls `fn` once after `ms` unless the returned handle is marked cancelled first. */
  handle(ms: number, fn: () => void): TimerHandle {
    const due = new Due(fn);
    this.schedule(ms, due);
    return due;
  }

  private schedule(ms: number, e: Entry): void {
    // A positive wait below the clock's resolution (a run-relative clock's `target - now` far
    // from the origin) must still move time on, or a loop waiting for time to pass never ends.
    let at = this.t + Math.max(0, ms);
    if (ms > 0 && at === this.t) at = this.t + Math.abs(this.t) * Number.EPSILON;
    this.heap.push(e, at, this.seq++);
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
        const heap = this.heap;
        const first = this.popLive();
        if (first === undefined) {
          over = true;
          reject(
            new PlbError(
              'INTERNAL',
              `simulation stalled at t=${(this.t / 1000).toFixed(3)} s: every task waits and no timer is due`,
            ),
          );
          return;
        }
        const at = this.t;
        this.instants++;
        this.fire(first);
        while (heap.peekKey() === at) this.fire(heap.pop() as Entry);
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

  private fire(e: Entry): void {
    if (typeof e === 'function') {
      this.fired++;
      e();
    } else if (!e.cancelled) {
      this.fired++;
      e.onTimer();
    }
  }

  /** The earliest live timer, with the clock moved to its time (cancelled ones are dropped). */
  private popLive(): Entry | undefined {
    const heap = this.heap;
    for (;;) {
      const at = heap.peekKey();
      const top = heap.pop();
      if (top === undefined) return undefined;
      if (typeof top === 'function' || !top.cancelled) {
        this.t = at;
        return top;
      }
    }
  }
}
