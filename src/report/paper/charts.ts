// The PLB paper's figures as charts of the comparison page (vega-lite, rendered to SVG by charts/charts.ts).
import type { TopLevelSpec } from 'vega-lite';
import { SERVICE_CLASSES } from '../../core/service-class.js';
import { STRATEGY_COLORS } from '../charts/chart-style.js';
import type { RunGroup } from '../../run-format/report.js';
import { paperFigures, type PaperFigures } from './figures.js';
import { FIG4_METRICS } from '../../run-format/report.js';
import { paperTables } from './render.js';
import type { TableModel } from '../tables/table-model.js';
import { missingIntervalNote, NO_INTERVAL_WHY } from '../charts/evidence-charts.js';

const SCHEMA = 'https://vega.github.io/schema/vega-lite/v5.json';
const METRIC_TITLE = {
  goodput: 'goodput (q/s)',
  p95: 'p95 (ms)',
  lifetimeP50Ms: 'session lifetime p50 (s)',
} as const;
const MIX_COLORS = ['#d9a441', '#6aa84f', '#3d85c6'];

const xPhase = (order: string[]) => ({
  field: 'phase',
  type: 'nominal',
  sort: order,
  title: null,
  axis: { labelAngle: 0 },
});

/**
 * Fig. 4: per phase (and the fault interval), plb vs rr bars with their 95 % intervals (the
 * median with its IQR where there is none); a panel per metric and class.
 */
function fig4Spec(f: PaperFigures): TopLevelSpec | null {
  if (!f.fig4) return null;
  const values = f.fig4.bars
    .filter((b) => b.value.median !== null)
    .map((b) => {
      // Lifetimes in seconds, like the text table.
      const k = b.metric === 'lifetimeP50Ms' ? 1 / 1000 : 1;
      const v = (x: number | null): number | null => (x === null ? null : x * k);
      return {
        phase: b.phase,
        cls: b.cls,
        metric: METRIC_TITLE[b.metric],
        strategy: b.strategy,
        // With per-second data: the pooled value and its 95 % interval; else median and IQR.
        median: v(b.interval ? b.interval.value : b.value.median),
        q1: v(b.interval ? b.interval.lo : b.value.q1),
        q3: v(b.interval ? b.interval.hi : b.value.q3),
      };
    });
  const strategies = ['plb', 'rr'];
  const x = xPhase(f.phases);
  const xOffset = { field: 'strategy', sort: strategies };
  return {
    $schema: SCHEMA,
    title: `Fig. 4 (${f.plan}, mix ${f.fig4.mix}): error bar = 95 % interval (median and IQR where there is none)`,
    data: { values },
    facet: {
      row: { field: 'metric', type: 'nominal', title: null, sort: FIG4_METRICS.map((m) => METRIC_TITLE[m]) },
      column: { field: 'cls', type: 'nominal', title: null, sort: [...SERVICE_CLASSES] },
    },
    spec: {
      width: Math.min(340, 60 * f.phases.length + 40),
      height: 120,
      layer: [
        {
          mark: { type: 'bar' },
          encoding: {
            x,
            xOffset,
            y: { field: 'median', type: 'quantitative', title: null },
            color: {
              field: 'strategy',
              type: 'nominal',
              scale: { domain: strategies, range: strategies.map((s) => STRATEGY_COLORS[s] ?? '#333') },
            },
          },
        },
        {
          mark: { type: 'rule', color: '#222', strokeWidth: 1.5 },
          encoding: { x, xOffset, y: { field: 'q1', type: 'quantitative' }, y2: { field: 'q3' } },
        },
      ],
    },
    resolve: { scale: { y: 'independent' } },
  } as TopLevelSpec;
}

/** Bars of a signed change per phase, one bar per mix, a panel per class, a rule at 0. */
function changeSpec(title: string, order: string[], values: ChangeBar[]): TopLevelSpec | null {
  const shown = values.filter((v) => v.value !== null);
  if (shown.length === 0) return null;
  const mixes = [...new Set(shown.map((v) => v.mix))].sort(
    (a, b) => Number(a.split(':')[0]) - Number(b.split(':')[0]),
  );
  const x = xPhase(order);
  return {
    $schema: SCHEMA,
    title,
    data: { values: shown },
    facet: { column: { field: 'cls', type: 'nominal', title: null, sort: [...SERVICE_CLASSES] } },
    spec: {
      width: Math.min(340, 60 * order.length + 40),
      height: 150,
      layer: [
        {
          mark: { type: 'bar' },
          encoding: {
            x,
            xOffset: { field: 'mix', sort: mixes },
            y: { field: 'value', type: 'quantitative', title: null, axis: { format: '+.0%' } },
            color: {
              field: 'mix',
              type: 'nominal',
              title: 'mix P:F',
              scale: {
                domain: mixes,
                range: mixes.map((_, i) => MIX_COLORS[i % MIX_COLORS.length] ?? '#333'),
              },
            },
          },
        },
        {
          // The 95 % interval of each change (absent for runs without per-second data).
          mark: { type: 'rule', color: '#222', strokeWidth: 1.5 },
          transform: [{ filter: 'datum.lo != null' }],
          encoding: {
            x,
            xOffset: { field: 'mix', sort: mixes },
            y: { field: 'lo', type: 'quantitative' },
            y2: { field: 'hi' },
          },
        },
        { mark: { type: 'rule', color: '#000' }, encoding: { y: { datum: 0 } } },
      ],
    },
  } as TopLevelSpec;
}

interface ChangeBar {
  phase: string;
  cls: string;
  mix: string;
  value: number | null;
  lo: number | null;
  hi: number | null;
}

const bar = (
  phase: string,
  cls: string,
  mix: string,
  value: number | null,
  iv: { lo: number; hi: number } | null | undefined,
): ChangeBar => ({ phase, cls, mix, value, lo: iv?.lo ?? null, hi: iv?.hi ?? null });

const fig5Bars = (f: PaperFigures): ChangeBar[] =>
  f.fig5.map((c) => bar(c.phase, c.cls, c.mix, c.change, c.interval));

const fig6Bars = (f: PaperFigures): ChangeBar[] =>
  f.fig6.flatMap((c) => [
    bar(c.phase, 'premium', c.mix, c.premium, c.premiumInterval),
    bar(c.phase, 'freemium', c.mix, c.freemium, c.freemiumInterval),
  ]);

/** The notes under Fig. 4-6 naming their bars without a 95 % interval (empty when none). */
function paperChartNotes(f: PaperFigures): string[] {
  const changes = (name: string, bars: ChangeBar[]): string | null =>
    missingIntervalNote(
      bars
        .filter((b) => b.value !== null)
        .map((b) => ({ label: `${b.cls} ${b.phase} ${b.mix}`, ci: b.lo !== null })),
      `${NO_INTERVAL_WHY} (${name})`,
    );
  const fig4 = f.fig4
    ? missingIntervalNote(
        f.fig4.bars
          .filter((b) => b.value.median !== null)
          .map((b) => ({ label: `${b.strategy} ${b.cls} ${b.phase}`, ci: b.interval != null })),
        `${NO_INTERVAL_WHY}; those bars show the median and IQR (Fig. 4)`,
      )
    : null;
  return [fig4, changes('Fig. 5', fig5Bars(f)), changes('Fig. 6', fig6Bars(f))].filter(
    (n): n is string => n !== null,
  );
}

/** Fig. 5: (rr - plb) / rr p95 per class, mix and fault phase; positive = plb better. */
function fig5Spec(f: PaperFigures): TopLevelSpec | null {
  const order = [...new Set(f.fig5.map((c) => c.phase))];
  return changeSpec(
    `Fig. 5 (${f.plan}): p95 change vs rr, (rr - plb) / rr, positive = plb better — error bar = 95 % interval`,
    order,
    fig5Bars(f),
  );
}

/** Fig. 6: plb's p95 change vs each class's own ref per phase and mix; positive = degradation. */
function fig6Spec(f: PaperFigures): TopLevelSpec | null {
  const order = [...new Set(f.fig6.map((c) => c.phase))];
  return changeSpec(
    `Fig. 6 (${f.plan}): plb p95 change vs its own ref, positive = degradation — error bar = 95 % interval`,
    order,
    fig6Bars(f),
  );
}

/** The "Paper figures" part of the comparison page: per experiment its charts (SVG) and tables. */
export async function paperHtml(
  groups: readonly RunGroup[],
  chart: (spec: TopLevelSpec) => Promise<string>,
  table: (t: TableModel) => string,
  escape: (s: string) => string,
): Promise<string[]> {
  const report = paperFigures(groups);
  if (!report) return [];
  const parts = ['<h2>Paper figures</h2>'];
  for (const f of report.experiments) {
    parts.push(
      `<h3>${escape(f.plan)} (${f.experiment.toUpperCase()})${f.settings ? ` · ${escape(f.settings)}` : ''}</h3>`,
    );
    for (const spec of [fig4Spec(f), fig5Spec(f), fig6Spec(f)]) if (spec) parts.push(await chart(spec));
    for (const n of paperChartNotes(f)) parts.push(`<p class="note">${escape(n)}</p>`);
    parts.push(...paperTables(f, true).map(table));
  }
  parts.push(
    `<p class="note">${escape(report.rule)} fault = the whole fault interval (first down until every replica is back, or the end of the run).</p>`,
  );
  return parts;
}
