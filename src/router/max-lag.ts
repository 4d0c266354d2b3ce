/**
 * ProxySQL-style lag eviction (`max_replication_lag`; `--max-lag`): a replica whose measured lag
 * exceeds the budget takes no new sessions until it is back under it. Binary and late where the
 * lag-derived weights (lag-weight.ts) are gradual and early; the guide's backstop. Pure: the
 * caller measures the lag and applies the factor as lag-weight's.
 */
import { PlbError } from '../core/errors.js';

/** 1 (full weight) at or under the budget, 0 (evicted) above it; an unknown lag (null) keeps 1. */
export function maxLagFactor(lagMs: number | null, maxLagMs: number): number {
  if (lagMs === null || !Number.isFinite(lagMs)) return 1;
  return lagMs > maxLagMs ? 0 : 1;
}

/** `1s`, `500ms` -> ms (> 0). */
export function parseMaxLag(text: string, field = '--max-lag'): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*$/.exec(text);
  const v = m ? Number(m[1]) * (m[2] === 's' ? 1000 : 1) : Number.NaN;
  if (!(v > 0))
    throw new PlbError('BAD_INPUT', `${field}: expected a lag > 0 like 1s or 500ms (got "${text}")`);
  return v;
}
