// The "Paper figures" section of `plb report` (text and markdown): figures.ts as tables.
import { fmtStat, fmtValue, renderMarkdown, renderTable, type TableModel } from '../tables/table-model.js';
import { type PaperFigures } from './figures.js';
import { FIG4_METRICS, type PaperReport } from '../../run-format/report.js';
import { REPRODUCE_TOLERANCE_PP } from './published.js';

const num =
  (d: number) =>
  (v: number): string =>
    v.toFixed(d);
const signed = (v: number): string => `${v > 0 ? '+' : ''}${(v * 100).toFixed(1)}%`;
const short = (cls: string): string => (cls === 'premium' ? 'P' : cls === 'freemium' ? 'F' : cls);
const METRIC_LABEL = { goodput: 'goodput q/s', p95: 'p95 ms', lifetimeP50Ms: 'life p50 s' } as const;

/** The tables of one experiment; wide adds the IQRs. */
export function paperTables(f: PaperFigures, wide: boolean): TableModel[] {
  const t: TableModel[] = [];
  const title = (what: string): string =>
    `Paper figures · ${f.plan}${f.settings ? ` · ${f.settings}` : ''} · ${what}`;
  if (f.experiment === 'rq1') {
    t.push({
      title: title('RQ1: fault interval, median [q1..q3] (ū, CV over the replicas up)'),
      head: ['mix', 'strategy', 'P retention', 'ū (CPU)', 'CV'],
      rows: f.rq1.map((r) => [
        r.mix,
        r.strategy,
        fmtStat(r.retention, num(3)),
        fmtStat(r.cpuMean, num(3)),
        fmtStat(r.cpuCv, num(3)),
      ]),
    });
  }
  if (f.fig4) {
    const bars = f.fig4.bars;
    const cell = (phase: string, cls: string, metric: string, strategy: string): string => {
      const b = bars.find(
        (x) => x.phase === phase && x.cls === cls && x.metric === metric && x.strategy === strategy,
      );
      const fmt = metric === 'lifetimeP50Ms' ? (v: number) => (v / 1000).toFixed(1) : num(1);
      return b ? fmtStat(b.value, fmt, wide) : '-';
    };
    t.push({
      title: title(`Fig. 4: mix ${f.fig4.mix}, plb | rr medians${wide ? ' [q1..q3]' : ''}`),
      head: ['phase', 'cls', ...FIG4_METRICS.flatMap((m) => [`${METRIC_LABEL[m]} plb`, 'rr'])],
      rows: f.phases.flatMap((phase) =>
        ['premium', 'freemium'].map((cls) => [
          phase,
          short(cls),
          ...FIG4_METRICS.flatMap((m) => [cell(phase, cls, m, 'plb'), cell(phase, cls, m, 'rr')]),
        ]),
      ),
    });
  }
  if (f.fig5.length > 0) {
    const phases = [...new Set(f.fig5.map((c) => c.phase))];
    const rows = [...new Set(f.fig5.map((c) => `${c.cls}|${c.mix}`))];
    t.push({
      title: title('Fig. 5: p95 change (rr - plb) / rr, + = plb better'),
      head: ['cls', 'mix', ...phases],
      rows: rows.map((k) => {
        const [cls = '', mix = ''] = k.split('|');
        return [
          short(cls),
          mix,
          ...phases.map((p) =>
            fmtValue(
              f.fig5.find((c) => c.cls === cls && c.mix === mix && c.phase === p)?.change ?? null,
              signed,
            ),
          ),
        ];
      }),
    });
  }
  if (f.fig6.length > 0) {
    const phases = [...new Set(f.fig6.map((c) => c.phase))];
    const mixes = [...new Set(f.fig6.map((c) => c.mix))];
    const at = (mix: string, p: string) => f.fig6.find((c) => c.mix === mix && c.phase === p);
    t.push({
      title: title('Fig. 6: plb p95 change vs own ref, + = degradation; gap F - P in pp'),
      head: ['mix', 'cls', ...phases],
      rows: mixes.flatMap((mix) => [
        [mix, 'P', ...phases.map((p) => fmtValue(at(mix, p)?.premium ?? null, signed))],
        [mix, 'F', ...phases.map((p) => fmtValue(at(mix, p)?.freemium ?? null, signed))],
        [mix, 'F-P', ...phases.map((p) => fmtValue(at(mix, p)?.gapPp ?? null, (v) => `${v.toFixed(1)}pp`))],
      ]),
    });
  }
  if (f.claims.length > 0) {
    const unit = (m: string): ((v: number) => string) =>
      m === 'goodputRatio'
        ? (v) => `${v.toFixed(2)}x`
        : m === 'gapPp'
          ? (v) => `${v.toFixed(1)} pp`
          : (v) => `${v > 0 ? '+' : ''}${v.toFixed(1)}%`;
    t.push({
      title: title(`paper vs measured (plb medians, 95 % interval; tolerance ±${REPRODUCE_TOLERANCE_PP} pp)`),
      head: ['claim', 'phase', 'mix', 'cls', 'paper', 'measured', '95 % interval', 'verdict'],
      rows: f.claims.map((c) => [
        c.id,
        c.phase,
        c.mix,
        short(c.cls),
        c.published,
        fmtValue(c.measured, unit(c.measure)),
        c.interval ? `${unit(c.measure)(c.interval.lo)}..${unit(c.measure)(c.interval.hi)}` : '-',
        c.verdict,
      ]),
    });
  }
  return t;
}

/** The whole "Paper figures" section, or [] when no group is a paper experiment. */
export function paperSection(
  report: PaperReport | null,
  format: 'table' | 'markdown',
  wide: boolean,
): string[] {
  if (!report) return [];
  const render = format === 'markdown' ? renderMarkdown : renderTable;
  const out: string[] = [format === 'markdown' ? '## Paper figures' : 'Paper figures'];
  for (const f of report.experiments) {
    out.push(...paperTables(f, wide).map(render));
    if (f.experiment === 'rq1') out.push('RQ1: the paper publishes no number for it (measured values only).');
    if (f.plan.endsWith('-quick'))
      out.push(`${f.plan}: the --quick variant (scaled timings); the paper's numbers are for the full plan.`);
    const ids = new Map<string, string[]>();
    for (const c of f.claims) {
      const list = ids.get(c.source) ?? [];
      if (!list.includes(c.id)) list.push(c.id);
      ids.set(c.source, list);
    }
    if (ids.size > 0) out.push([...ids].map(([s, id]) => `${id.join(', ')}: "${s}"`).join('\n'));
  }
  out.push(
    [
      `rule: ${report.rule}`,
      'fault = the whole fault interval (first down until every replica is back, or the end of the run);',
      "life = median lifetime of the sessions that finished in the phase (the paper's observed session lifetime).",
    ].join('\n'),
  );
  return out;
}
