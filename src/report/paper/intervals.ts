// Paper vs measured with intervals: a claim is reproduced when the 95 % interval of the measured
// value lies inside the published range (widened as REPRODUCE_RULE says), contradicted when it
// lies wholly outside, inconclusive when it overlaps both the range and its complement, and says
// `no interval` when there is none. With repeats the interval is across the runs (DESIGN: "across
// repeats over the runs"): each run's own value, a t interval of their mean; with fewer runs, the
// bootstrap over the per-second data pooled over them.
import type { ServiceClass } from '../../core/service-class.js';
import type { ClaimVerdict, RunGroup } from '../../run-format/report.js';
import type { Change, Estimate } from '../../run-format/evidence.js';
import { t975 } from '../../metrics/intervals/intervals.js';
import { overRuns } from '../evidence/evidence.js';
import { REPRODUCE_TOLERANCE_PP, type PublishedClaim } from './published.js';

type Interval = { lo: number; hi: number };

/** Runs a group needs for an interval across them (overRuns' own minimum). */
const MIN_RUNS = 3;

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

export function claimVerdict(c: PublishedClaim, measured: number | null, iv: Interval | null): ClaimVerdict {
  if (measured === null || !Number.isFinite(measured)) return 'not measured';
  if (iv === null) return 'no interval';
  const r = acceptedRange(c);
  const strictLo = c.above === true; // "> x" excludes x itself
  const inside = (strictLo ? iv.lo > r.lo : iv.lo >= r.lo) && iv.hi <= r.hi;
  const outside = iv.hi < r.lo || (strictLo && iv.hi <= r.lo) || iv.lo > r.hi;
  return inside ? 'reproduced' : outside ? 'contradicted' : 'inconclusive';
}

function cell(g: RunGroup | undefined, phase: string, cls: ServiceClass) {
  return g?.evidence?.phases.find((p) => p.name === phase)?.classes[cls];
}

const scale = (c: Interval | Change | undefined | null, f: (v: number) => number): Interval | null => {
  if (!c || c.lo === null || c.hi === null) return null;
  const a = f(c.lo);
  const b = f(c.hi);
  return { lo: Math.min(a, b), hi: Math.max(a, b) };
};

type RunMetric = 'p95' | 'goodput';

/** Each run's value of a metric in a phase, by run id (the evidence's per-run figures). */
function perRun(
  g: RunGroup | undefined,
  phase: string,
  cls: ServiceClass,
  m: RunMetric,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of cell(g, phase, cls)?.perRun ?? []) {
    const v = r[m].value;
    if (v !== null && Number.isFinite(v)) out.set(r.runId, v);
  }
  return out;
}

const asInterval = (e: Estimate): Interval | null =>
  e.lo === null || e.hi === null ? null : { lo: e.lo, hi: e.hi };

/** Each run's p95 change against its own ref, (p95 - ref) / ref, by run id. */
function runRefChanges(g: RunGroup | undefined, phase: string, cls: ServiceClass): Map<string, number> {
  const ref = perRun(g, 'ref', cls, 'p95');
  const out = new Map<string, number>();
  for (const [id, v] of perRun(g, phase, cls, 'p95')) {
    const r = ref.get(id);
    if (r !== undefined && r > 0) out.set(id, v / r - 1);
  }
  return out;
}

/** The t interval of the mean over the runs, null below MIN_RUNS values. */
function acrossRuns(values: Iterable<number>): Interval | null {
  const xs = [...values];
  return xs.length >= MIN_RUNS ? asInterval(overRuns(xs)) : null;
}

/**
 * 95 % interval of mean(a) / mean(b) over two groups' runs (not paired: each strategy's repeats
 * are runs of their own): the log of the ratio, its standard error by the delta method, Welch's
 * degrees of freedom. Null below MIN_RUNS on either side or with a mean not above 0.
 */
function ratioAcrossRuns(a: readonly number[], b: readonly number[]): Interval | null {
  if (a.length < MIN_RUNS || b.length < MIN_RUNS) return null;
  const stats = (xs: readonly number[]) => {
    const m = xs.reduce((s, v) => s + v, 0) / xs.length;
    const v = xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1);
    // Relative variance of the mean: (se / mean)^2.
    return { m, rel: v / xs.length / (m * m), df: xs.length - 1 };
  };
  const x = stats(a);
  const y = stats(b);
  if (!(x.m > 0 && y.m > 0)) return null;
  const se2 = x.rel + y.rel;
  const log = Math.log(x.m / y.m);
  if (se2 === 0) return { lo: Math.exp(log), hi: Math.exp(log) };
  const df = (se2 * se2) / ((x.rel * x.rel) / x.df + (y.rel * y.rel) / y.df);
  const h = t975(Math.max(1, Math.floor(df))) * Math.sqrt(se2);
  return { lo: Math.exp(log - h), hi: Math.exp(log + h) };
}

/**
 * plb's p95 change against its own ref (a fraction): across the runs with repeats, else the
 * pooled bootstrap; null without either.
 */
function refChange(g: RunGroup | undefined, phase: string, cls: ServiceClass): Interval | null {
  return (
    acrossRuns(runRefChanges(g, phase, cls).values()) ?? scale(cell(g, phase, cls)?.vsRef?.p95, (v) => v)
  );
}

/** plb's metric over rr's, as a ratio (plb / rr): across the runs with repeats, else pooled. */
function ratioVsRr(
  plb: RunGroup | undefined,
  rr: RunGroup | undefined,
  phase: string,
  cls: ServiceClass,
  m: RunMetric,
): Interval | null {
  const vsRr = plb?.evidence?.baselineKey !== undefined && plb.evidence.baselineKey === rr?.key;
  if (!vsRr) return null;
  const runs = (g: RunGroup | undefined) => [...perRun(g, phase, cls, m).values()];
  return ratioAcrossRuns(runs(plb), runs(rr)) ?? scale(cell(plb, phase, cls)?.vsBaseline?.[m], (v) => 1 + v);
}

/**
 * The 95 % interval of a claim's measured value, in its unit: plb's change against rr as the
 * report's baseline, or against its own ref; null when there is none.
 */
export function claimInterval(
  c: PublishedClaim,
  phase: string,
  plb: RunGroup | undefined,
  rr: RunGroup | undefined,
): Interval | null {
  switch (c.measure) {
    case 'goodputRatio':
      return ratioVsRr(plb, rr, phase, 'premium', 'goodput');
    case 'p95VsRr':
      // Fig. 5's change is (rr - plb) / rr = 1 - plb / rr.
      return c.cls === 'gap' ? null : scale(ratioVsRr(plb, rr, phase, c.cls, 'p95'), (v) => 100 * (1 - v));
    case 'p95VsRef':
      return c.cls === 'gap' ? null : scale(refChange(plb, phase, c.cls), (v) => 100 * v);
    case 'gapPp':
      return gapInterval(plb, phase);
  }
}

/** Fig. 6's gap, freemium's change minus premium's, in percentage points. */
function gapInterval(plb: RunGroup | undefined, phase: string): Interval | null {
  // Across runs: each run's own gap (both classes are measured in the same run).
  const p = runRefChanges(plb, phase, 'premium');
  const gaps = [...runRefChanges(plb, phase, 'freemium')]
    .filter(([id]) => p.has(id))
    .map(([id, f]) => 100 * (f - (p.get(id) as number)));
  const over = acrossRuns(gaps);
  if (over) return over;
  const pi = scale(cell(plb, phase, 'premium')?.vsRef?.p95, (v) => 100 * v);
  const fi = scale(cell(plb, phase, 'freemium')?.vsRef?.p95, (v) => 100 * v);
  if (!pi || !fi) return null;
  // Pooled: independent normal approximation, half-widths add in quadrature.
  const mid = (fi.lo + fi.hi) / 2 - (pi.lo + pi.hi) / 2;
  const h = Math.hypot((fi.hi - fi.lo) / 2, (pi.hi - pi.lo) / 2);
  return { lo: mid - h, hi: mid + h };
}

/** Fig. 5's interval of (rr - plb) / rr p95 (a fraction). */
export function fig5Interval(
  plb: RunGroup | undefined,
  rr: RunGroup | undefined,
  phase: string,
  cls: ServiceClass,
): Interval | null {
  return scale(ratioVsRr(plb, rr, phase, cls, 'p95'), (v) => 1 - v);
}

/** Fig. 6's interval of plb's p95 change against its own ref (a fraction). */
export function fig6Interval(plb: RunGroup | undefined, phase: string, cls: ServiceClass): Interval | null {
  return refChange(plb, phase, cls);
}

const FIG4_EVIDENCE = { goodput: 'goodput', p95: 'p95', lifetimeP50Ms: 'lifetime' } as const;

/**
 * Fig. 4's bar with its 95 % interval: the mean over the runs with repeats, else the pooled
 * value of the group's runs; null without.
 */
export function fig4Interval(
  g: RunGroup | undefined,
  phase: string,
  cls: ServiceClass,
  metric: keyof typeof FIG4_EVIDENCE,
): { value: number; lo: number; hi: number } | null {
  const c = cell(g, phase, cls);
  const over = c?.overRuns?.[FIG4_EVIDENCE[metric]];
  const e = over && over.lo !== null ? over : c?.metrics[FIG4_EVIDENCE[metric]];
  return e && e.value !== null && e.lo !== null && e.hi !== null
    ? { value: e.value, lo: e.lo, hi: e.hi }
    : null;
}
