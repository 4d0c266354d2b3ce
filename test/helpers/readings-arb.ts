// For the router's property tests: random readings (every key of READING_CHOICES, so a reading
// added to the router is drawn by every property test) and the router a scenario runs against.
import fc from 'fast-check';
import { READING_CHOICES } from '../../src/router/readings.js';
import { createRouter } from '../../src/router/index.js';
import type { BorrowingOptions, PlbReadings, RoleVector, Router } from '../../src/router/types.js';

type ReadingArbs = { [K in keyof PlbReadings]: fc.Arbitrary<PlbReadings[K]> };

/** One arbitrary per reading, to override some before fc.record (e.g. repair without 'none'). */
export const readingArbs = Object.fromEntries(
  Object.entries(READING_CHOICES).map(([k, values]) => [
    k,
    fc.constantFrom(...(values as readonly string[])),
  ]),
) as unknown as ReadingArbs;

export const readingsArb: fc.Arbitrary<PlbReadings> = fc.record(readingArbs);

/** What a property scenario says of the router it runs against. */
export interface PlbSetup {
  k: number;
  weights: readonly number[];
  slowStartMs: number;
  borrowing: BorrowingOptions | false | undefined;
  readings: Partial<PlbReadings>;
  reference: RoleVector;
}

/** The plb router of a scenario, its replicas named r1..rK; the ids with it. */
export function plbRouterOf(sc: PlbSetup): { router: Router; ids: string[] } {
  const ids = Array.from({ length: sc.k }, (_, i) => `r${i + 1}`);
  const router = createRouter({
    strategy: 'plb',
    replicas: ids.map((id, i) => ({ id, weight: sc.weights[i]! })),
    slowStartMs: sc.slowStartMs,
    borrowing: sc.borrowing,
    readings: sc.readings,
    reference: sc.reference,
  });
  return { router, ids };
}
