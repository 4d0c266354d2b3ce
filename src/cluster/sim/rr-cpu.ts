import type { VirtualClock } from '../../clock/virtual.js';
import { Fifo } from '../../core/fifo.js';
import { EPS_MS, QuotaCpu, type CpuTask } from './cfs-quota.js';

interface Job {
  task: CpuTask;
  /** Service still owed, ms of one core. */
  left: number;
  /** What is left of its current time slice, ms. */
  slice: number;
}

/**
 * One replica's CPU as Linux time-slices it (the calibration's `sliceMs`): at most `hostCores`
 * backends run at once, each at a full core for a slice, then to the back of the run queue; a new
 * arrival starts at once on a free core, else joins the back. Under the same CFS bandwidth control
 * as CfsCpu (`cores` × period of CPU per period, then throttled until the next boundary).
 *
 * Why not processor sharing: on a saturated real replica a short point query waits about as long
 * as a scan's few slices; slices of milliseconds do not let short queries overtake the queue the
 * way an infinitely fine share does (docs/simulator.md has the measurement).
 */
export class RrCpu extends QuotaCpu {
  private readonly ready = new Fifo<Job>();
  private readonly run: Job[] = [];

  constructor(
    clock: VirtualClock,
    cores: number,
    hostCores: number,
    periodMs: number,
    private readonly sliceMs: number,
  ) {
    super(clock, cores, hostCores, periodMs);
  }

  get running(): number {
    return this.run.length + this.ready.size;
  }

  submitTask(demandMs: number, task: CpuTask): void {
    this.advance();
    const job: Job = { task, left: Math.max(0, demandMs), slice: this.sliceMs };
    if (this.run.length < this.hostCores) this.run.push(job);
    else this.ready.push(job);
    this.arm();
  }

  clear(): void {
    this.advance();
    this.run.length = 0;
    this.ready.clear();
    this.disarm();
  }

  /** Serves the running jobs (one core each) up to the clock's now; refills at each boundary. */
  protected advance(): void {
    const t = this.clock.now();
    while (this.at < t) {
      const n = this.frozen ? 0 : this.run.length;
      const step = this.unserved(t, n);
      if (step === 'stop') return;
      if (step === 'next') continue;
      const end = this.periodEnd();
      const to = Math.min(t, end, this.at + this.budget / n);
      const dt = to - this.at;
      for (const j of this.run) {
        j.left -= dt;
        j.slice -= dt;
      }
      this.usedMs += dt * n;
      this.budget -= dt * n;
      if (this.budget <= EPS_MS) this.budget = 0;
      this.at = to;
      if (this.at >= end) this.refill(this.period + 1);
    }
  }

  /** The next instant something changes: a job or slice ends, the budget runs out, or it refills. */
  protected arm(): void {
    const n = this.run.length;
    if (n === 0 || this.frozen) {
      this.disarm();
      return;
    }
    let due: number;
    if (this.budget <= 0) due = this.periodEnd();
    else {
      let first = Number.POSITIVE_INFINITY;
      for (const j of this.run) first = Math.min(first, j.left, j.slice);
      due = Math.min(this.at + Math.max(0, first), this.exhaustion(n));
    }
    this.armAt(due);
  }

  /** Jobs served leave, slices used up go to the back, free cores take the queue's head. */
  protected fire(): void {
    this.advance();
    // Most firings end one job or one slice: the first of each is kept in a local, an array is
    // made only for a second (a simulated query must not cost two arrays here).
    let done: CpuTask | undefined;
    let moreDone: CpuTask[] | undefined;
    if (!this.frozen) {
      let w = 0;
      let expired: Job | undefined;
      let moreExpired: Job[] | undefined;
      for (const j of this.run) {
        // Served, or so nearly that the clock could not represent the rest.
        if (j.left <= EPS_MS || this.at + j.left <= this.at) {
          if (done === undefined) done = j.task;
          else (moreDone ??= []).push(j.task);
          const more = j.task.more?.() ?? 0;
          if (more <= 0) continue;
          j.left = more;
        }
        if (j.slice <= EPS_MS || this.at + j.slice <= this.at) {
          j.slice = this.sliceMs;
          if (expired === undefined) expired = j;
          else (moreExpired ??= []).push(j);
        } else this.run[w++] = j;
      }
      this.run.length = w;
      if (expired !== undefined) this.ready.push(expired);
      if (moreExpired !== undefined) for (const j of moreExpired) this.ready.push(j);
      while (this.run.length < this.hostCores && this.ready.size > 0)
        this.run.push(this.ready.shift() as Job);
    }
    this.arm();
    done?.cpuDone();
    if (moreDone !== undefined) for (const t of moreDone) t.cpuDone();
  }
}
