import type { BaseRouter } from '../base-router.js';
import type { SessionLimits } from './session-limits.js';
import type { Place } from './slo-guard.js';
import type { ReplicaSnapshot } from '../types.js';
import type { ServiceClass } from '../../core/service-class.js';

/** What admission reads of a replica: a snapshot's entry, or the inner router's live state. */
export interface ReplicaView {
  readonly id: string;
  readonly healthy: boolean;
  readonly role: ReplicaSnapshot['role'];
  readonly borrowedBy?: ServiceClass | undefined;
  readonly weight: number;
  readonly sessions: { readonly premium: number; readonly freemium: number };
}

/**
 * The replicas with a free session slot at full ramp: open sessions below max(1, floor(limit x
 * weight)). Slow start only lowers a limit, so a replica outside this set has no slot at any ramp,
 * and admission's fallback search (the inner router's choice was full) need look only inside it:
 * under saturation a handful of replicas rather than all K. Kept in step by touch() after every
 * change of a replica's count or weight, and touchAll() when the limits move.
 */
export class FreeSlots {
  /** Members, in no order; pos[i] is i's place in it, or -1. */
  private readonly list: number[] = [];
  private pos: Int32Array;

  constructor(
    private readonly router: BaseRouter,
    private readonly limits: SessionLimits,
  ) {
    this.pos = new Int32Array(router.liveReplicas().length).fill(-1);
    this.touchAll();
  }

  /** The members (read only; changes with the next touch). */
  members(): readonly number[] {
    return this.list;
  }

  /** Replica i's count, weight or limit changed. */
  touch(i: number): void {
    const r = this.router.liveReplicas()[i];
    if (r === undefined) return;
    const free = r.sessions.premium + r.sessions.freemium < this.limits.effective(r.id, r.weight, 1);
    const p = this.pos[i] as number;
    if (free && p < 0) {
      this.pos[i] = this.list.length;
      this.list.push(i);
    } else if (!free && p >= 0) {
      const last = this.list.pop() as number;
      if (last !== i) {
        this.list[p] = last;
        this.pos[last] = p;
      }
      this.pos[i] = -1;
    }
  }

  /** The router has more replicas (added at run time): room for them, each judged at once. */
  grow(): void {
    const n = this.router.liveReplicas().length;
    if (n <= this.pos.length) return;
    const pos = new Int32Array(n).fill(-1);
    pos.set(this.pos);
    const from = this.pos.length;
    this.pos = pos;
    for (let i = from; i < n; i++) this.touch(i);
  }

  touchAll(): void {
    for (let i = 0; i < this.pos.length; i++) this.touch(i);
  }
}

/** Where a cls session on r would sit: its own role, shared (mixed), borrowed, or not allowed. */
export function placeOf(
  r: Pick<ReplicaSnapshot, 'role' | 'borrowedBy'>,
  cls: ServiceClass,
): Place | undefined {
  if (r.role === 'mixed') return 'shared';
  if (r.role === cls) return 'own';
  return r.borrowedBy === cls ? 'borrowed' : undefined;
}
