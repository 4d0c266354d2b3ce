// The PLB paper's published numbers (section V), each with the sentence it comes from, and the
// rule that says whether a measured cell reproduces it. Signs follow figures.ts: Fig. 5
// changes are (rr - plb) / rr (positive = PLB better), Fig. 6 changes (p95 - ref) / ref
// (positive = degradation), the gap is Freemium minus Premium in percentage points.
import type { ServiceClass } from '../../core/service-class.js';

/** What a claim is about: one figure's value in one phase, class and mix. */
type ClaimMeasure =
  /** plb / rr Premium goodput ratio (RQ2). */
  | 'goodputRatio'
  /** Fig. 5: (rr - plb) / rr p95, in percent. */
  | 'p95VsRr'
  /** Fig. 6: (p95 - ref) / ref of plb, in percent. */
  | 'p95VsRef'
  /** Fig. 6: Freemium minus Premium p95VsRef, in percentage points. */
  | 'gapPp';

export interface PublishedClaim {
  id: string;
  experiment: 'rq2' | 'rq3';
  measure: ClaimMeasure;
  cls: ServiceClass | 'gap';
  phases: string[];
  mixes: string[];
  /** Published range in the measure's unit (percent, points, or a ratio); `above` for "> x". */
  low: number;
  high: number;
  above?: boolean;
  /** The paper's sentence, verbatim. */
  source: string;
}

/** Percentage points a measured value may lie outside the published range and still reproduce it. */
export const REPRODUCE_TOLERANCE_PP = 5;

export const REPRODUCE_RULE =
  `accepted range: the published range widened by ${REPRODUCE_TOLERANCE_PP} percentage points each side, on ` +
  `the published side of 0 (a single published value is a range of one point; "> 2x": a plb/rr ratio above 2). ` +
  `With the 95 % interval of the measured value (plb): across the runs with 3 repeats or more (a t interval of ` +
  `the mean of each run's own change against ref, or of the ratio of plb's and rr's means), else the bootstrap ` +
  `over the per-second data pooled over the runs: reproduced when all of it lies in the accepted range, ` +
  `contradicted when none of it does, inconclusive when it overlaps both. no interval: neither could be made ` +
  `(fewer than 3 runs, and phases too short for blocks or no per-second data). not measured: no runs (or no ` +
  `value) for the cell.`;

const FIG4 =
  'In the two-replica-down interval, where pressure is strongest, Premium goodput under PLB is more than twice that of 5RR, while Premium p95 latency is reduced by $18.2\\%$.';
const FIG5 =
  'across the $P25{:}F75$ and $P50{:}F50$ mixes, PLB reduces Premium p95 latency by $6.0\\%$ to $33.4\\%$, while Freemium slowdowns range from $14.0\\%$ to $31.8\\%$.';
const FIG6_P =
  'In the one-down phase, Premium p95 changes by $-18.6\\%$ to $-4.7\\%$, and in the two-down phase by $-23.0\\%$ to $-15.3\\%$.';
const FIG6_F = 'In the two-down phase, Freemium p95 increases by $21.6\\%$ to $33.9\\%$.';
const FIG6_GAP =
  'the p95 change in Freemium-minus-Premium ranges from $38.5$ to $57.0$ percentage points across the three mixes.';

const ALL_MIXES = ['25:75', '50:50', '75:25'];

export const PUBLISHED_CLAIMS: readonly PublishedClaim[] = [
  {
    id: 'rq2-goodput-2x',
    experiment: 'rq2',
    measure: 'goodputRatio',
    cls: 'premium',
    phases: ['down-2'],
    mixes: ['25:75'],
    low: 2,
    high: Number.POSITIVE_INFINITY,
    above: true,
    source: FIG4,
  },
  {
    id: 'rq2-p95-18.2',
    experiment: 'rq2',
    measure: 'p95VsRr',
    cls: 'premium',
    phases: ['down-2'],
    mixes: ['25:75'],
    low: 18.2,
    high: 18.2,
    source: FIG4,
  },
  {
    id: 'fig5-premium',
    experiment: 'rq2',
    measure: 'p95VsRr',
    cls: 'premium',
    phases: ['down-1', 'down-2'],
    mixes: ['25:75', '50:50'],
    low: 6.0,
    high: 33.4,
    source: FIG5,
  },
  {
    id: 'fig5-freemium',
    experiment: 'rq2',
    measure: 'p95VsRr',
    cls: 'freemium',
    phases: ['down-1', 'down-2'],
    mixes: ['25:75', '50:50'],
    // Slowdowns of 14.0..31.8 % are -31.8..-14.0 % in Fig. 5's sign.
    low: -31.8,
    high: -14.0,
    source: FIG5,
  },
  {
    id: 'fig6-premium-down-1',
    experiment: 'rq3',
    measure: 'p95VsRef',
    cls: 'premium',
    phases: ['down-1'],
    mixes: ALL_MIXES,
    low: -18.6,
    high: -4.7,
    source: FIG6_P,
  },
  {
    id: 'fig6-premium-down-2',
    experiment: 'rq3',
    measure: 'p95VsRef',
    cls: 'premium',
    phases: ['down-2'],
    mixes: ALL_MIXES,
    low: -23.0,
    high: -15.3,
    source: FIG6_P,
  },
  {
    id: 'fig6-freemium-down-2',
    experiment: 'rq3',
    measure: 'p95VsRef',
    cls: 'freemium',
    phases: ['down-2'],
    mixes: ALL_MIXES,
    low: 21.6,
    high: 33.9,
    source: FIG6_F,
  },
  {
    id: 'fig6-gap-down-2',
    experiment: 'rq3',
    measure: 'gapPp',
    cls: 'gap',
    phases: ['down-2'],
    mixes: ALL_MIXES,
    low: 38.5,
    high: 57.0,
    source: FIG6_GAP,
  },
];

/** The published value as the paper states it, in the claim's unit. */
export function publishedText(claim: PublishedClaim): string {
  const unit = claim.measure === 'gapPp' ? ' pp' : claim.measure === 'goodputRatio' ? 'x' : '%';
  const f = (v: number): string => `${v > 0 && claim.measure !== 'goodputRatio' ? '+' : ''}${v.toFixed(1)}`;
  if (claim.above) return `> ${claim.low}${unit}`;
  return claim.low === claim.high ? `${f(claim.low)}${unit}` : `${f(claim.low)}..${f(claim.high)}${unit}`;
}
