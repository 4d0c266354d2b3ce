import { PlbError } from '../../core/errors.js';
import { AdmissionQueue } from './admission-queue.js';
import { FreeSlots, placeOf, type ReplicaView } from './admission-slots.js';
export { placeOf } from './admission-slots.js';
import { BaseRouter } from '../base-router.js';
import type { AdmissionOptions } from './admission-types.js';
import { SessionLimits } from './session-limits.js';
import { SloGuard } from './slo-guard.js';
import { admissionKey, slowStartRamp } from '../slow-start.js';
import type { ServiceClass } from '../../core/service-class.js';
import type { AddedReplica, Admission, ReplicaSnapshot, RoleChange, Router, StrategyName } from '../types.js';

/**
 * Priority admission around a router (plb-admit: plb inside; lc-queue: leastconn inside, the
 * HAProxy maxconn + queue baseline). The inner router still decides where a session goes (roles,
 * least loaded, borrowing); this decides when: a replica holds at most its session limit, an
 * arriving session that finds no slot on the replicas its class may use waits in the queue, and
 * the SLO guard shrinks freemium's caps while premium is above its target. Sessions never move once
 * admitted. Pure: time is passed in; the caller waits (workload/admission-wait.ts).
 */

export type RequestResult = Admission | 'queued' | 'full';

export interface Handout<T> {
  ticket: T;
  cls: ServiceClass;
  waitMs: number;
  /** Set when admitted; absent when the wait timed out, or its place went to another host's (full). */
  replica?: string;
  full?: boolean;
}

interface Waiting<T> {
  ticket: T;
  cls: ServiceClass;
}

/** The state admission exposes (metrics, tests). */
export interface AdmissionStats {
  queued: Record<ServiceClass, number>;
  guardLevel: number;
  premiumP95Ms: number | null;
  targetMs: number | undefined;
  limits: Record<string, number>;
}

export class AdmittingRouter<T = unknown> implements Router {
  readonly limits: SessionLimits;
  readonly guard: SloGuard | undefined;
  private readonly queue: AdmissionQueue<Waiting<T>>;
  private readonly byTicket = new Map<T, Waiting<T>>();
  private readonly upSince = new Map<string, number>();
  /** Waiting sessions per class as byTicket holds them (queued(cls) without a scan when class-blind). */
  private readonly waitingOf: Record<ServiceClass, number> = { premium: 0, freemium: 0 };
  /** The inner router's live state when it offers it: an admission reads one replica, not a snapshot of K. */
  private readonly live: BaseRouter | undefined;
  /** With live state: the replicas with a slot at full ramp, where the fallback search looks. */
  private readonly free: FreeSlots | undefined;
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
    this.live = inner instanceof BaseRouter ? inner : undefined;
    this.free = this.live ? new FreeSlots(this.live, this.limits) : undefined;
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
   * class with waiters queues behind them (source: its client's host, which the queue takes in turn).
   */
  request(cls: ServiceClass, ticket: T, nowMs: number, source?: string): RequestResult {
    this.tick(nowMs);
    // Class-blind: one queue for both classes.
    const qcls = this.opts.classBlind ? 'premium' : cls;
    if (this.queue.size(qcls) === 0) {
      const a = this.place(cls, nowMs);
      if (a) {
        this.queue.admitted(qcls, source);
        return a;
      }
    }
    const w: Waiting<T> = { ticket, cls };
    if (!this.queue.push(qcls, w, nowMs, source)) return 'full';
    this.forget(ticket);
    this.byTicket.set(ticket, w);
    this.waitingOf[cls]++;
    return 'queued';
  }

  /** A waiting session left; false when it was not waiting. */
  cancel(ticket: T): boolean {
    const w = this.forget(ticket);
    if (!w) return false;
    return this.queue.remove(w);
  }

  /** Drops ticket from byTicket (and its class count); the entry it had, if any. */
  private forget(ticket: T): Waiting<T> | undefined {
    const w = this.byTicket.get(ticket);
    if (!w) return undefined;
    this.byTicket.delete(ticket);
    this.waitingOf[w.cls]--;
    return w;
  }

  /**
   * Times out the waiters past their deadline, then admits waiters while slots are free
   * (premium first, client hosts in turn within a class). Call after a release, a markUp, and at nextWakeMs().
   */
  pump(nowMs: number): Handout<T>[] {
    this.tick(nowMs);
    const out: Handout<T>[] = [];
    for (const e of this.queue.expire(nowMs)) {
      this.forget(e.item.ticket);
      out.push({ ticket: e.item.ticket, cls: e.item.cls, waitMs: e.waitMs });
    }
    for (const e of this.queue.takeDropped()) {
      this.forget(e.item.ticket);
      out.push({ ticket: e.item.ticket, cls: e.item.cls, waitMs: e.waitMs, full: true });
    }
    const placed = new Map<Waiting<T>, string>();
    for (const e of this.queue.drain(nowMs, (_q, w) => {
      const a = this.place(w.cls, nowMs);
      if (a) placed.set(w, a.replica);
      return a !== undefined;
    })) {
      this.forget(e.item.ticket);
      const replica = placed.get(e.item) as string;
      out.push({ ticket: e.item.ticket, cls: e.item.cls, waitMs: e.waitMs, replica });
    }
    return out;
  }

  /** A waiter gave its place to another host's (the queue full): pump() refuses it. */
  dropped(): boolean {
    return this.queue.hasDropped();
  }

  /** When pump() should next run with nobody releasing: the next deadline, or intervalMs while sessions wait. */
  nextWakeMs(nowMs: number, intervalMs = 250): number | undefined {
    const d = this.queue.nextDeadline();
    if (d === undefined) return undefined;
    return Math.min(d, nowMs + intervalMs);
  }

  queued(cls?: ServiceClass): number {
    if (cls === undefined || !this.opts.classBlind) return this.queue.size(cls);
    return this.waitingOf[cls];
  }

  /** A completed query's latency: the guard's premium window and the gradient limits. */
  observe(cls: ServiceClass, replica: string, latencyMs: number, nowMs: number): void {
    this.guard?.observe(cls, latencyMs, nowMs);
    this.limits.observe(replica, latencyMs);
  }

  release(replica: string, cls: ServiceClass, nowMs: number): boolean {
    const done = this.inner.release(replica, cls, nowMs);
    this.touch(replica);
    return done;
  }

  /**
   * The `replica` view: the replica's per-class counts (every router's sessions) become the inner
   * router's, so limits, reserves and the guard's caps judge its whole load; this router's own
   * admissions and releases count on from there. Slots freed reach waiters at the next pump.
   */
  observeSessions(replica: string, counts: { premium: number; freemium: number }, nowMs: number): void {
    if (!this.inner.observeSessions)
      throw new PlbError('INTERNAL', `strategy ${this.inner.strategy} takes no counts read elsewhere`);
    this.inner.observeSessions(replica, counts, nowMs);
    this.touch(replica);
  }

  /** Replica's own session limit (before weight and slow start); waiters get new slots at the next pump. */
  setLimit(replica: string, limit: number): void {
    this.limits.setBase(replica, limit);
    this.touch(replica);
  }

  /** Router.addReplica: the new replica starts with the limit every replica starts with. */
  addReplica(spec: AddedReplica, nowMs: number): void {
    this.inner.addReplica(spec, nowMs);
    this.limits.add(spec.id);
    this.free?.grow();
  }

  markDown(replica: string, nowMs: number): void {
    if (!this.anyDown) this.guard?.freezeReference(nowMs);
    this.anyDown = true;
    this.inner.markDown(replica, nowMs);
  }

  markUp(replica: string, nowMs: number): void {
    const was = this.view(replica)?.healthy;
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
    this.touch(replica);
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
  limitOf(r: Pick<ReplicaView, 'id' | 'weight'>, nowMs: number): number {
    const ramp = slowStartRamp(nowMs, this.upSince.get(r.id), this.opts.slowStartMs);
    return this.limits.effective(r.id, r.weight, ramp);
  }

  /**
   * May a cls session go to r now? overflow: r may also be a replica of the other class's role
   * that cls has not borrowed (the caller found every replica of its own full), as borrowed.
   */
  fits(r: ReplicaView, cls: ServiceClass, nowMs: number, overflow = false): boolean {
    return this.fitsWith(r, r.sessions.premium, r.sessions.freemium, cls, nowMs, overflow);
  }

  /** fits, judging r as if it held premium and freemium sessions (its count before an admission). */
  private fitsWith(
    r: ReplicaView,
    premium: number,
    freemium: number,
    cls: ServiceClass,
    nowMs: number,
    overflow: boolean,
  ): boolean {
    if (!r.healthy) return false;
    const place = placeOf(r, cls) ?? (overflow && r.borrowedBy === undefined ? 'borrowed' : undefined);
    if (place === undefined) return false;
    const limit = this.limitOf(r, nowMs);
    const total = premium + freemium;
    if (total >= limit) return false;
    if (this.opts.classBlind) return true;
    // The other class's own replica: leave it the slots it keeps for itself.
    const other: ServiceClass = cls === 'premium' ? 'freemium' : 'premium';
    if (r.role === other && total >= limit - Math.ceil(this.reserveShare(other) * limit)) return false;
    if (cls === 'premium' || !this.guard) return true;
    return freemium < this.guard.freemiumCap(place, limit);
  }

  /** The share of a cls replica's limit the other class may not take. */
  private reserveShare(cls: ServiceClass): number {
    return (cls === 'premium' ? this.opts.premiumReserve : this.opts.freemiumReserve) ?? 0;
  }

  private tick(nowMs: number): void {
    this.guard?.update(nowMs);
    if (this.opts.limits.mode === 'gradient') {
      // Read only when an interval has passed: the counts are the same at any point of this call.
      let totals: Map<string, number> | undefined;
      const moved = this.limits.update(nowMs, (id) => {
        if (this.live) {
          const r = this.view(id);
          return r ? r.sessions.premium + r.sessions.freemium : 0;
        }
        totals ??= new Map(
          this.inner.snapshot().map((r) => [r.id, r.sessions.premium + r.sessions.freemium]),
        );
        return totals.get(id) ?? 0;
      });
      if (moved) this.free?.touchAll();
    }
  }

  /** Replica's count, weight or limit changed: keep the free-slot set in step. */
  private touch(replica: string): void {
    if (!this.free || !this.live) return;
    const i = this.live.indexOf(replica);
    if (i !== undefined) this.free.touch(i);
  }

  /** One replica as the inner router has it now (its live state, or a snapshot's entry). */
  private view(replica: string): ReplicaView | undefined {
    const live = this.live;
    if (!live) return this.inner.snapshot().find((r) => r.id === replica);
    const i = live.indexOf(replica);
    return i === undefined ? undefined : live.liveReplicas()[i];
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
    // The replicas as they are after the inner admission: live (nothing copied) or a snapshot.
    const live = this.live;
    const snap: readonly ReplicaView[] = live ? live.liveReplicas() : this.inner.snapshot();
    const at = live ? (live.indexOf(first.replica) as number) : snap.findIndex((r) => r.id === first.replica);
    this.free?.touch(at);
    const chosen = snap[at] as ReplicaView;
    // Judge the choice as it was before this session was counted.
    const premium = chosen.sessions.premium - (cls === 'premium' ? 1 : 0);
    const freemium = chosen.sessions.freemium - (cls === 'freemium' ? 1 : 0);
    if (this.fitsWith(chosen, premium, freemium, cls, nowMs, false)) return first;
    // Only the chosen replica's count moves here, and the scans below skip it.
    this.inner.release(first.replica, cls, nowMs);
    this.free?.touch(at);
    // The replicas cls may use first; then, with all of them full, the other role's replicas
    // with room (a full replica is the strongest pressure there is: borrowing by limits).
    const best =
      this.leastLoaded(snap, at, cls, nowMs, false) ?? this.leastLoaded(snap, at, cls, nowMs, true);
    if (!best || !this.inner.assign) return undefined;
    const a = this.inner.assign(best.id, cls, nowMs);
    this.touch(best.id);
    return a;
  }

  private leastLoaded(
    snap: readonly ReplicaView[],
    skip: number,
    cls: ServiceClass,
    nowMs: number,
    overflow: boolean,
  ): ReplicaView | undefined {
    // Only a replica with a slot at full ramp can fit: with live state, look at those alone.
    const among = this.free?.members();
    const n = among ? among.length : snap.length;
    let best = -1;
    let bestKey = Infinity;
    for (let k = 0; k < n; k++) {
      const i = among ? (among[k] as number) : k;
      const r = snap[i] as ReplicaView;
      if (i === skip || !this.fits(r, cls, nowMs, overflow)) continue;
      const ramp = slowStartRamp(nowMs, this.upSince.get(r.id), this.opts.slowStartMs);
      const key = admissionKey(r.sessions.premium + r.sessions.freemium, r.weight, ramp);
      // Ties go to the lowest index, whatever order the candidates come in.
      if (key < bestKey || (key === bestKey && i < best)) {
        best = i;
        bestKey = key;
      }
    }
    return best < 0 ? undefined : snap[best];
  }
}
