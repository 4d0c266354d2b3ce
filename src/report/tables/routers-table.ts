// Many routers (--routers N > 1): per router, its clients' p95 by class in each phase, its sessions
// and borrow flips; last, per phase, how many replicas two routers gave different roles.
import type { RunGroup } from '../../run-format/report.js';
import { fixed, fmtStat, int, type TableModel } from './table-model.js';

/** Compact: the reference and the fault interval (or every phase when there is no fault). */
const COMPACT_PHASES = ['ref', 'fault'];

export function routersTable(
  g: RunGroup,
  wide: boolean,
  title: (g: RunGroup, iqr: boolean) => string,
): TableModel | null {
  const r = g.routers;
  if (!r) return null;
  const all = r.disagreement.map((d) => d.phase);
  const shown = wide || !all.includes('fault') ? all : all.filter((p) => COMPACT_PHASES.includes(p));
  const ms = fixed(1);
  return {
    title: `${title(g, wide)} · ${r.count} routers, ${r.view} view: p95 ms premium / freemium per router; last row: replicas two routers disagreed on (mean / max a second)`,
    head: ['Router', 'Sessions P/F', 'Borrow flips', ...shown],
    rows: [
      ...r.perRouter.map((p) => [
        String(p.router),
        `${fmtStat(p.sessions.premium, int, false)} / ${fmtStat(p.sessions.freemium, int, false)}`,
        fmtStat(p.borrowFlips, int, wide),
        ...shown.map((name) => {
          const ph = p.phases.find((x) => x.phase === name);
          return ph ? `${fmtStat(ph.premium.p95, ms, wide)} / ${fmtStat(ph.freemium.p95, ms, wide)}` : '-';
        }),
      ]),
      [
        'disagree',
        '',
        int(r.perRouter.reduce((a, p) => a + (p.borrowFlips.median ?? 0), 0)),
        ...shown.map((name) => {
          const d = r.disagreement.find((x) => x.phase === name);
          return d
            ? `${fmtStat(d.meanReplicas, fixed(2), false)} / ${fmtStat(d.maxReplicas, int, false)}`
            : '-';
        }),
      ],
    ],
  };
}
