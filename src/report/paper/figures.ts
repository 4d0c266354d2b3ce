// What the PLB paper shows per experiment (section V: RQ1, Fig. 4, Fig. 5, Fig. 6), from the
// report's groups, and the paper's published numbers beside plb's (published.ts).
// Experiments are known by plan name: paper-rq1, paper-rq2, paper-rq3 (and their -quick variants).
import { SERVICE_CLASSES, type ServiceClass } from '../../core/service-class.js';
import { REF_PHASE } from '../../faults/actions.js';
import type { AggregatedPhase, RunGroup } from '../../run-format/report.js';
import type { Stat } from '../../run-format/report.js';
import { FAULT_INTERVAL } from '../../metrics/summary/fault-interval.js';
import { claimInterval, claimVerdict, fig4Interval, fig5Interval, fig6Interval } from './intervals.js';
import { PUBLISHED_CLAIMS, REPRODUCE_RULE, publishedText, type PublishedClaim } from './published.js';
import {
  FIG4_METRICS,
  type ClaimVerdict,
  type Fig4Metric,
  type PaperReport,
} from '../../run-format/report.js';

export type PaperQuestion = 'rq1' | 'rq2' | 'rq3';

/** The strategies of the paper: PLB, 5RR (rr) and 3RR+2RR (static with partition 3:2). */
const PLB = 'plb';
const SHARED = 'rr';
const STATIC = 'static';

/** Fig. 4's focus mix (the paper's Freemium-heavy P25:F75); another mix when it has no runs. */
const FIG4_MIX = '25:75';

/** Fig. 4's metrics; "observed session lifetime" is the median lifetime of the sessions that finished. */

/** The experiment a plan name is (`paper-rq2`, `paper-rq2-quick`), or null. */
export function paperQuestionOf(plan: string): PaperQuestion | null {
  const m = /^paper-(rq[123])(-quick)?$/.exec(plan);
  return m ? (m[1] as PaperQuestion) : null;
}

interface Rq1Row {
  mix: string;
  strategy: string;
  /** Premium goodput over the fault interval / Premium goodput of ref. */
  retention: Stat;
  /** Mean CPU fraction over the replicas up through the fault interval (the paper's ū) and its CV. */
  cpuMean: Stat;
  cpuCv: Stat;
}

interface Fig4Bar {
  phase: string;
  cls: ServiceClass;
  metric: Fig4Metric;
  strategy: string;
  value: Stat;
  /** The pooled value with its 95 % interval (null: no per-second data, or the fault interval). */
  interval?: { value: number; lo: number; hi: number } | null;
}

interface Fig5Cell {
  mix: string;
  cls: ServiceClass;
  phase: string;
  plbP95: number | null;
  rrP95: number | null;
  /** (rr - plb) / rr of the medians: positive = PLB has the lower p95. */
  change: number | null;
  /** 95 % interval of the change (null: no per-second data, or the fault interval). */
  interval?: { lo: number; hi: number } | null;
}

interface Fig6Cell {
  mix: string;
  phase: string;
  /** Median over the repeats of plb's (p95 - ref p95) / ref p95: positive = degradation. */
  premium: number | null;
  freemium: number | null;
  /** (freemium - premium) * 100, percentage points. */
  gapPp: number | null;
  /** 95 % intervals of the two changes (null: no per-second data, or the fault interval). */
  premiumInterval?: { lo: number; hi: number } | null;
  freemiumInterval?: { lo: number; hi: number } | null;
}

interface ClaimResult {
  id: string;
  phase: string;
  mix: string;
  cls: ServiceClass | 'gap';
  measure: PublishedClaim['measure'];
  published: string;
  /** In the claim's unit: percent, percentage points or a ratio. */
  measured: number | null;
  /** 95 % interval of the measured value (null: no per-second data, or no rr baseline). */
  interval: { lo: number; hi: number } | null;
  verdict: ClaimVerdict;
  source: string;
}

export interface PaperFigures {
  plan: string;
  /** The settings that set these runs apart from other groups of the report (absent: none). */
  settings?: string;
  experiment: PaperQuestion;
  /** Phases in run order, then `fault` (the whole fault interval) when the runs have it. */
  phases: string[];
  rq1: Rq1Row[];
  fig4: { mix: string; bars: Fig4Bar[] } | null;
  fig5: Fig5Cell[];
  fig6: Fig6Cell[];
  claims: ClaimResult[];
}

const EMPTY: Stat = { median: null, q1: null, q3: null, n: 0 };

/** A group's phase by name, `fault` being its fault interval. */
function phaseOf(g: RunGroup | undefined, name: string): AggregatedPhase | undefined {
  if (!g) return undefined;
  return name === FAULT_INTERVAL ? g.faultInterval : g.phases.find((p) => p.name === name);
}

function mixOrder(a: string, b: string): number {
  return Number(a.split(':')[0]) - Number(b.split(':')[0]);
}

/** The paper figures of every paper experiment among the groups; null when there is none. */
export function paperFigures(groups: readonly RunGroup[]): PaperReport | null {
  // One experiment per plan and settings: runs under other readings (say) are figures of their own.
  const variants = new Map<string, RunGroup[]>();
  for (const g of groups) {
    if (paperQuestionOf(g.plan) === null) continue;
    const k = `${g.plan}\n${g.settingsLabel}`;
    variants.set(k, [...(variants.get(k) ?? []), g]);
  }
  if (variants.size === 0) return null;
  return {
    rule: REPRODUCE_RULE,
    experiments: [...variants.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([, gs]) => {
        const first = gs[0] as RunGroup;
        return experimentFigures(
          first.plan,
          paperQuestionOf(first.plan) as PaperQuestion,
          gs,
          first.settingsLabel,
        );
      }),
  };
}

function experimentFigures(
  plan: string,
  experiment: PaperQuestion,
  groups: RunGroup[],
  settings: string,
): PaperFigures {
  const find = (strategy: string, mix: string): RunGroup | undefined =>
    groups.find((g) => g.strategy === strategy && g.mixLabel === mix);
  const mixes = [...new Set(groups.map((g) => g.mixLabel))].sort(mixOrder);
  const phases: string[] = [];
  for (const g of groups) for (const p of g.phases) if (!phases.includes(p.name)) phases.push(p.name);
  if (groups.some((g) => g.faultInterval)) phases.push(FAULT_INTERVAL);
  const faultPhases = phases.filter((p) => p !== REF_PHASE);
  const median = (
    g: RunGroup | undefined,
    phase: string,
    cls: ServiceClass,
    m: 'p95' | 'goodput' | 'p95Inflation',
  ) => phaseOf(g, phase)?.classes[cls][m].median ?? null;

  const rq1 =
    experiment === 'rq1'
      ? mixes.flatMap((mix) =>
          [PLB, STATIC].flatMap((strategy): Rq1Row[] => {
            const g = find(strategy, mix);
            if (!g) return [];
            const f = g.faultInterval;
            return [
              {
                mix,
                strategy,
                retention: f?.classes.premium.goodputRetention ?? EMPTY,
                cpuMean: f?.cpuMean ?? EMPTY,
                cpuCv: f?.cpuCv ?? EMPTY,
              },
            ];
          }),
        )
      : [];

  let fig4: PaperFigures['fig4'] = null;
  const fig5: Fig5Cell[] = [];
  if (experiment === 'rq2') {
    const paired = mixes.filter((m) => find(PLB, m) && find(SHARED, m));
    const mix4 = paired.includes(FIG4_MIX) ? FIG4_MIX : paired[0];
    if (mix4 !== undefined) {
      const bars: Fig4Bar[] = [];
      for (const metric of FIG4_METRICS)
        for (const cls of SERVICE_CLASSES)
          for (const phase of phases)
            for (const strategy of [PLB, SHARED])
              bars.push({
                phase,
                cls,
                metric,
                strategy,
                value: phaseOf(find(strategy, mix4), phase)?.classes[cls][metric] ?? EMPTY,
                interval: fig4Interval(find(strategy, mix4), phase, cls, metric),
              });
      fig4 = { mix: mix4, bars };
    }
    for (const cls of SERVICE_CLASSES)
      for (const mix of paired)
        for (const phase of faultPhases) {
          const plbP95 = median(find(PLB, mix), phase, cls, 'p95');
          const rrP95 = median(find(SHARED, mix), phase, cls, 'p95');
          const change = betterThan(plbP95, rrP95);
          const interval = fig5Interval(find(PLB, mix), find(SHARED, mix), phase, cls);
          fig5.push({ mix, cls, phase, plbP95, rrP95, change, interval });
        }
  }

  const fig6: Fig6Cell[] = [];
  if (experiment === 'rq3') {
    for (const mix of mixes.filter((m) => find(PLB, m)))
      for (const phase of faultPhases) {
        const premium = median(find(PLB, mix), phase, 'premium', 'p95Inflation');
        const freemium = median(find(PLB, mix), phase, 'freemium', 'p95Inflation');
        const gapPp = premium !== null && freemium !== null ? (freemium - premium) * 100 : null;
        const plb = find(PLB, mix);
        fig6.push({
          mix,
          phase,
          premium,
          freemium,
          gapPp,
          premiumInterval: fig6Interval(plb, phase, 'premium'),
          freemiumInterval: fig6Interval(plb, phase, 'freemium'),
        });
      }
  }

  const claims = PUBLISHED_CLAIMS.filter((c) => c.experiment === experiment).flatMap((c) =>
    c.phases.flatMap((phase) =>
      c.mixes.map((mix): ClaimResult => {
        const measured = measure(c, phase, mix, find, fig5, fig6);
        const interval = claimInterval(c, phase, find(PLB, mix), find(SHARED, mix));
        return {
          id: c.id,
          phase,
          mix,
          cls: c.cls,
          measure: c.measure,
          published: publishedText(c),
          measured,
          interval,
          verdict: claimVerdict(c, measured, interval),
          source: c.source,
        };
      }),
    ),
  );
  return { plan, ...(settings ? { settings } : {}), experiment, phases, rq1, fig4, fig5, fig6, claims };
}

/** (base - value) / base: positive = value is lower (Fig. 5's "PLB better"). */
function betterThan(value: number | null, base: number | null): number | null {
  if (value === null || base === null || base === 0) return null;
  return (base - value) / base;
}

function measure(
  c: PublishedClaim,
  phase: string,
  mix: string,
  find: (strategy: string, mix: string) => RunGroup | undefined,
  fig5: readonly Fig5Cell[],
  fig6: readonly Fig6Cell[],
): number | null {
  const pct = (v: number | null | undefined): number | null =>
    v === null || v === undefined ? null : v * 100;
  switch (c.measure) {
    case 'goodputRatio': {
      const plb = phaseOf(find(PLB, mix), phase)?.classes.premium.goodput.median ?? null;
      const rr = phaseOf(find(SHARED, mix), phase)?.classes.premium.goodput.median ?? null;
      return plb === null || rr === null || rr === 0 ? null : plb / rr;
    }
    case 'p95VsRr':
      return pct(fig5.find((f) => f.mix === mix && f.phase === phase && f.cls === c.cls)?.change);
    case 'p95VsRef': {
      const cell = fig6.find((f) => f.mix === mix && f.phase === phase);
      return pct(c.cls === 'premium' ? cell?.premium : c.cls === 'freemium' ? cell?.freemium : null);
    }
    case 'gapPp':
      return fig6.find((f) => f.mix === mix && f.phase === phase)?.gapPp ?? null;
  }
}
