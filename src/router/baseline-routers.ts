// The baseline strategies: rr, static and lc/wlc (shared/reference/replica-load-balancing.txt).
import { GroupedLeastLoaded, NO_GROUP } from './least-loaded.js';
import { partitionFor } from './role-vector.js';
import { admissionKey, slowStartRamp } from './slow-start.js';
import { BaseRouter, type ReplicaState } from './base-router.js';
import type { Partition, RouterOptions } from './types.js';
import type { ServiceClass } from '../core/service-class.js';

// Module-local handles on the rules used per admission (cheaper than a cross-module binding per call).
const keyFn = admissionKey;
const rampFn = slowStartRamp;

/** Round robin over the healthy members of a fixed list, resuming after the last one chosen. */
class Rotation {
  private healthy: number[] = [];
  private pos = 0;
  private next = 0; // replica index the rotation resumes from

  constructor(private readonly members: number[]) {}

  /** A replica added at run time (down: rebuild() takes it in once healthy). */
  add(i: number): void {
    this.members.push(i);
  }

  rebuild(replicas: readonly ReplicaState[]): void {
    this.healthy = this.members.filter((i) => (replicas[i] as ReplicaState).healthy);
    const p = this.healthy.findIndex((i) => i >= this.next);
    this.pos = p < 0 ? 0 : p;
  }

  pick(): number {
    const n = this.healthy.length;
    if (n === 0) return -1;
    if (this.pos >= n) this.pos = 0;
    const i = this.healthy[this.pos] as number;
    this.pos += 1;
    this.next = i + 1;
    return i;
  }
}

/** rr: class-blind round robin over all healthy replicas ("5RR"). Every replica reports role mixed. */
export class RoundRobinRouter extends BaseRouter {
  private readonly rotation: Rotation;

  constructor(options: RouterOptions) {
    super('rr', options);
    this.rotation = new Rotation(this.replicas.map((r) => r.index));
    this.rotation.rebuild(this.replicas);
  }

  protected pick(): number {
    return this.rotation.pick();
  }
  protected sessionsChanged(): void {}
  protected onDown(): void {
    this.rotation.rebuild(this.replicas);
  }
  protected onUp(r: ReplicaState, nowMs: number): void {
    this.record(r, 'down', r.role, 'rejoin', nowMs);
    this.rotation.rebuild(this.replicas);
  }
  protected onAdd(r: ReplicaState): void {
    this.rotation.add(r.index);
  }
}

/** static: the first partition.premium replicas serve premium only, the rest freemium; round robin inside. */
export class StaticRouter extends BaseRouter {
  private readonly rotations: Record<ServiceClass, Rotation>;
  private readonly partition: Partition | undefined;

  constructor(options: RouterOptions) {
    super('static', options);
    this.partition = options.partition;
    const part = partitionFor(this.replicas.length, options.partition);
    const premium: number[] = [];
    const freemium: number[] = [];
    for (const r of this.replicas) {
      r.role = r.index < part.premium ? 'premium' : 'freemium';
      (r.role === 'premium' ? premium : freemium).push(r.index);
    }
    this.rotations = { premium: new Rotation(premium), freemium: new Rotation(freemium) };
    this.rebuild();
  }

  private rebuild(): void {
    this.rotations.premium.rebuild(this.replicas);
    this.rotations.freemium.rebuild(this.replicas);
  }

  protected pick(cls: ServiceClass): number {
    return this.rotations[cls].pick();
  }
  protected sessionsChanged(): void {}
  protected onDown(): void {
    this.rebuild();
  }
  protected onUp(r: ReplicaState, nowMs: number): void {
    this.record(r, 'down', r.role, 'rejoin', nowMs);
    this.rebuild();
  }
  /** The class the partition of the larger K gives one more replica; the others keep theirs. */
  protected onAdd(r: ReplicaState): void {
    const part = partitionFor(this.replicas.length, this.partition);
    const premium = this.replicas.filter((x) => x !== r && x.role === 'premium').length;
    r.role = part.premium > premium ? 'premium' : 'freemium';
    this.rotations[r.role === 'premium' ? 'premium' : 'freemium'].add(r.index);
  }
}

/** lc: least sessions (weights ignored, no slow start); wlc: sessions / (weight * slow-start ramp). */
export class LeastSessionsRouter extends BaseRouter {
  private readonly pool: GroupedLeastLoaded;
  private static readonly ALL = 0;

  constructor(
    strategy: 'lc' | 'wlc',
    options: RouterOptions,
    private readonly slowStartMs: number,
  ) {
    super(strategy, options);
    const weighted = strategy === 'wlc';
    const w = (i: number): number => (weighted ? (this.replicas[i] as ReplicaState).weight : 1);
    const total = (i: number): number => {
      const s = (this.replicas[i] as ReplicaState).sessions;
      return s.premium + s.freemium;
    };
    const ramp = (i: number, nowMs: number): number =>
      rampFn(nowMs, (this.replicas[i] as ReplicaState).upSinceMs, this.slowStartMs);
    this.pool = new GroupedLeastLoaded(
      this.replicas.length,
      1,
      (i, nowMs) => keyFn(total(i), w(i), ramp(i, nowMs)),
      (i, nowMs) => ramp(i, nowMs) < 1,
      (i) => keyFn(total(i), w(i), 1),
    );
    for (const r of this.replicas) this.pool.place(r.index, LeastSessionsRouter.ALL, 0);
  }

  protected pick(_cls: ServiceClass, nowMs: number): number {
    return this.pool.best(1 << LeastSessionsRouter.ALL, nowMs);
  }
  protected sessionsChanged(i: number): void {
    this.pool.changed(i);
  }
  protected onDown(r: ReplicaState, nowMs: number): void {
    this.pool.place(r.index, NO_GROUP, nowMs);
  }
  protected onUp(r: ReplicaState, nowMs: number): void {
    this.record(r, 'down', r.role, 'rejoin', nowMs);
    this.pool.place(r.index, LeastSessionsRouter.ALL, nowMs);
  }
  protected onAdd(): void {
    this.pool.grow(this.replicas.length);
  }
}
