import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { f32, f64 } from '../../src/metrics/store/columns.js';

describe('typed columns', () => {
  it('know when they are ascending, and bound a time range as a full scan would', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.integer({ min: 0, max: 50 }), fc.constant(Number.NaN)), { maxLength: 40 }),
        fc.boolean(),
        fc.integer({ min: -5, max: 55 }),
        fc.integer({ min: 0, max: 20 }),
        (raw, sort, lo, width) => {
          const values = sort ? raw.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b) : raw;
          const c = f64();
          for (const v of values) c.push(v);
          const ascending = values.every(
            (v, i) => !Number.isNaN(v) && (i === 0 || v >= (values[i - 1] as number)),
          );
          expect(c.ascending).toBe(ascending);
          const hi = lo + width;
          const scanned: number[] = [];
          for (let i = c.lowerBound(lo), end = c.upperLimit(hi); i < end; i++) {
            const v = c.get(i);
            if (v >= lo && v < hi) scanned.push(i);
          }
          const all = values.flatMap((v, i) => (v >= lo && v < hi ? [i] : []));
          expect(scanned).toEqual(all);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('judge a float32 column by the values it stores', () => {
    const c = f32();
    for (const v of [1, 1.0000001, 1.0000002, 2]) c.push(v);
    expect(c.ascending).toBe(true);
    c.push(1.5);
    expect(c.ascending).toBe(false);
    expect(c.lowerBound(1.2)).toBe(0);
    expect(c.upperLimit(1.2)).toBe(5);
  });
});
