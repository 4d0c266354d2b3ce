// Random readings for the router's property tests: every key of READING_CHOICES, so a reading added
// to the router is drawn by every property test without touching them.
import fc from 'fast-check';
import { READING_CHOICES } from '../../src/router/readings.js';
import type { PlbReadings } from '../../src/router/types.js';

type ReadingArbs = { [K in keyof PlbReadings]: fc.Arbitrary<PlbReadings[K]> };

/** One arbitrary per reading, to override some before fc.record (e.g. repair without 'none'). */
export const readingArbs = Object.fromEntries(
  Object.entries(READING_CHOICES).map(([k, values]) => [
    k,
    fc.constantFrom(...(values as readonly string[])),
  ]),
) as unknown as ReadingArbs;

export const readingsArb: fc.Arbitrary<PlbReadings> = fc.record(readingArbs);
