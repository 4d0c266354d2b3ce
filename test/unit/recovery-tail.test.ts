// The recovery tail's window p95 (a quickselect) is the nearest-rank p95 a sort gives.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  recoveryTailS,
  TAIL_TOLERANCE,
  TAIL_WINDOW_MS,
  type QuerySeries,
} from '../../src/metrics/summary/recovery-tail.js';

/** The tail as first written: each window's latencies sorted. */
function sortedTail(ends: number[], lats: number[], refUs: number, rejoinMs: number, endMs: number) {
  for (let t = rejoinMs; t + TAIL_WINDOW_MS <= endMs; t += 1000) {
    const xs = lats.filter((_, i) => ends[i]! >= t && ends[i]! < t + TAIL_WINDOW_MS).sort((a, b) => a - b);
    const p = xs.length === 0 ? null : xs[Math.ceil(0.95 * xs.length) - 1]!;
    if (p !== null && p <= refUs * (1 + TAIL_TOLERANCE)) return Math.round((t - rejoinMs) / 100) / 10;
  }
  return null;
}

describe('recovery tail', () => {
  it('finds the window a sort of its latencies finds', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 60_000 }), fc.integer({ min: 0, max: 5000 })), {
          maxLength: 3000,
        }),
        fc.integer({ min: 1, max: 5000 }),
        fc.integer({ min: 0, max: 20_000 }),
        (qs, refUs, rejoinMs) => {
          // Queries in end-time order, latencies with many ties (as whole microseconds are).
          const sorted = [...qs].sort((a, b) => a[0] - b[0]);
          const ends = sorted.map((q) => q[0]);
          const lats = sorted.map((q) => q[1]);
          const q: QuerySeries = { length: ends.length, endMs: (i) => ends[i]!, latencyUs: (i) => lats[i]! };
          expect(recoveryTailS(q, refUs, rejoinMs, 60_000)).toBe(
            sortedTail(ends, lats, refUs, rejoinMs, 60_000),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});
