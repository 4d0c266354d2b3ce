/**
 * ProxySQL-style lag eviction (`max_replication_lag`; `--max-lag`): a replica whose measured lag
 * exceeds the budget takes no new sessions until it is back under it. Binary and late where the
 * lag-derived weights (lag-weight.ts) are gradual and early; the guide's backstop. Pure: the
 * caller measures the lag and applies the factor as lag-weight's.
 */

/** 1 (full weight) at or under the budget, 0 (evicted) above it; an unknown lag (null) keeps 1. */
export function maxLagFactor(lagMs: number | null, maxLagMs: number): number {
  if (lagMs === null || !Number.isFinite(lagMs)) return 1;
  return lagMs > maxLagMs ? 0 : 1;
}
