import { performance } from 'node:perf_hooks';

/** Cancels a timer; calling it after the timer fired does nothing. */
export type Cancel = () => void;

/** A timer as an object (no closure to allocate): `onTimer` runs when due, unless cancelled. */
export interface TimerTask {
  readonly cancelled: boolean;
  onTimer(): void;
}

/**
 * Time for everything on the bench path (runner, sessions, arrivals, health checks, injector,
 * sampler). The real clock is wall time; the virtual one (virtual.ts) jumps to the next due timer
 * when every task waits, so the same code runs a simulated hour in seconds. The router takes
 * time as an argument and never sees a Clock.
 */
export interface Clock {
  readonly kind: 'real' | 'virtual';
  /** Milliseconds since the clock's origin (monotonic). */
  now(): number;
  /** Resolves after `ms` (at once for ms <= 0), or as soon as `signal` aborts. Never rejects. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `fn` once after `ms`. */
  timer(ms: number, fn: () => void): Cancel;
  /** Calls `fn` (or runs the task) once after `ms`, with nothing to cancel it: a hot path's timer. */
  after(ms: number, fn: (() => void) | TimerTask): void;
}

/** Wall time from performance.now(): the clock of every real run. */
export function realClock(): Clock {
  const t0 = performance.now();
  return {
    kind: 'real',
    now: () => performance.now() - t0,
    sleep: (ms, signal) => sleepWith((fn) => realTimer(ms, fn), signal),
    timer: realTimer,
    after: (ms, fn) => {
      const run = typeof fn === 'function' ? fn : (): void => (fn.cancelled ? undefined : fn.onTimer());
      setTimeout(run, Math.max(0, ms));
    },
  };
}

function realTimer(ms: number, fn: () => void): Cancel {
  const t = setTimeout(fn, Math.max(0, ms));
  return () => clearTimeout(t);
}

/** A sleep on any timer source: resolves when the timer fires or the signal aborts, whichever first. */
export function sleepWith(timer: (fn: () => void) => Cancel, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      cancel();
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const cancel = timer(done);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Runs `step` but gives up waiting after `ms` on `clock` (the step keeps running). */
export async function within<T>(clock: Clock, ms: number, step: Promise<T>): Promise<T | undefined> {
  const ac = new AbortController();
  try {
    return await Promise.race([step, clock.sleep(ms, ac.signal).then(() => undefined)]);
  } finally {
    ac.abort();
  }
}
