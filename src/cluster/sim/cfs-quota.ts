import type { TimerHandle, VirtualClock } from '../../clock/virtual.js';

/** A job on the CPU: `cpuDone` runs once it has been served. */
export interface CpuTask {
  cpuDone(): void;
  /**
   * Asked when served, before `cpuDone`: more service (ms) to go on with in the same place and
   * slice, as a process with a queue of work does (the postmaster forking one connection after
   * another); 0 or absent: it leaves the CPU.
   */
  more?(): number;
}

/** What a simulated server needs of its CPU model (CfsCpu: processor sharing; RrCpu: slices). */
export interface SimCpu {
  /** Jobs on it (running or waiting). */
  readonly running: number;
  submit(demandMs: number, onDone: () => void): void;
  submitTask(demandMs: number, task: CpuTask): void;
  setCores(cores: number): void;
  setFrozen(frozen: boolean): void;
  clear(): void;
  cpuMs(): number;
}

/** A job given as a callback (submit). */
class CallbackTask implements CpuTask {
  constructor(private readonly fn: () => void) {}

  cpuDone(): void {
    this.fn();
  }
}

/**
 * Below this much remaining service or budget (ms of one core: a nanosecond) it counts as used
 * up: floating-point timer arithmetic must not leave a job or a budget a rounding error short.
 */
export const EPS_MS = 1e-6;

/**
 * What both CPU models share: Linux CFS bandwidth control (a container's `--cpus C`), a quota of
 * q = C × period ms of CPU per period, refilled to q at each boundary (no carry-over: cpu.max.burst
 * is 0 by default), and one clock timer at the next thing that changes. Period boundaries fall at
 * origin + k × period, origin being the clock's time when the CPU was made (a cgroup's period timer
 * keeps the phase of its first start). The models say how the jobs share the time (`advance`),
 * when the next change is (`arm`) and what happens then (`fire`).
 */
export abstract class QuotaCpu implements SimCpu {
  /** Clock time that the jobs, usedMs and the budget were advanced to. */
  protected at: number;
  protected usedMs = 0;
  protected frozen = false;
  private armed: TimerHandle | undefined;
  /** The armed timer's callback, made once (a timer per arm must not cost a closure). */
  private readonly onTimer = (): void => {
    this.armed = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
    this.fire();
  };
  private armedAt = Number.POSITIVE_INFINITY;
  protected readonly origin: number;
  /** Index of the period `at` lies in, and the budget (ms of CPU) left in it. */
  protected period: number;
  protected budget: number;

  constructor(
    protected readonly clock: VirtualClock,
    protected cores: number,
    protected readonly hostCores: number,
    protected readonly periodMs: number,
  ) {
    this.at = clock.now();
    this.origin = this.at;
    this.period = 0;
    this.budget = this.quota();
  }

  abstract get running(): number;
  abstract submitTask(demandMs: number, task: CpuTask): void;
  abstract clear(): void;
  protected abstract advance(): void;
  protected abstract arm(): void;
  protected abstract fire(): void;

  /** Adds a job of `demandMs` (ms of one core); `onDone` runs when it has been served. */
  submit(demandMs: number, onDone: () => void): void {
    this.submitTask(demandMs, new CallbackTask(onDone));
  }

  /**
   * A throttle takes effect at once: as Linux does on a write to cpu.max, the current period's
   * budget is refilled to the new quota (and a throttled replica runs again); boundaries keep
   * their phase.
   */
  setCores(cores: number): void {
    this.advance();
    this.cores = cores;
    this.budget = this.quota();
    this.arm();
  }

  /** Paused (frozen cgroup): nothing is served and no CPU is used until unfrozen. */
  setFrozen(frozen: boolean): void {
    this.advance();
    this.frozen = frozen;
    this.arm();
  }

  /** Cumulative CPU used, ms of one core. */
  cpuMs(): number {
    this.advance();
    return this.usedMs;
  }

  protected quota(): number {
    return this.cores * this.periodMs;
  }

  protected periodEnd(): number {
    return this.origin + (this.period + 1) * this.periodMs;
  }

  /** Moves to period `k` with a fresh budget. */
  protected refill(k: number): void {
    this.period = k;
    this.budget = this.quota();
  }

  /**
   * Time up to `t` in which nothing is served at `drain` cores. Idle or frozen (drain 0): straight
   * to t's period, no step per period ('stop'). Throttled with work waiting: nothing until the
   * boundary, then a fresh period ('next', or 'stop' when t comes first). Else 'serve'.
   */
  protected unserved(t: number, drain: number): 'stop' | 'next' | 'serve' {
    const end = this.periodEnd();
    if (drain === 0) {
      if (t >= end) this.refill(Math.floor((t - this.origin) / this.periodMs));
      this.at = t;
      return 'stop';
    }
    if (this.budget > 0) return 'serve';
    if (t < end) {
      this.at = t;
      return 'stop';
    }
    this.at = end;
    this.refill(this.period + 1);
    return 'next';
  }

  /** When the budget runs out from `at` on at `drain` cores (Infinity: never). */
  protected exhaustion(drain: number): number {
    const end = this.periodEnd();
    const out = this.at + this.budget / drain;
    if (out <= end) return out;
    // Refilled first: the next period's quota runs out within it, or never does.
    return drain * this.periodMs > this.quota() ? end + this.quota() / drain : Number.POSITIVE_INFINITY;
  }

  /** Keeps one timer at (or before) `due`; an early one just re-arms when it fires. */
  protected armAt(due: number): void {
    if (this.armed !== undefined && this.armedAt <= due) return;
    this.disarm();
    this.armedAt = due;
    this.armed = this.clock.handle(due - this.clock.now(), this.onTimer);
  }

  protected disarm(): void {
    if (this.armed !== undefined) this.armed.cancelled = true;
    this.armed = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
  }
}
