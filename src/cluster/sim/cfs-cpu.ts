import { SeqHeap } from '../../core/seq-heap.js';
import type { VirtualClock } from '../../clock/virtual.js';
import { EPS_MS, QuotaCpu, type CpuTask } from './cfs-quota.js';

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
 * Jobs sit in a min-heap on that level (the attained-service level at which each departs); one
 * clock timer stands for the earliest of the next departure, the budget's exhaustion and, while
 * throttled with work waiting, the next boundary.
 * O(log n) per arrival and departure.
 */
export class CfsCpu extends QuotaCpu {
  private v = 0;
  private seq = 0;
  private readonly heap = new SeqHeap<CpuTask>();

  constructor(
    clock: VirtualClock,
    cores: number,
    hostCores = DEFAULT_HOST_CORES,
    periodMs = DEFAULT_CFS_PERIOD_MS,
  ) {
    super(clock, cores, hostCores, periodMs);
  }

  /** Jobs being served. */
  get running(): number {
    return this.heap.size;
  }

  /** Adds a job of `demandMs`; `task.cpuDone()` runs when it has been served. */
  submitTask(demandMs: number, task: CpuTask): void {
    this.advance();
    this.heap.push(task, this.v + Math.max(0, demandMs), this.seq++);
    this.arm();
  }

  /** Drops every job without calling it back (the server died; its owners are told apart). */
  clear(): void {
    this.advance();
    this.heap.clear();
    this.disarm();
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

  protected advance(): void {
    const t = this.clock.now();
    while (this.at < t) {
      const drain = this.drain();
      const step = this.unserved(t, drain);
      if (step === 'stop') return;
      if (step === 'next') continue;
      const end = this.periodEnd();
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

  /** Keeps one timer at (or before) the next event; an early one just re-arms when it fires. */
  protected arm(): void {
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
    this.armAt(due);
  }

  protected fire(): void {
    this.advance();
    const done: CpuTask[] = [];
    while (this.heap.size > 0 && !this.frozen) {
      const left = this.heap.peekKey() - this.v;
      if (left > EPS_MS) {
        const r = this.rate();
        // Served, or so nearly that the clock could not represent the rest of the wait.
        if (r === 0 || this.at + left / r > this.at) break;
      }
      const task = this.heap.pop() as CpuTask;
      done.push(task);
      const more = task.more?.() ?? 0;
      if (more > 0) this.heap.push(task, this.v + more, this.seq++);
    }
    this.arm();
    for (const j of done) j.cpuDone();
  }
}
