// The per-router section of a group (--routers N > 1): each instance's figures, medians over the runs.
import { stat } from '../metrics/math.js';
import type { AggregatedRouters } from '../run-format/routers-report.js';
import type { RoutersSummary, RunSummary } from '../run-format/summary.js';

type PerRouter = RoutersSummary['perRouter'][number];

/** Medians over the runs that have a per-router section; undefined when none has. */
export function aggregateRouters(runs: readonly RunSummary[]): AggregatedRouters | undefined {
  const rs = runs.flatMap((r) => (r.routers ? [r.routers] : []));
  const first = rs[0];
  if (first === undefined) return undefined;
  const phases = first.disagreement.map((d) => d.phase);
  const routerOf = (r: RoutersSummary, i: number): PerRouter | undefined => r.perRouter[i];
  const phaseOf = (p: PerRouter | undefined, name: string) => p?.phases.find((x) => x.phase === name);
  return {
    count: first.count,
    view: first.view,
    perRouter: first.perRouter.map((_, i) => {
      const mine = rs.map((r) => routerOf(r, i));
      return {
        router: i,
        sessions: {
          premium: stat(mine.map((p) => p?.sessions.premium)),
          freemium: stat(mine.map((p) => p?.sessions.freemium)),
        },
        borrowFlips: stat(mine.map((p) => p?.borrowFlips)),
        phases: phases.map((phase) => {
          const ps = mine.map((p) => phaseOf(p, phase));
          const cls = (c: 'premium' | 'freemium') => ({
            p95: stat(ps.map((p) => p?.[c].p95)),
            goodput: stat(ps.map((p) => p?.[c].goodput)),
          });
          return { phase, premium: cls('premium'), freemium: cls('freemium') };
        }),
      };
    }),
    disagreement: phases.map((phase) => {
      const ds = rs.map((r) => r.disagreement.find((d) => d.phase === phase));
      return {
        phase,
        meanReplicas: stat(ds.map((d) => d?.meanReplicas)),
        maxReplicas: stat(ds.map((d) => d?.maxReplicas)),
        borrowFlips: stat(ds.map((d) => d?.borrowFlips)),
      };
    }),
  };
}
