// Paper vs measured with intervals: a claim is reproduced when the 95 % interval of the measured
// value lies inside the published range (widened as REPRODUCE_RULE says), contradicted when it
// lies wholly outside, and inconclusive when it overlaps both the range and its complement.
import type { ServiceClass } from '../../core/service-class.js';
import type { RunGroup } from '../../run-format/report.js';
import type { Change } from '../../run-format/evidence.js';
import { REPRODUCE_TOLERANCE_PP, type PublishedClaim } from './published.js';

export type ClaimVerdict = 'reproduced' | 'contradicted' | 'inconclusive' | 'not measured';

/** The accepted range of a claim: the published one widened, on the published side of 0. */
export function acceptedRange(c: PublishedClaim): { lo: number; hi: number } {
  if (c.above) return { lo: c.low, hi: Infinity };
  let lo = c.low - REPRODUCE_TOLERANCE_PP;
  let hi = c.high + REPRODUCE_TOLERANCE_PP;
  const sign = Math.sign(c.low + c.high);
  if (sign > 0) lo = Math.max(lo, 0);
  if (sign < 0) hi = Math.min(hi, 0);
  return { lo, hi };
}

export function claimVerdict(
  c: PublishedClaim,
  measured: number | null,
  iv: { lo: number; hi: number } | null,
): ClaimVerdict {
  if (measured === null || !Number.isFinite(measured)) return 'not measured';
  if (iv === null) return 'inconclusive';
  const r = acceptedRange(c);
  const strictLo = c.above === true; // "> x" excludes x itself
  const inside = (strictLo ? iv.lo > r.lo : iv.lo >= r.lo) && iv.hi <= r.hi;
  const outside = iv.hi < r.lo || (strictLo && iv.hi <= r.lo) || iv.lo > r.hi;
  return inside ? 'reproduced' : outside ? 'contradicted' : 'inconclusive';
}

function cell(g: RunGroup | undefined, phase: string, cls: ServiceClass) {
  return g?.evidence?.phases.find((p) => p.name === phase)?.classes[cls];
}

const scale = (c: Change | undefined, f: (v: number) => number): { lo: number; hi: number } | null => {
  if (!c || c.lo === null || c.hi === null) return null;
  const a = f(c.lo);
  const b = f(c.hi);
  return { lo: Math.min(a, b), hi: Math.max(a, b) };
};

/**
 * The 95 % interval of a claim's measured value, in its unit, from the groups' evidence (plb's
 * change against rr as the report's baseline, or against ref); null when there is none.
 */
export function claimInterval(
  c: PublishedClaim,
  phase: string,
  plb: RunGroup | undefined,
  rr: RunGroup | undefined,
): { lo: number; hi: number } | null {
  const vsRr = plb?.evidence?.baselineKey !== undefined && plb.evidence.baselineKey === rr?.key;
  switch (c.measure) {
    case 'goodputRatio':
      return vsRr ? scale(cell(plb, phase, 'premium')?.vsBaseline?.goodput, (v) => 1 + v) : null;
    case 'p95VsRr': {
      if (!vsRr || c.cls === 'gap') return null;
      // Fig. 5's change is (rr - plb) / rr = -Δ.
      return scale(cell(plb, phase, c.cls)?.vsBaseline?.p95, (v) => -100 * v);
    }
    case 'p95VsRef':
      return c.cls === 'gap' ? null : scale(cell(plb, phase, c.cls)?.vsRef?.p95, (v) => 100 * v);
    case 'gapPp': {
      const p = scale(cell(plb, phase, 'premium')?.vsRef?.p95, (v) => 100 * v);
      const f = scale(cell(plb, phase, 'freemium')?.vsRef?.p95, (v) => 100 * v);
      if (!p || !f) return null;
      // Independent normal approximation: half-widths add in quadrature.
      const mid = (f.lo + f.hi) / 2 - (p.lo + p.hi) / 2;
      const h = Math.hypot((f.hi - f.lo) / 2, (p.hi - p.lo) / 2);
      return { lo: mid - h, hi: mid + h };
    }
  }
}

/** Fig. 5's interval of (rr - plb) / rr p95 (a fraction): minus plb's change against rr. */
export function fig5Interval(
  plb: RunGroup | undefined,
  rr: RunGroup | undefined,
  phase: string,
  cls: ServiceClass,
): { lo: number; hi: number } | null {
  const vsRr = plb?.evidence?.baselineKey !== undefined && plb.evidence.baselineKey === rr?.key;
  return vsRr ? scale(cell(plb, phase, cls)?.vsBaseline?.p95, (v) => -v) : null;
}

/** Fig. 6's interval of plb's p95 change against its own ref (a fraction). */
export function fig6Interval(
  plb: RunGroup | undefined,
  phase: string,
  cls: ServiceClass,
): { lo: number; hi: number } | null {
  return scale(cell(plb, phase, cls)?.vsRef?.p95, (v) => v);
}

const FIG4_EVIDENCE = { goodput: 'goodput', p95: 'p95', lifetimeP50Ms: 'lifetime' } as const;

/** Fig. 4's bar with its 95 % interval (the pooled value of the group's runs); null without. */
export function fig4Interval(
  g: RunGroup | undefined,
  phase: string,
  cls: ServiceClass,
  metric: keyof typeof FIG4_EVIDENCE,
): { value: number; lo: number; hi: number } | null {
  const e = cell(g, phase, cls)?.metrics[FIG4_EVIDENCE[metric]];
  return e && e.value !== null && e.lo !== null && e.hi !== null
    ? { value: e.value, lo: e.lo, hi: e.hi }
    : null;
}
