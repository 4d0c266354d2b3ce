import { PlbError } from '../errors.js';
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
  private readonly heap: Due[] = [];
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
    this.push(due);
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
      while (this.heap.length > 0 && (this.heap[0] as Due).at === first.at) this.fire(this.popTop() as Due);
    }
  }

  private fire(d: Due): void {
    if (d.cancelled) return;
    this.fired++;
    d.fn();
  }

  // A binary min-heap on (at, seq): seq keeps timers set for one instant in the order they were set.
  private less(a: Due, b: Due): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private push(d: Due): void {
    const h = this.heap;
    h.push(d);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(h[i] as Due, h[parent] as Due)) break;
      [h[i], h[parent]] = [h[parent] as Due, h[i] as Due];
      i = parent;
    }
  }

  /** The earliest live timer (cancelled ones are dropped as they surface). */
  private pop(): Due | undefined {
    for (;;) {
      const top = this.popTop();
      if (top === undefined || !top.cancelled) return top;
    }
  }

  private popTop(): Due | undefined {
    const h = this.heap;
    const top = h[0];
    if (top === undefined) return undefined;
    const last = h.pop() as Due;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l] as Due, h[m] as Due)) m = l;
        if (r < h.length && this.less(h[r] as Due, h[m] as Due)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m] as Due, h[i] as Due];
        i = m;
      }
    }
    return top;
  }
}
