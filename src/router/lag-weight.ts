/**
 * Lag-derived weights (reference: replica-load-balancing, "lag-derived dynamic weight"): a
 * replica keeps its full weight while its replication lag is below `lowMs`, loses weight linearly
 * down to `floor` at `highMs`, and is drained (no new sessions) above it. Gradual, not binary:
 * the floor keeps a trickle of traffic so a recovering replica is still seen to recover, and
 * draining is the backstop. Pure: the caller measures the lag and applies the factor.
 */

export interface LagWeightOptions {
  /** Full weight at or below this lag, ms. */
  lowMs: number;
  /** Drained above this lag, ms; `floor` just below it. */
  highMs: number;
  /** The smallest factor before draining, in (0, 1]. */
  floor: number;
}

export const DEFAULT_LAG_WEIGHTS: Readonly<LagWeightOptions> = Object.freeze({
  lowMs: 200,
  highMs: 800,
  floor: 0.1,
});

/**
 * The factor to multiply a replica's static weight by: 1 up to lowMs, linear to `floor` at
 * highMs, 0 (drained) above. An unknown lag (null: the standby did not answer) leaves the weight
 * alone: whether the replica is up is the health checker's call, not this one's.
 */
export function lagWeight(lagMs: number | null, o: LagWeightOptions = DEFAULT_LAG_WEIGHTS): number {
  if (lagMs === null || !Number.isFinite(lagMs) || lagMs <= o.lowMs) return 1;
  if (lagMs > o.highMs) return 0;
  const f = (o.highMs - lagMs) / (o.highMs - o.lowMs);
  return Math.max(o.floor, f);
}

/**
 * A drained replica keeps this weight instead of 0 (the router takes weights > 0): it gets a
 * session only when no other replica may take it, so draining never becomes an outage.
 */
export const DRAINED_WEIGHT = 0.001;

/**
 * A replica's router weight = its static weight (plan `weights:`, `--weights`, a throttle's
 * `weight:`) x its lag factor (`--lag-weights` or `--max-lag`); a factor of 0 drains it.
 */
export class ReplicaWeights {
  private readonly base = new Map<string, number>();
  private readonly factor = new Map<string, number>();

  constructor(
    private readonly router: { setWeight?(replica: string, weight: number): void },
    initial: Readonly<Record<string, number>> = {},
  ) {
    for (const [id, w] of Object.entries(initial)) this.base.set(id, w);
  }

  /** The weight the router has for `replica`. */
  weightOf(replica: string): number {
    const f = this.factor.get(replica) ?? 1;
    return f > 0 ? (this.base.get(replica) ?? 1) * f : DRAINED_WEIGHT;
  }

  setBase(replica: string, weight: number): void {
    this.base.set(replica, weight);
    this.router.setWeight?.(replica, this.weightOf(replica));
  }

  /** False (and nothing told) when the factor is what it was. */
  setFactor(replica: string, f: number): boolean {
    if ((this.factor.get(replica) ?? 1) === f) return false;
    this.factor.set(replica, f);
    this.router.setWeight?.(replica, this.weightOf(replica));
    return true;
  }
}
