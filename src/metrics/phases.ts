import type { Phase } from './types.js';

// Phases are computed where fault actions are mapped (faults/actions.ts); metrics bins samples into them.

/** Index of the phase containing tMs (start inclusive, end exclusive), -1 when none. */
export function phaseIndexAt(phases: readonly Phase[], tMs: number): number {
  let lo = 0;
  let hi = phases.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const p = phases[mid];
    if (p === undefined) return -1;
    if (tMs < p.startMs) hi = mid - 1;
    else if (tMs >= p.endMs) lo = mid + 1;
    else return mid;
  }
  return -1;
}
