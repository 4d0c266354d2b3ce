/**
 * Startup backpressure for freemium, the loop's side (accept-pacer.ts decides). A freemium session
 * whose startup packet is in comes here before it is routed: at once while this loop turn has room,
 * else held (first in, first out) and run by a later turn (setImmediate: one turn per loop iteration
 * while anyone is held), or refused 53300 once held past the bound. Routing a startup, refusing it
 * and closing its socket are most of what a flood costs; paced, a flood's thousands of startups that
 * arrive in one poll (a client process catching up writes them all at once) are worked through a
 * slice per turn, and a premium session's reads never wait behind more than one slice.
 * Reading and accepting are not paced: Node cannot stop a listener accepting without closing it
 * (which resets every client in the kernel's accept queue), and a read costs little.
 */
import { performance } from 'node:perf_hooks';
import { AcceptPacer, type PacerCounters, type PacerOptions } from './accept-pacer.js';

/** A freemium session waiting for its turn to be routed. */
export interface PacedStartup {
  /** Its turn: route it (it checks that its client is still there). */
  run(): void;
  /** Held past the bound: refuse it (53300). */
  expire(): void;
}

export class PacedIntake {
  private readonly pacer: AcceptPacer<PacedStartup>;
  private scheduled = false;
  /** When the last turn ran, if the next one follows it directly (one loop iteration apart). */
  private lastTurnAt: number | undefined;
  private stopped = false;

  constructor(options: PacerOptions) {
    this.pacer = new AcceptPacer(options);
  }

  get held(): number {
    return this.pacer.held;
  }

  get counters(): PacerCounters {
    return this.pacer.counters;
  }

  /** A freemium startup, read and ready to be routed: now, or in a later turn. */
  offer(s: PacedStartup): void {
    if (this.stopped || this.pacer.offer(s, performance.now()) === 'start') return s.run();
    this.schedule();
  }

  /** The proxy stops: the held ones run now (each finds its session closing or routes it). */
  stop(): void {
    this.stopped = true;
    for (const s of this.pacer.drain()) s.run();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.turn());
  }

  private turn(): void {
    this.scheduled = false;
    if (this.stopped) return;
    const now = performance.now();
    const turnMs = this.lastTurnAt === undefined ? undefined : now - this.lastTurnAt;
    const { start, expired } = this.pacer.turn(now, turnMs);
    for (const s of expired) s.expire();
    for (const s of start) s.run();
    if (this.pacer.held > 0) {
      this.lastTurnAt = now;
      this.schedule();
    } else this.lastTurnAt = undefined;
  }
}
