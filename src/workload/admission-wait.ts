import type { Cancel } from '../clock/index.js';
import { PlbError } from '../core/errors.js';
import type { Handout, RequestResult } from '../router/admission/admission.js';
import type { ServiceClass } from '../core/service-class.js';

/** What the waiter needs of a router with an admission queue (src/router/admission/admission.ts). */
export interface QueueingRouter {
  request(cls: ServiceClass, ticket: object, nowMs: number): RequestResult;
  cancel(ticket: object): boolean;
  pump(nowMs: number): Handout<object>[];
  nextWakeMs(nowMs: number): number | undefined;
  observe(cls: ServiceClass, replica: string, latencyMs: number, nowMs: number): void;
  release(replica: string, cls: ServiceClass, nowMs: number): boolean;
}

export function isQueueingRouter(r: unknown): r is QueueingRouter {
  const x = r as Partial<QueueingRouter> | null;
  return typeof x?.request === 'function' && typeof x.pump === 'function';
}

export interface Admitted {
  replica: string;
  /** Time spent in the admission queue (0 when a slot was free): its own metric. */
  queueMs: number;
}

interface Pending {
  resolve: (a: Admitted) => void;
  reject: (e: Error) => void;
  cls: ServiceClass;
}

/**
 * The waiting side of admission: a session that finds no slot waits here (a promise) until the
 * router hands it a replica or its queue timeout passes. The router stays pure; this owns the
 * one timer (the router's next wake-up: a deadline, or a re-check while slow start ramps).
 */
export class AdmissionWaiter {
  private readonly pending = new Map<object, Pending>();
  private cancelTimer: Cancel | undefined;
  private wakeAt: number | undefined;

  constructor(
    private readonly router: QueueingRouter,
    private readonly clock: { now(): number; timer(ms: number, fn: () => void): Cancel },
  ) {}

  get waiting(): number {
    return this.pending.size;
  }

  /**
   * Admitted now, or after a wait; rejects ADMISSION_FULL (queue full) or ADMISSION_TIMEOUT, or
   * INTERRUPTED when `signal` aborts while it waits (a client that left gives up its place).
   */
  acquire(cls: ServiceClass, signal?: AbortSignal): Promise<Admitted> {
    // Hand freed slots to earlier waiters before this newcomer looks.
    this.pump();
    const ticket = {};
    const r = this.router.request(cls, ticket, this.clock.now());
    if (r === 'full')
      return Promise.reject(
        new PlbError('ADMISSION_FULL', `admission queue full: a ${cls} session was refused`),
      );
    if (r !== 'queued') return Promise.resolve({ replica: r.replica, queueMs: 0 });
    return new Promise<Admitted>((resolve, reject) => {
      this.pending.set(ticket, { resolve, reject, cls });
      signal?.addEventListener(
        'abort',
        () => {
          if (!this.pending.delete(ticket)) return;
          this.router.cancel(ticket);
          reject(new PlbError('INTERRUPTED', `admission: a waiting ${cls} session left`));
          this.schedule();
        },
        { once: true },
      );
      this.schedule();
    });
  }

  /** A session ended (its slot is free): admit waiters. */
  released(): void {
    if (this.pending.size > 0) this.pump();
  }

  observe(cls: ServiceClass, replica: string, latencyMs: number): void {
    this.router.observe(cls, replica, latencyMs, this.clock.now());
  }

  /** Admits or times out waiters as the router says, then sets the next wake-up. */
  pump(): void {
    const now = this.clock.now();
    for (const h of this.router.pump(now)) {
      const p = this.pending.get(h.ticket);
      if (!p) {
        // Nobody waits for it any more: give the slot back.
        if (h.replica) this.router.release(h.replica, h.cls, now);
        continue;
      }
      this.pending.delete(h.ticket);
      if (h.replica) p.resolve({ replica: h.replica, queueMs: h.waitMs });
      else
        p.reject(
          new PlbError(
            'ADMISSION_TIMEOUT',
            `admission: a ${h.cls} session waited ${Math.round(h.waitMs)} ms for a slot and timed out`,
          ),
        );
    }
    this.schedule();
  }

  /** The run ends: every waiter fails now (nothing is left waiting on a timer). */
  stop(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.wakeAt = undefined;
    for (const [ticket, p] of this.pending) {
      this.router.cancel(ticket);
      p.reject(new PlbError('INTERRUPTED', `admission: the run ended while a ${p.cls} session waited`));
    }
    this.pending.clear();
  }

  private schedule(): void {
    const now = this.clock.now();
    const wake = this.pending.size > 0 ? this.router.nextWakeMs(now) : undefined;
    if (wake === this.wakeAt) return;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.wakeAt = wake;
    if (wake === undefined) return;
    this.cancelTimer = this.clock.timer(Math.max(0, wake - now), () => {
      this.cancelTimer = undefined;
      this.wakeAt = undefined;
      this.pump();
    });
  }
}
