/**
 * Where a proxied session waits for a replica slot. Without a session limit the router is asked
 * directly (admit now or NO_REPLICA, as before). With one, the router is the admission router
 * (router/admission/admission.ts: per-replica session limits and its priority queue, premium first, client
 * hosts in turn within a class, a timeout): a session that finds every slot of its class taken waits here
 * until a release or a replica coming back hands it one, and fails with ADMISSION_FULL (queue
 * full) or ADMISSION_TIMEOUT, which the session tells its client as 53300.
 */
import type { Clock, Cancel } from '../../clock/index.js';
import { isPlbError, PlbError } from '../../core/errors.js';
import type { AdmittingRouter } from '../../router/admission/admission.js';
import type { Router } from '../../router/types.js';
import type { ServiceClass } from '../../core/service-class.js';

/** Who counts this proxy's own slots per replica (replica-limits.ts). */
export interface OwnSlots {
  admitted(replica: string, cls: ServiceClass): void;
  released(replica: string, cls: ServiceClass, established: boolean): void;
}

interface Waiter {
  resolve: (replica: string) => void;
  reject: (err: unknown) => void;
}

export interface GateCounters {
  /** Sessions that waited for a slot and got one. */
  queuedAdmitted: number;
  /** Refused: the queue was full. */
  queueFull: number;
  /** Waited past the queue timeout. */
  timedOut: number;
  /** The longest wait that ended in a slot, ms. */
  maxWaitMs: number;
}

export class AdmissionGate {
  readonly counters: Record<ServiceClass, GateCounters> = { premium: zero(), freemium: zero() };
  private readonly waiting = new Map<object, Waiter>();
  private wake: { at: number; cancel: Cancel } | undefined;
  /**
   * Queue full: one error per class, made once. A flood is refused thousands of times a second,
   * and a new Error each time (its stack captured) was the largest cost of a refusal after the write.
   */
  private readonly full: Record<ServiceClass, PlbError> = {
    premium: fullError('premium'),
    freemium: fullError('freemium'),
  };

  constructor(
    private readonly router: Router,
    private readonly admitting: AdmittingRouter<object> | undefined,
    private readonly clock: Clock,
    /** Told of every slot taken and given back (the replica view counts this proxy's own). */
    private readonly own?: OwnSlots,
  ) {}

  /** Sessions waiting for a slot, per class. */
  queued(cls: ServiceClass): number {
    return this.admitting?.queued(cls) ?? 0;
  }

  /**
   * A replica for a session of cls: at once (a string, no promise: the usual case) when one has
   * room, a promise of one after a wait otherwise. Throws PlbError NO_REPLICA (no healthy replica
   * for the class) or ADMISSION_FULL; the promise rejects with ADMISSION_TIMEOUT.
   * `ticket` identifies the session (cancel(ticket) when its client leaves while it waits);
   * `source` its client's host (the waiting hosts of a class take turns).
   */
  acquire(cls: ServiceClass, ticket: object, source?: string): string | Promise<string> {
    const now = this.clock.now();
    if (!this.admitting) return this.took(this.router.admit(cls, now).replica, cls);
    const r = this.admitting.request(cls, ticket, now, source);
    if (r === 'full') {
      this.counters[cls].queueFull += 1;
      throw this.full[cls];
    }
    if (r !== 'queued') return this.took(r.replica, cls);
    const waited = new Promise<string>((resolve, reject) => {
      this.waiting.set(ticket, { resolve, reject });
      this.schedule();
    });
    // Its place was another host's waiter's (the queue full): that one is refused now.
    if (this.admitting.dropped()) this.pump();
    return waited;
  }

  /**
   * A replica now, or undefined (no slot free without waiting, anyone of cls waiting already, or no
   * replica for cls): never queues, never throws those. For a connection opened early.
   */
  tryAcquire(cls: ServiceClass): string | undefined {
    const now = this.clock.now();
    try {
      if (!this.admitting) return this.took(this.router.admit(cls, now).replica, cls);
      return this.admitting.queued(cls) > 0
        ? undefined
        : this.took(this.admitting.admit(cls, now).replica, cls);
    } catch (err) {
      if (isPlbError(err, 'NO_REPLICA') || isPlbError(err, 'ADMISSION_FULL')) return undefined;
      throw err;
    }
  }

  /** The session of ticket left while it waited: its acquire rejects (no-op when it was not waiting). */
  cancel(ticket: object): void {
    const w = this.waiting.get(ticket);
    if (!w) return;
    this.waiting.delete(ticket);
    this.admitting?.cancel(ticket);
    w.reject(new PlbError('ADMISSION_TIMEOUT', 'the client left while it waited for a slot'));
    this.schedule();
  }

  /** A slot given back; established: its session had reached ReadyForQuery. */
  release(replica: string, cls: ServiceClass, established = false): void {
    this.router.release(replica, cls, this.clock.now());
    this.own?.released(replica, cls, established);
    this.pump();
  }

  private took(replica: string, cls: ServiceClass): string {
    this.own?.admitted(replica, cls);
    return replica;
  }

  /** Something freed capacity (a release, a replica up): hand slots to the waiters, premium first. */
  pump(): void {
    if (!this.admitting || this.waiting.size === 0) return;
    const now = this.clock.now();
    for (const h of this.admitting.pump(now)) {
      const w = this.waiting.get(h.ticket);
      if (!w) {
        // Its client left in between: give the slot back.
        if (h.replica !== undefined) this.router.release(h.replica, h.cls, now);
        continue;
      }
      if (h.replica !== undefined) this.own?.admitted(h.replica, h.cls);
      this.waiting.delete(h.ticket);
      const c = this.counters[h.cls];
      if (h.full) {
        c.queueFull += 1;
        w.reject(this.full[h.cls]);
      } else if (h.replica === undefined) {
        c.timedOut += 1;
        w.reject(
          new PlbError(
            'ADMISSION_TIMEOUT',
            `no replica slot for a ${h.cls} session within ${Math.round(h.waitMs)} ms`,
          ),
        );
      } else {
        c.queuedAdmitted += 1;
        c.maxWaitMs = Math.max(c.maxWaitMs, h.waitMs);
        w.resolve(h.replica);
      }
    }
    this.schedule();
  }

  /** Stops the wake-up timer (the proxy stops). */
  close(): void {
    this.wake?.cancel();
    this.wake = undefined;
  }

  /** A timer for the next deadline (timeouts, slow start) while anyone waits. */
  private schedule(): void {
    if (!this.admitting) return;
    const now = this.clock.now();
    const at = this.waiting.size > 0 ? this.admitting.nextWakeMs(now) : undefined;
    if (this.wake && (at === undefined || this.wake.at !== at)) {
      this.wake.cancel();
      this.wake = undefined;
    }
    if (at === undefined || this.wake) return;
    const cancel = this.clock.timer(Math.max(1, at - now), () => {
      this.wake = undefined;
      this.pump();
    });
    this.wake = { at, cancel };
  }
}

function fullError(cls: ServiceClass): PlbError {
  return new PlbError('ADMISSION_FULL', `too many sessions waiting for a replica (class ${cls})`);
}

function zero(): GateCounters {
  return { queuedAdmitted: 0, queueFull: 0, timedOut: 0, maxWaitMs: 0 };
}
