// The admission wrapper as it was before its per-session path stopped copying every replica: a
// snapshot per admission and a scan over all K for the fallback. Kept only as a specification the
// faster src/router/admission/admission.ts must agree with decision for decision (admission-reference.test.ts).
import { PlbError } from '../../src/core/errors.js';
import type { ServiceClass } from '../../src/core/service-class.js';
import { AdmissionQueue } from '../../src/router/admission/admission-queue.js';
import type { AdmissionOptions } from '../../src/router/admission/admission-types.js';
import type { AdmissionStats, Handout, RequestResult } from '../../src/router/admission/admission.js';
import { SessionLimits } from '../../src/router/admission/session-limits.js';
import { SloGuard, type Place } from '../../src/router/admission/slo-guard.js';
import { admissionKey, slowStartRamp } from '../../src/router/slow-start.js';
import type { Admission, ReplicaSnapshot, RoleChange, Router, StrategyName } from '../../src/router/types.js';

interface Waiting<T> {
  ticket: T;
  cls: ServiceClass;
}

function placeOf(r: Pick<ReplicaSnapshot, 'role' | 'borrowedBy'>, cls: ServiceClass): Place | undefined {
  if (r.role === 'mixed') return 'shared';
  if (r.role === cls) return 'own';
  return r.borrowedBy === cls ? 'borrowed' : undefined;
}

export class ReferenceAdmittingRouter<T = unknown> {
  readonly limits: SessionLimits;
  readonly guard: SloGuard | undefined;
  private readonly queue: AdmissionQueue<Waiting<T>>;
  private readonly byTicket = new Map<T, Waiting<T>>();
  private readonly upSince = new Map<string, number>();
  private anyDown = false;

  constructor(
    private readonly inner: Router,
    readonly strategy: StrategyName,
    private readonly opts: AdmissionOptions,
  ) {
    if (!inner.assign)
      throw new PlbError('INTERNAL', `strategy ${inner.strategy} cannot take assigned sessions`);
    this.limits = new SessionLimits(
      inner.snapshot().map((r) => r.id),
      opts.limits,
    );
    for (const cls of ['premium', 'freemium'] as const) {
      const reserve = this.reserveShare(cls);
      if (!(reserve >= 0 && reserve <= 1))
        throw new PlbError('BAD_INPUT', `${cls} reserve must be in [0, 1] (got ${String(reserve)})`);
    }
    this.queue = new AdmissionQueue(opts.queue);
    this.guard = opts.guard ? new SloGuard(opts.guard) : undefined;
  }

  /** Admits now or throws (callers that cannot wait): NO_REPLICA, or ADMISSION_FULL when every slot is taken. */
  admit(cls: ServiceClass, nowMs: number): Admission {
    const a = this.place(cls, nowMs, true);
    if (a) return a;
    throw new PlbError(
      'ADMISSION_FULL',
      `no free session slot for a ${cls} session (strategy ${this.strategy})`,
    );
  }

  /**
   * A session asks to be admitted: placed now, queued (the caller waits for pump() to hand it
   * out or time it out), or 'full' when the queue is full. Nobody jumps the queue: a newcomer of a
   * class with waiters queues behind them.
   */
  request(cls: ServiceClass, ticket: T, nowMs: number): RequestResult {
    this.tick(nowMs);
    const qcls = this.queueClass(cls);
    if (this.queue.size(qcls) === 0) {
      const a = this.place(cls, nowMs);
      if (a) return a;
    }
    const w: Waiting<T> = { ticket, cls };
    if (!this.queue.push(qcls, w, nowMs)) return 'full';
    this.byTicket.set(ticket, w);
    return 'queued';
  }

  /** A waiting session left; false when it was not waiting. */
  cancel(ticket: T): boolean {
    const w = this.byTicket.get(ticket);
    if (!w) return false;
    this.byTicket.delete(ticket);
    return this.queue.remove(w);
  }

  /**
   * Times out the waiters past their deadline, then admits waiters while slots are free
   * (premium first, FIFO within a class). Call after a release, a markUp, and at nextWakeMs().
   */
  pump(nowMs: number): Handout<T>[] {
    this.tick(nowMs);
    const out: Handout<T>[] = [];
    for (const e of this.queue.expire(nowMs)) {
      this.byTicket.delete(e.item.ticket);
      out.push({ ticket: e.item.ticket, cls: e.item.cls, waitMs: e.waitMs });
    }
    const placed = new Map<Waiting<T>, string>();
    for (const e of this.queue.drain(nowMs, (_q, w) => {
      const a = this.place(w.cls, nowMs);
      if (a) placed.set(w, a.replica);
      return a !== undefined;
    })) {
      this.byTicket.delete(e.item.ticket);
      const replica = placed.get(e.item) as string;
      out.push({ ticket: e.item.ticket, cls: e.item.cls, waitMs: e.waitMs, replica });
    }
    return out;
  }

  /**
   * When pump() should next run with nobody releasing: the next deadline, and while sessions wait
   * every intervalMs (slow start and the guard change what fits as time passes).
   */
  nextWakeMs(nowMs: number, intervalMs = 250): number | undefined {
    const d = this.queue.nextDeadline();
    if (d === undefined) return undefined;
    return Math.min(d, nowMs + intervalMs);
  }

  queued(cls?: ServiceClass): number {
    if (cls === undefined || !this.opts.classBlind) return this.queue.size(cls);
    let n = 0;
    for (const w of this.byTicket.values()) if (w.cls === cls) n++;
    return n;
  }

  /** A completed query's latency: the guard's premium window and the gradient limits. */
  observe(cls: ServiceClass, replica: string, latencyMs: number, nowMs: number): void {
    this.guard?.observe(cls, latencyMs, nowMs);
    this.limits.observe(replica, latencyMs);
  }

  release(replica: string, cls: ServiceClass, nowMs: number): boolean {
    return this.inner.release(replica, cls, nowMs);
  }

  markDown(replica: string, nowMs: number): void {
    if (!this.anyDown) this.guard?.freezeReference(nowMs);
    this.anyDown = true;
    this.inner.markDown(replica, nowMs);
  }

  markUp(replica: string, nowMs: number): void {
    const was = this.inner.snapshot().find((r) => r.id === replica)?.healthy;
    this.inner.markUp(replica, nowMs);
    if (was === false) this.upSince.set(replica, nowMs);
  }

  snapshot(): ReplicaSnapshot[] {
    return this.inner.snapshot();
  }
  drainChanges(): RoleChange[] {
    return this.inner.drainChanges();
  }
  setWeight(replica: string, weight: number): void {
    this.inner.setWeight(replica, weight);
  }

  stats(nowMs: number): AdmissionStats {
    const limits: Record<string, number> = {};
    for (const r of this.inner.snapshot()) limits[r.id] = this.limitOf(r, nowMs);
    return {
      queued: { premium: this.queued('premium'), freemium: this.queued('freemium') },
      guardLevel: this.guard?.level ?? 0,
      premiumP95Ms: this.guard?.lastP95 ?? null,
      targetMs: this.guard?.targetMs(),
      limits,
    };
  }

  /** The sessions replica r may hold now (its limit x weight x slow-start ramp). */
  limitOf(r: ReplicaSnapshot, nowMs: number): number {
    const ramp = slowStartRamp(nowMs, this.upSince.get(r.id), this.opts.slowStartMs);
    return this.limits.effective(r.id, r.weight, ramp);
  }

  /**
   * May a cls session go to r now? overflow: r may also be a replica of the other class's role
   * that cls has not borrowed (the caller found every replica of its own full), as borrowed.
   */
  fits(r: ReplicaSnapshot, cls: ServiceClass, nowMs: number, overflow = false): boolean {
    if (!r.healthy) return false;
    const place = placeOf(r, cls) ?? (overflow && r.borrowedBy === undefined ? 'borrowed' : undefined);
    if (place === undefined) return false;
    const limit = this.limitOf(r, nowMs);
    const total = r.sessions.premium + r.sessions.freemium;
    if (total >= limit) return false;
    if (this.opts.classBlind) return true;
    // The other class's own replica: leave it the slots it keeps for itself.
    const other: ServiceClass = cls === 'premium' ? 'freemium' : 'premium';
    if (r.role === other && total >= limit - Math.ceil(this.reserveShare(other) * limit)) return false;
    if (cls === 'premium' || !this.guard) return true;
    return r.sessions.freemium < this.guard.freemiumCap(place, limit);
  }

  /** The share of a cls replica's limit the other class may not take. */
  private reserveShare(cls: ServiceClass): number {
    return (cls === 'premium' ? this.opts.premiumReserve : this.opts.freemiumReserve) ?? 0;
  }

  private queueClass(cls: ServiceClass): ServiceClass {
    return this.opts.classBlind ? 'premium' : cls;
  }

  private tick(nowMs: number): void {
    this.guard?.update(nowMs);
    if (this.opts.limits.mode === 'gradient') {
      const snap = this.inner.snapshot();
      this.limits.update(nowMs, (id) => {
        const r = snap.find((x) => x.id === id);
        return r ? r.sessions.premium + r.sessions.freemium : 0;
      });
    }
  }

  /**
   * The inner router's choice if it fits; otherwise the least loaded replica the class may use
   * that fits; otherwise nothing (the inner router's count is given back).
   */
  private place(cls: ServiceClass, nowMs: number, throwNoReplica = false): Admission | undefined {
    let first: Admission;
    try {
      first = this.inner.admit(cls, nowMs);
    } catch (err) {
      if (!throwNoReplica && err instanceof PlbError && err.code === 'NO_REPLICA') return undefined;
      throw err;
    }
    const snap = this.inner.snapshot();
    const chosen = snap.find((r) => r.id === first.replica) as ReplicaSnapshot;
    // Judge the choice as it was before this session was counted.
    chosen.sessions[cls] -= 1;
    if (this.fits(chosen, cls, nowMs)) return first;
    this.inner.release(first.replica, cls, nowMs);
    // The replicas cls may use first; then, with all of them full, the other role's replicas
    // with room (a full replica is the strongest pressure there is: borrowing by limits).
    const best =
      this.leastLoaded(snap, chosen, cls, nowMs, false) ?? this.leastLoaded(snap, chosen, cls, nowMs, true);
    if (!best || !this.inner.assign) return undefined;
    return this.inner.assign(best.id, cls, nowMs);
  }

  private leastLoaded(
    snap: readonly ReplicaSnapshot[],
    skip: ReplicaSnapshot,
    cls: ServiceClass,
    nowMs: number,
    overflow: boolean,
  ): ReplicaSnapshot | undefined {
    let best: ReplicaSnapshot | undefined;
    let bestKey = Infinity;
    for (const r of snap) {
      if (r === skip || !this.fits(r, cls, nowMs, overflow)) continue;
      const ramp = slowStartRamp(nowMs, this.upSince.get(r.id), this.opts.slowStartMs);
      const key = admissionKey(r.sessions.premium + r.sessions.freemium, r.weight, ramp);
      if (key < bestKey) {
        best = r;
        bestKey = key;
      }
    }
    return best;
  }
}
