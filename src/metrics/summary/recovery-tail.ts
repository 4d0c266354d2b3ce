import type { ServiceClass } from '../../core/service-class.js';
import type { Phase } from '../types.js';

/** The window a class's p95 is judged over after a rejoin, and the tolerance against its ref. */
export const TAIL_WINDOW_MS = 10_000;
export const TAIL_TOLERANCE = 0.1;

/** The recovery tail of one rejoin: seconds until each class's p95 is back within 10 % of its ref. */
export interface RecoveryTail {
  /** The rejoin phase (rejoin-1, ...). */
  phase: string;
  atS: number;
  /** null: not back before the end of the run. */
  premiumS: number | null;
  freemiumS: number | null;
}

/** The queries of a class in time order: end times (ms) and latencies (us). */
export interface QuerySeries {
  length: number;
  endMs(i: number): number;
  latencyUs(i: number): number;
}

function firstAtOrAfter(q: QuerySeries, t: number): number {
  let lo = 0;
  let hi = q.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (q.endMs(mid) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The window's latencies, reused: a tail looks at up to a few hundred windows of a run. */
let window = new Float64Array(4096);

/** The k-th smallest (0-based) of xs[0, n): quickselect, the value a sort would put at k. */
function kthSmallest(xs: Float64Array, n: number, k: number): number {
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    const pivot = xs[(lo + hi) >>> 1]!;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (xs[i]! < pivot) i++;
      while (xs[j]! > pivot) j--;
      if (i <= j) {
        const t = xs[i]!;
        xs[i++] = xs[j]!;
        xs[j--] = t;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return xs[k]!;
}

function p95Us(q: QuerySeries, from: number, to: number): number | null {
  let n = 0;
  for (let i = firstAtOrAfter(q, from); i < q.length && q.endMs(i) < to; i++) {
    if (n === window.length) {
      const grown = new Float64Array(2 * n);
      grown.set(window);
      window = grown;
    }
    window[n++] = q.latencyUs(i);
  }
  if (n === 0) return null;
  return kthSmallest(window, n, Math.ceil(0.95 * n) - 1);
}

/**
 * The time from a rejoin until the class's p95 over a sliding 10 s window (1 s steps) is first
 * within 10 % of its p95 in ref: 0 when the first window already is; null when no window starting
 * before endMs - 10 s is. The paper's "recovery tail": roles are repaired at once, work drains later.
 */
export function recoveryTailS(
  q: QuerySeries,
  refP95Us: number,
  rejoinMs: number,
  endMs: number,
): number | null {
  if (!(refP95Us > 0)) return null;
  for (let t = rejoinMs; t + TAIL_WINDOW_MS <= endMs; t += 1000) {
    const p = p95Us(q, t, t + TAIL_WINDOW_MS);
    if (p !== null && p <= refP95Us * (1 + TAIL_TOLERANCE)) return Math.round((t - rejoinMs) / 100) / 10;
  }
  return null;
}

/** Every recovery phase's tail (a rejoin's: its kind is the registry's), both classes. */
export function recoveryTails(
  series: Record<ServiceClass, QuerySeries>,
  phases: readonly Phase[],
  refP95Ms: Record<ServiceClass, number | null>,
  endMs: number,
): RecoveryTail[] {
  const out: RecoveryTail[] = [];
  for (const ph of phases) {
    if (ph.kind !== 'recovery') continue;
    const tail = (cls: ServiceClass): number | null => {
      const ref = refP95Ms[cls];
      return ref === null ? null : recoveryTailS(series[cls], ref * 1000, ph.startMs, endMs);
    };
    out.push({
      phase: ph.name,
      atS: ph.startMs / 1000,
      premiumS: tail('premium'),
      freemiumS: tail('freemium'),
    });
  }
  return out;
}
