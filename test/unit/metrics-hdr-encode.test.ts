import fc from 'fast-check';
import * as hdr from 'hdr-histogram-js';
import { describe, expect, it } from 'vitest';
import {
  addHistogram,
  recordValue,
  valueAtPercentile,
  valuesAtPercentiles,
} from '../../src/metrics/hdr/counts.js';
import { encodeCompressedBase64, intervalLogLine } from '../../src/metrics/hdr/encode.js';
import { newLatencyHistogram } from '../../src/metrics/hdr/histogram.js';
import { newLifetimeHistogram } from '../../src/metrics/store/seconds.js';

const libraryLine = (h: hdr.Histogram, start: number, end: number, ratio: number): string => {
  let out = '';
  new hdr.HistogramLogWriter((s) => {
    out += s;
  }).outputIntervalHistogram(h, start, end, ratio);
  return out;
};

// Values spread over the whole range (a few very large ones), counts up to huge.
const value = fc.oneof(fc.integer({ min: 0, max: 2000 }), fc.integer({ min: 0, max: 60_000_000 }));
const recorded = fc.array(fc.tuple(value, fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 2 ** 40 }))), {
  maxLength: 60,
});

/** The same bytes when encoded, and the same total, least and greatest value. */
const expectSame = (mine: hdr.Histogram, lib: hdr.Histogram): void => {
  expect(encodeCompressedBase64(mine)).toBe(encodeCompressedBase64(lib));
  expect([mine.totalCount, mine.minNonZeroValue, mine.maxValue]).toEqual([
    lib.totalCount,
    lib.minNonZeroValue,
    lib.maxValue,
  ]);
};

describe('hdr-encode: the compressed histograms a run writes', () => {
  it('encodes as hdr-histogram-js does, byte for byte (latency and lifetime histograms)', () => {
    fc.assert(
      fc.property(recorded, fc.boolean(), (values, lifetime) => {
        const h = lifetime ? newLifetimeHistogram() : newLatencyHistogram();
        for (const [v, n] of values) h.recordValueWithCount(Math.min(v, h.highestTrackableValue), n);
        expect(encodeCompressedBase64(h)).toBe(hdr.encodeIntoCompressedBase64(h));
        // Twice: the second may come from the memo.
        expect(encodeCompressedBase64(h)).toBe(hdr.encodeIntoCompressedBase64(h));
      }),
      { numRuns: 500 },
    );
  });

  it('writes interval lines as HistogramLogWriter does, tagged or not', () => {
    fc.assert(
      fc.property(
        recorded,
        fc.integer({ min: 0, max: 100_000 }),
        fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 5000 })),
        fc.constantFrom(1, 1000),
        fc.constantFrom('NO TAG', '', 'premium.ref'),
        (values, start, len, ratio, tag) => {
          const h = newLatencyHistogram();
          for (const [v, n] of values) h.recordValueWithCount(v, n);
          h.tag = tag;
          const [s, e] = [start / 10, (start + len) / 10];
          expect(intervalLogLine(h, s, e, ratio)).toBe(libraryLine(h, s, e, ratio));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('finds percentiles as getValueAtPercentile does, value for value', () => {
    fc.assert(
      fc.property(
        recorded,
        fc.boolean(),
        fc.oneof(
          fc.constantFrom(0, 50, 95, 99, 99.9, 100, 120),
          fc.double({ min: 0, max: 100, noNaN: true }),
        ),
        (values, lifetime, p) => {
          const h = lifetime ? newLifetimeHistogram() : newLatencyHistogram();
          for (const [v, n] of values) h.recordValueWithCount(Math.min(v, h.highestTrackableValue), n);
          expect(valueAtPercentile(h, p)).toBe(h.getValueAtPercentile(p));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('finds them in a histogram reused after reset and in one made by add (the walk starts at the least value)', () => {
    fc.assert(
      fc.property(recorded, recorded, fc.double({ min: 0, max: 100, noNaN: true }), (a, b, p) => {
        const h = newLatencyHistogram();
        for (const [v, n] of b) h.recordValueWithCount(Math.min(v, h.highestTrackableValue), n);
        h.reset();
        for (const [v, n] of a) h.recordValueWithCount(Math.min(v, h.highestTrackableValue), n);
        expect(valueAtPercentile(h, p)).toBe(h.getValueAtPercentile(p));
        const other = newLatencyHistogram();
        for (const [v, n] of b) other.recordValueWithCount(Math.min(v, other.highestTrackableValue), n);
        h.add(other);
        expect(valueAtPercentile(h, p)).toBe(h.getValueAtPercentile(p));
      }),
      { numRuns: 500 },
    );
  });

  it('records as recordValue does: the same counts, min, max and total, and the same throw', () => {
    const v = fc.oneof(
      fc.integer({ min: 0, max: 2100 }),
      fc.integer({ min: 0, max: 90_000_000 }),
      fc.constantFrom(0, 1, 1023, 1024, 2047, 2048, 2 ** 20 - 1, 2 ** 20, 60_000_000, 60_000_001, 2 ** 31),
      fc.double({ min: 0, max: 100_000, noNaN: true }),
    );
    fc.assert(
      fc.property(fc.array(v, { maxLength: 200 }), fc.boolean(), (values, lifetime) => {
        const mine = lifetime ? newLifetimeHistogram() : newLatencyHistogram();
        const lib = lifetime ? newLifetimeHistogram() : newLatencyHistogram();
        for (const x of values) {
          let thrown: unknown = null;
          try {
            lib.recordValue(x);
          } catch (err) {
            thrown = err;
          }
          if (thrown === null) recordValue(mine, x);
          else expect(() => recordValue(mine, x)).toThrow((thrown as Error).message);
        }
        expectSame(mine, lib);
      }),
      { numRuns: 500 },
    );
  });

  it('finds several percentiles in one walk, each as getValueAtPercentile does', () => {
    const p = fc.oneof(
      fc.constantFrom(0, 50, 95, 99, 100, 120),
      fc.double({ min: 0, max: 100, noNaN: true }),
    );
    fc.assert(
      fc.property(recorded, fc.array(p, { maxLength: 6 }), (values, ps) => {
        const h = newLatencyHistogram();
        for (const [v, n] of values) h.recordValueWithCount(Math.min(v, h.highestTrackableValue), n);
        expect(valuesAtPercentiles(h, ps)).toEqual(ps.map((x) => h.getValueAtPercentile(x)));
      }),
      { numRuns: 1000 },
    );
  });

  it('adds as add does: the same counts, min, max and total', () => {
    fc.assert(
      fc.property(recorded, recorded, recorded, (a, b, c) => {
        const fill = (h: hdr.Histogram, values: [number, number][]): hdr.Histogram => {
          for (const [v, n] of values) h.recordValueWithCount(Math.min(v, h.highestTrackableValue), n);
          return h;
        };
        const mine = fill(newLatencyHistogram(), a);
        const lib = fill(newLatencyHistogram(), a);
        // Twice: into a histogram that already holds some (or nothing), then once more.
        for (const more of [b, c]) {
          addHistogram(mine, fill(newLatencyHistogram(), more));
          lib.add(fill(newLatencyHistogram(), more));
          expectSame(mine, lib);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('decodes back to the same histogram', () => {
    const h = newLatencyHistogram();
    for (const v of [1, 2, 3, 150, 150, 99_999, 59_000_000]) h.recordValue(v);
    const back = hdr.decodeFromCompressedBase64(encodeCompressedBase64(h));
    expect(back.totalCount).toBe(7);
    expect(back.getValueAtPercentile(50)).toBe(h.getValueAtPercentile(50));
    expect(back.getValueAtPercentile(99)).toBe(h.getValueAtPercentile(99));
  });
});
