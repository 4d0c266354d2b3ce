import type { Cancel, Clock } from '../../clock/index.js';

interface Job {
  /** Attained-service level (ms of one core) at which the job departs. */
  level: number;
  seq: number;
  onDone: () => void;
}

/**
 * Below this much remaining service (ms of one core: a nanosecond) a job counts as served: the
 * timer's arithmetic in floating point must not leave a job a rounding error short forever.
 */
const EPS_MS = 1e-6;

/**
 * One replica's CPU quota as an egalitarian processor-sharing server. With n jobs on C cores,
 * every job is served at rate min(1, C / n) (a backend runs on one core at most), so instead of
 * updating n remaining demands per event we keep V, the service each job has received since an
 * arbitrary origin, and a job arriving at V with demand d departs when V reaches V + d. Jobs sit
 * in a min-heap on that level; one clock timer stands for the earliest departure. O(log n) per
 * arrival and departure.
 */
export class PsCpu {
  private v = 0;
  /** Clock time that v and usedMs were advanced to. */
  private at: number;
  private usedMs = 0;
  private seq = 0;
  private readonly heap: Job[] = [];
  private frozen = false;
  private cancel: Cancel | undefined;
  private armedAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly clock: Clock,
    private cores: number,
  ) {
    this.at = clock.now();
  }

  /** Jobs being served. */
  get running(): number {
    return this.heap.length;
  }

  /** Adds a job of `demandMs` (ms of one core); `onDone` runs when it has been served. */
  submit(demandMs: number, onDone: () => void): void {
    this.advance();
    this.push({ level: this.v + Math.max(0, demandMs), seq: this.seq++, onDone });
    this.arm();
  }

  /** A throttle: the quota changes from now on. */
  setCores(cores: number): void {
    this.advance();
    this.cores = cores;
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
    this.heap.length = 0;
    this.disarm();
  }

  /** Cumulative CPU used, ms of one core. */
  cpuMs(): number {
    this.advance();
    return this.usedMs;
  }

  private rate(): number {
    const n = this.heap.length;
    return n === 0 || this.frozen ? 0 : Math.min(1, this.cores / n);
  }

  private advance(): void {
    const t = this.clock.now();
    const dt = t - this.at;
    if (dt > 0) {
      const r = this.rate();
      this.v += dt * r;
      this.usedMs += dt * r * this.heap.length;
    }
    this.at = t;
  }

  /** Keeps one timer at (or before) the next departure; an early one just re-arms when it fires. */
  private arm(): void {
    const top = this.heap[0];
    const r = this.rate();
    if (top === undefined || r === 0) {
      this.disarm();
      return;
    }
    const due = this.at + Math.max(0, (top.level - this.v) / r);
    if (this.cancel !== undefined && this.armedAt <= due) return;
    this.disarm();
    this.armedAt = due;
    this.cancel = this.clock.timer(due - this.clock.now(), () => {
      this.cancel = undefined;
      this.armedAt = Number.POSITIVE_INFINITY;
      this.departures();
    });
  }

  private disarm(): void {
    this.cancel?.();
    this.cancel = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
  }

  private departures(): void {
    this.advance();
    const done: Job[] = [];
    for (let top = this.heap[0]; top !== undefined && !this.frozen; top = this.heap[0]) {
      const left = top.level - this.v;
      // Served, or so nearly that the clock could not represent the rest of the wait.
      if (left > EPS_MS && this.at + left / this.rate() > this.at) break;
      done.push(this.pop());
    }
    this.arm();
    for (const j of done) j.onDone();
  }

  private less(a: Job, b: Job): boolean {
    return a.level < b.level || (a.level === b.level && a.seq < b.seq);
  }

  private push(j: Job): void {
    const h = this.heap;
    h.push(j);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = h[p] as Job;
      if (!this.less(j, parent)) break;
      h[i] = parent;
      i = p;
    }
    h[i] = j;
  }

  private pop(): Job {
    const h = this.heap;
    const top = h[0] as Job;
    const last = h.pop() as Job;
    const n = h.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && this.less(h[r] as Job, h[l] as Job) ? r : l;
        if (!this.less(h[c] as Job, last)) break;
        h[i] = h[c] as Job;
        i = c;
      }
      h[i] = last;
    }
    return top;
  }
}
