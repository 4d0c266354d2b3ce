import { SeqHeap } from '../../core/seq-heap.js';
import type { TimerHandle, VirtualClock } from '../../clock/virtual.js';

/** A job on the CPU: `cpuDone` runs once it has been served. */
export interface CpuTask {
  cpuDone(): void;
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
const EPS_MS = 1e-6;

/** The machine calibration/default.json was measured on: 2 cores; Linux's default CFS period. */
export const DEFAULT_HOST_CORES = 2;
export const DEFAULT_CFS_PERIOD_MS = 100;

/**
 * One replica's CPU under Linux CFS bandwidth control (a container's `--cpus C`): a quota of
 * q = C × period ms of CPU per period. While budget is left, the n backends share min(n, H) host
 * cores egalitarianly (each at min(1, H / n) cores: a backend uses one core at most) and the
 * budget drains at min(n, H); once it is used up nothing runs until the next period boundary,
 * which refills it to q (no carry-over: cpu.max.burst is 0 by default). So a lone short query runs
 * at full core speed and only bursts that exhaust the quota wait, as on the real cluster.
 *
 * Period boundaries fall at origin + k × period, origin being the clock's time when this CPU was
 * made (a cgroup's period timer keeps the phase of its first start). An idle or frozen replica
 * arms no timer: the budget is refilled lazily from the time when work comes.
 *
 * Since every job runs at the same rate, V (the service each job has received since an arbitrary
 * origin) stands for all of them: a job arriving at V with demand d departs when V reaches V + d.
 * Jobs sit in a min-heap on that level (the attained-service level at which each departs); one clock timer stands for the earliest of the next
 * departure, the budget's exhaustion and, while throttled with work waiting, the next boundary.
 * O(log n) per arrival and departure.
 */
export class CfsCpu implements SimCpu {
  private v = 0;
  /** Clock time that v, usedMs and the budget were advanced to. */
  private at: number;
  private usedMs = 0;
  private seq = 0;
  private readonly heap = new SeqHeap<CpuTask>();
  private frozen = false;
  private armed: TimerHandle | undefined;
  /** The armed timer's callback, made once (a timer per arm must not cost a closure). */
  private readonly onTimer = (): void => {
    this.armed = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
    this.fire();
  };
  private armedAt = Number.POSITIVE_INFINITY;
  private readonly origin: number;
  /** Index of the period `at` lies in, and the budget (ms of CPU) left in it. */
  private period: number;
  private budget: number;

  constructor(
    private readonly clock: VirtualClock,
    private cores: number,
    private readonly hostCores = DEFAULT_HOST_CORES,
    private readonly periodMs = DEFAULT_CFS_PERIOD_MS,
  ) {
    this.at = clock.now();
    this.origin = this.at;
    this.period = 0;
    this.budget = this.quota();
  }

  /** Jobs being served. */
  get running(): number {
    return this.heap.size;
  }

  /** Adds a job of `demandMs` (ms of one core); `onDone` runs when it has been served. */
  submit(demandMs: number, onDone: () => void): void {
    this.submitTask(demandMs, new CallbackTask(onDone));
  }

  /** Adds a job of `demandMs`; `task.cpuDone()` runs when it has been served. */
  submitTask(demandMs: number, task: CpuTask): void {
    this.advance();
    this.heap.push(task, this.v + Math.max(0, demandMs), this.seq++);
    this.arm();
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

  /** Drops every job without calling it back (the server died; its owners are told apart). */
  clear(): void {
    this.advance();
    this.heap.clear();
    this.disarm();
  }

  /** Cumulative CPU used, ms of one core. */
  cpuMs(): number {
    this.advance();
    return this.usedMs;
  }

  private quota(): number {
    return this.cores * this.periodMs;
  }

  private periodEnd(): number {
    return this.origin + (this.period + 1) * this.periodMs;
  }

  /** Cores in use (the budget's drain) while it runs: min(n, H); 0 when idle or frozen. */
  private drain(): number {
    const n = this.heap.size;
    return n === 0 || this.frozen ? 0 : Math.min(n, this.hostCores);
  }

  /** Service rate of each job right now (0 while throttled). */
  private rate(): number {
    return this.budget > 0 ? this.drain() / Math.max(1, this.heap.size) : 0;
  }

  /** Moves to period `k` with a fresh budget. */
  private refill(k: number): void {
    this.period = k;
    this.budget = this.quota();
  }

  private advance(): void {
    const t = this.clock.now();
    while (this.at < t) {
      const drain = this.drain();
      const end = this.periodEnd();
      if (drain === 0) {
        // Nothing runs: jump straight to t's period, no step per period.
        if (t >= end) this.refill(Math.floor((t - this.origin) / this.periodMs));
        this.at = t;
        return;
      }
      if (this.budget <= 0) {
        // Throttled with work waiting: nothing until the boundary.
        if (t < end) {
          this.at = t;
          return;
        }
        this.at = end;
        this.refill(this.period + 1);
        continue;
      }
      const per = drain / this.heap.size;
      const dt = Math.min(t, end) - this.at;
      if (drain * dt >= this.budget - EPS_MS) {
        const run = this.budget / drain;
        this.serve(run, drain, per);
        this.budget = 0;
        this.at = Math.min(t, this.at + run);
        if (this.at >= end) this.refill(this.period + 1);
        continue;
      }
      this.serve(dt, drain, per);
      this.budget -= drain * dt;
      this.at = Math.min(t, end);
      if (this.at < end) return;
      this.refill(this.period + 1);
      // A quota that covers the drain never runs out: skip whole periods at once.
      const full = Math.floor((t - this.at) / this.periodMs);
      if (full > 0 && drain * this.periodMs <= this.quota()) {
        this.serve(full * this.periodMs, drain, per);
        this.at = this.origin + (this.period + full) * this.periodMs;
        this.refill(this.period + full);
      }
    }
  }

  private serve(dt: number, drain: number, per: number): void {
    this.v += dt * per;
    this.usedMs += dt * drain;
  }

  /** When the budget runs out from `at` on at the current drain (Infinity: never). */
  private exhaustion(drain: number): number {
    const end = this.periodEnd();
    const out = this.at + this.budget / drain;
    if (out <= end) return out;
    // Refilled first: the next period's quota runs out within it, or never does.
    return drain * this.periodMs > this.quota() ? end + this.quota() / drain : Number.POSITIVE_INFINITY;
  }

  /** Keeps one timer at (or before) the next event; an early one just re-arms when it fires. */
  private arm(): void {
    const top = this.heap.peekKey();
    const drain = this.drain();
    if (this.heap.size === 0 || drain === 0) {
      this.disarm();
      return;
    }
    let due: number;
    if (this.budget <= 0) due = this.periodEnd();
    else {
      const per = drain / this.heap.size;
      due = Math.min(this.at + Math.max(0, (top - this.v) / per), this.exhaustion(drain));
    }
    if (this.armed !== undefined && this.armedAt <= due) return;
    this.disarm();
    this.armedAt = due;
    this.armed = this.clock.handle(due - this.clock.now(), this.onTimer);
  }

  private disarm(): void {
    if (this.armed !== undefined) this.armed.cancelled = true;
    this.armed = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
  }

  private fire(): void {
    this.advance();
    const done: CpuTask[] = [];
    while (this.heap.size > 0 && !this.frozen) {
      const left = this.heap.peekKey() - this.v;
      if (left > EPS_MS) {
        const r = this.rate();
        // Served, or so nearly that the clock could not represent the rest of the wait.
        if (r === 0 || this.at + left / r > this.at) break;
      }
      done.push(this.heap.pop() as CpuTask);
    }
    this.arm();
    for (const j of done) j.cpuDone();
  }
}
