// Fig. 6's premium claims judged on RQ3's placebo (plans/paper/placebo.yaml: RQ3's timing, no
// fault): mark-1 stands where down-1 is, mark-2 where down-2 is. The same published range, value
// and interval as on RQ3 itself (figures.ts, intervals.ts); a placebo that "reproduces" a claim
// says the reference window alone puts premium below it, whatever the faults do.
import type { MapClaimCell } from '../../run-format/paper-map.js';
import type { RunGroup } from '../../run-format/report.js';
import { claimVerdict, fig6Interval } from './intervals.js';
import { PUBLISHED_CLAIMS, publishedText } from './published.js';

/** The placebo's plan names (full and quick). */
const PLACEBO_PLAN = /^paper-rq3-placebo(-quick)?$/;

/** The placebo's phase that stands for each of RQ3's. */
const PLACEBO_PHASE: Readonly<Record<string, string>> = { 'down-1': 'mark-1', 'down-2': 'mark-2' };

/** Claim id of a published claim measured on the placebo. */
const placeboClaimId = (id: string): string => `placebo-${id}`;

/** The placebo's claims for a cell's mix: plb's premium p95 change against ref in mark-1 and mark-2. */
export function placeboClaims(cell: string, mix: string, groups: readonly RunGroup[]): MapClaimCell[] {
  const g = groups.find((x) => PLACEBO_PLAN.test(x.plan) && x.strategy === 'plb' && x.mixLabel === mix);
  if (!g) return [];
  return PUBLISHED_CLAIMS.filter((c) => c.experiment === 'rq3' && c.cls === 'premium').flatMap((c) =>
    c.phases.flatMap((rq3Phase) => {
      const phase = PLACEBO_PHASE[rq3Phase];
      if (phase === undefined) return [];
      const median = g.phases.find((p) => p.name === phase)?.classes.premium.p95Inflation.median ?? null;
      const measured = median === null ? null : median * 100;
      const iv = fig6Interval(g, phase, 'premium');
      const interval = iv ? { lo: iv.lo * 100, hi: iv.hi * 100 } : null;
      return [
        {
          cell,
          claim: placeboClaimId(c.id),
          phase,
          mix,
          published: publishedText(c),
          measured,
          interval,
          verdict: claimVerdict(c, measured, interval),
        },
      ];
    }),
  );
}
