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
