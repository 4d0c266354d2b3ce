// Paired comparisons over repeats: each repeat runs every path back to back, so a path's figure
// minus another's in the same repeat cancels the machine's drift between repeats (which, on two
// shared cores, is larger than most differences between proxies). The mean over repeats and its
// 95 % t-interval are the report's own (`overRuns` in src/report/evidence/evidence.ts: at least 3 repeats,
// else no value); this file formats and reads them.
import type { Estimate } from '../../src/run-format/evidence.js';

/** Element-wise a[i] op b[i] (the same repeat). */
export function pairwise(
  a: readonly number[],
  b: readonly number[],
  op: (x: number, y: number) => number,
): number[] {
  return a.slice(0, Math.min(a.length, b.length)).map((x, i) => op(x, b[i] as number));
}

/** "0.55 [0.41, 0.69]"; '?' where there is no value (fewer than 3 repeats). */
export function formatInterval(e: Estimate, digits: number): string {
  const f = (x: number | null): string => (x === null ? '?' : x.toFixed(digits));
  return `${f(e.value)} [${f(e.lo)}, ${f(e.hi)}]`;
}

/** Where a difference's interval lies against 0: below, above, or across (not told apart). */
export function side(e: Estimate): 'lower' | 'higher' | 'not distinguishable' {
  if (e.hi !== null && e.hi < 0) return 'lower';
  if (e.lo !== null && e.lo > 0) return 'higher';
  return 'not distinguishable';
}
