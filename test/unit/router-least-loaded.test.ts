import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GroupedLeastLoaded, NO_GROUP } from '../../src/router/least-loaded.js';

// The grouped heaps against plain scans: least (key, index) over a group mask, greatest key (ties to
// the lowest index) over a max-heap group, after any sequence of moves and key changes.
type Op = { t: 'place'; i: number; g: number } | { t: 'add'; i: number } | { t: 'sub'; i: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ t: fc.constant('place' as const), i: fc.nat(39), g: fc.integer({ min: -1, max: 2 }) }),
  fc.record({ t: fc.constant('add' as const), i: fc.nat(39) }),
  fc.record({ t: fc.constant('sub' as const), i: fc.nat(39) }),
);

describe('GroupedLeastLoaded', () => {
  it('best and worstWarm match plain scans', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.array(opArb, { minLength: 1, maxLength: 300 }),
        (size, ops) => {
          const sessions = new Array<number>(size).fill(0);
          const weight = Array.from({ length: size }, (_, i) => 1 + (i % 3));
          const group = new Array<number>(size).fill(NO_GROUP);
          const warm = (i: number): number => ((sessions[i] as number) + 1) / (weight[i] as number);
          const pool = new GroupedLeastLoaded(size, 3, warm, () => false, warm, [2]);
          for (const op of ops) {
            const i = op.i % size;
            if (op.t === 'place') {
              pool.place(i, op.g, 0);
              group[i] = op.g;
            } else if (op.t === 'add') {
              sessions[i] = (sessions[i] as number) + 1;
              pool.raised(i, warm(i));
            } else if ((sessions[i] as number) > 0) {
              sessions[i] = (sessions[i] as number) - 1;
              pool.lowered(i, warm(i));
            }
            for (const mask of [1, 2, 4, 3, 5, 6, 7]) {
              let best = -1;
              for (let j = 0; j < size; j++) {
                const g = group[j] as number;
                if (g === NO_GROUP || ((mask >> g) & 1) === 0) continue;
                if (best < 0 || warm(j) < warm(best)) best = j;
              }
              expect(pool.best(mask, 0)).toBe(best);
            }
            let worst = -1;
            for (let j = 0; j < size; j++) {
              if (group[j] === 2 && (worst < 0 || warm(j) > warm(worst))) worst = j;
            }
            expect(pool.worstWarm(2)).toBe(worst);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
