import { describe, expect, it } from 'vitest';
import { agreement, type Evidence } from '../../benchmarks/sim-vs-real-verdicts.js';
import type { Change } from '../../src/run-format/evidence.js';

const est = (value: number) => ({ value, lo: null, hi: null });
const change = (delta: number): Change => ({
  delta,
  lo: null,
  hi: null,
  verdict: 'no interval',
  detectable: null,
});

/** Two strategies, phases ref and down-1: premium and freemium p95 and goodput given per strategy. */
function evidence(p95: Record<string, number>, goodput: Record<string, number>): Evidence {
  const estimates = new Map();
  for (const n of ['plb', 'rr'])
    for (const ph of ['ref', 'down-1'])
      for (const cls of ['premium', 'freemium']) {
        estimates.set(`${n}|${ph}|${cls}|p95`, est(p95[n] ?? 0));
        estimates.set(`${n}|${ph}|${cls}|goodput`, est(goodput[n] ?? 0));
      }
  const pairs = new Map([['down-1|plb|rr', change(((p95.plb ?? 0) - (p95.rr ?? 0)) / (p95.rr ?? 1))]]);
  return { estimates, pairs };
}

describe('how closely one series reproduces another (sim-vs-real)', () => {
  it('counts cells within the tolerances, and rankings and verdicts by down phase', () => {
    const real = evidence({ plb: 100, rr: 200 }, { plb: 50, rr: 50 });
    // plb's p95 31 % high (out), rr's 29 % low (in); goodput 9 % and 11 % off; the order kept.
    const other = evidence({ plb: 131, rr: 142 }, { plb: 54.5, rr: 44.5 });
    expect(agreement(real, other, ['plb', 'rr'], ['ref', 'down-1'], 0.3, 0.1)).toEqual({
      cells: 8,
      p95Within: 4,
      goodputWithin: 4,
      rankings: { same: 1, of: 1 },
      verdicts: { same: 1, of: 1 },
    });
    // plb now slower than rr in down-1: the ranking and the verdict's sign both flip.
    const flipped = evidence({ plb: 100, rr: 90 }, { plb: 50, rr: 50 });
    expect(agreement(real, flipped, ['plb', 'rr'], ['ref', 'down-1'], 0.3, 0.1)).toMatchObject({
      rankings: { same: 0, of: 1 },
      verdicts: { same: 0, of: 1 },
    });
  });
});
