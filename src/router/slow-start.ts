/**
 * Default slow-start window: a rejoining replica reaches full weight 10 s after markUp. Sized for
 * the bench's phases (the default demo plan's rejoin phases last 15 s; with a longer ramp a
 * rejoin phase would measure only the ramp). The `plb bench --slow-start` flag reads this value.
 * Production balancers ramp for about as long as a cold cache takes to warm (HAProxy users often
 * give 60 s): pass slowStartMs.
 */
export const DEFAULT_SLOW_START_MS = 10_000;
/** The smallest ramp, so a just-rejoined replica is dear but not infinitely so. */
export const MIN_RAMP = 0.01;

/**
 * The slow-start ramp in [MIN_RAMP, 1]: linear from markUp (`upSinceMs`) to `upSinceMs + slowStartMs`.
 * Replicas present from the start (upSinceMs undefined) and slowStartMs <= 0 give 1.
 */
export function slowStartRamp(nowMs: number, upSinceMs: number | undefined, slowStartMs: number): number {
  if (upSinceMs === undefined || !(slowStartMs > 0)) return 1;
  const elapsed = nowMs - upSinceMs;
  if (elapsed >= slowStartMs) return 1;
  return Math.max(MIN_RAMP, elapsed / slowStartMs);
}

/**
 * The load a replica would have with one more session: (sessions + 1) / (weight * ramp). Counting
 * the new session is what makes the ramp bite on an empty replica (HAProxy's leastconn does the same);
 * plain sessions / (weight * ramp) would rank an empty, cold replica first whatever its ramp.
 */
export function admissionKey(sessions: number, weight: number, ramp: number): number {
  return (sessions + 1) / (weight * ramp);
}

/** Current load for repair's least-loaded donor: sessions per unit of weight (no ramp: nothing is admitted). */
export function replicaLoad(sessions: number, weight: number): number {
  return sessions / weight;
}
