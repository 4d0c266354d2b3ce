// The bar charts of report.html: per phase bars and changes against the baseline, each bar with
// its 95 % interval where the runs have one, and a note naming the bars without.
import type { TopLevelSpec } from 'vega-lite';
import { SERVICE_CLASSES, type ServiceClass } from '../../core/service-class.js';
import type { Comparison, RunGroup } from '../../run-format/report.js';
import { CLASS_COLORS, colorScale, STRATEGY_COLORS, WIDTH } from './chart-style.js';
import { barInterval, changeInterval, missingIntervalNote, NO_INTERVAL_WHY } from './evidence-charts.js';

interface PhaseBar {
  phase: string;
  cls: ServiceClass;
  series: string;
  median: number | null;
  q1: number | null;
  q3: number | null;
  n: number;
  ci: boolean;
}

/** The bars of phaseBarsSpec: the pooled value and its 95 % interval, else median and IQR. */
function phaseBars(groups: readonly RunGroup[], metric: 'p95' | 'goodput'): PhaseBar[] {
  const several = groups.length > 1;
  return groups
    .flatMap((g) =>
      g.phases.flatMap((p) =>
        SERVICE_CLASSES.map((c): PhaseBar => {
          const s = p.classes[c][metric];
          const series = several ? seriesLabel(g, groups) : c;
          const iv = barInterval(g, p.name, c, metric);
          if (iv)
            return { phase: p.name, cls: c, series, median: iv.value, q1: iv.lo, q3: iv.hi, n: 2, ci: true };
          return { phase: p.name, cls: c, series, median: s.median, q1: s.q1, q3: s.q3, n: s.n, ci: false };
        }),
      ),
    )
    .filter((v) => v.median !== null);
}

/** The note under phaseBarsSpec naming the bars without a 95 % interval; null when none. */
export function phaseBarsNote(groups: readonly RunGroup[], metric: 'p95' | 'goodput'): string | null {
  const several = groups.length > 1;
  return missingIntervalNote(
    phaseBars(groups, metric).map((b) => ({
      label: several ? `${b.series} ${b.cls} ${b.phase}` : `${b.cls} ${b.phase}`,
      ci: b.ci,
    })),
    `${NO_INTERVAL_WHY}; those bars show the median, with the IQR over the repeats when there are several`,
  );
}

/**
 * Per phase bars with error bars: the 95 % interval where the runs have per-second data, else
 * the median with its IQR (drawn only when some value comes from several runs). One group: one
 * bar per class. Several: one bar per strategy, one panel per class.
 */
export function phaseBarsSpec(groups: readonly RunGroup[], metric: 'p95' | 'goodput'): TopLevelSpec {
  const several = groups.length > 1;
  const phaseOrder: string[] = [];
  for (const g of groups) for (const p of g.phases) if (!phaseOrder.includes(p.name)) phaseOrder.push(p.name);
  const values = phaseBars(groups, metric);
  const seriesOrder = several ? groups.map((g) => seriesLabel(g, groups)) : [...SERVICE_CLASSES];
  const scale = several
    ? colorScale(
        seriesOrder,
        Object.fromEntries(groups.map((g) => [seriesLabel(g, groups), STRATEGY_COLORS[g.strategy] ?? ''])),
      )
    : colorScale(seriesOrder, CLASS_COLORS);
  const title = metric === 'p95' ? 'p95 per phase (ms)' : 'Goodput per phase (q/s)';
  const showIqr = values.some((v) => v.n > 1 && v.q1 !== null);
  const x = { field: 'phase', type: 'nominal', sort: phaseOrder, title: null, axis: { labelAngle: 0 } };
  const xOffset = { field: 'series', sort: seriesOrder };
  const layer = [
    {
      mark: { type: 'bar' },
      encoding: {
        x,
        xOffset,
        y: { field: 'median', type: 'quantitative', title: metric === 'p95' ? 'ms' : 'q/s' },
        color: { field: 'series', type: 'nominal', title: several ? 'strategy' : 'class', scale },
      },
    },
    ...(showIqr
      ? [
          {
            mark: { type: 'rule', color: '#222', strokeWidth: 1.5 },
            encoding: { x, xOffset, y: { field: 'q1', type: 'quantitative' }, y2: { field: 'q3' } },
          },
        ]
      : []),
  ];
  const ci = values.some((v) => v.ci);
  const sub = ci
    ? values.every((v) => v.ci)
      ? ' — error bar = 95 % interval (block bootstrap over seconds)'
      : ' — error bar = 95 % interval (block bootstrap over seconds), IQR where there is none'
    : showIqr
      ? ' — median, error bar = IQR'
      : '';
  if (!several) {
    return {
      $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
      title: title + sub,
      data: { values },
      width: Math.min(WIDTH, 90 * phaseOrder.length + 60),
      height: 160,
      layer,
    } as TopLevelSpec;
  }
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: title + sub,
    data: { values },
    facet: { column: { field: 'cls', type: 'nominal', title: null, sort: [...SERVICE_CLASSES] } },
    spec: { width: Math.min(340, 70 * phaseOrder.length + 40), height: 160, layer },
    // Premium and freemium differ by the mix: a shared axis would flatten one of them.
    resolve: { scale: { y: 'independent' } },
  } as TopLevelSpec;
}

/** A group's name in a chart: its strategy, plus the mix when several mixes are shown. */
function seriesLabel(g: RunGroup, all: readonly RunGroup[]): string {
  const mixes = new Set(all.map((x) => `${x.plan} ${x.mixLabel}`));
  const name = mixes.size > 1 ? `${g.strategy} ${g.mixLabel}` : g.strategy;
  return g.settingsLabel ? `${name} · ${g.settingsLabel}` : name;
}

/** The note under comparisonSpec naming the changes drawn without a 95 % interval; null when none. */
export function comparisonNote(cmp: Comparison, groups: readonly RunGroup[] = []): string | null {
  return missingIntervalNote(
    cmp.entries.flatMap((e) =>
      e.rows.flatMap((r) =>
        (['p95', 'goodput'] as const)
          .filter((m) => (m === 'p95' ? r.p95Change : r.goodputChange) !== null)
          .map((m) => ({
            label: `${e.strategy} ${r.cls} ${r.phase} ${m}`,
            ci: changeInterval(groups, e, r.phase, r.cls, m) !== null,
          })),
      ),
    ),
    NO_INTERVAL_WHY,
  );
}

/** The change against the baseline, per phase, class and strategy ((value - base) / base). */
export function comparisonSpec(cmp: Comparison, groups: readonly RunGroup[] = []): TopLevelSpec {
  const several = new Set(cmp.entries.map((e) => `${e.plan} ${e.mixLabel}`)).size > 1;
  const label = (e: Comparison['entries'][number]): string => {
    const name = several ? `${e.strategy} ${e.mixLabel}` : e.strategy;
    return e.settingsLabel ? `${name} · ${e.settingsLabel}` : name;
  };
  const values = cmp.entries
    .flatMap((e) =>
      e.rows.flatMap((r) => {
        const p95 = changeInterval(groups, e, r.phase, r.cls, 'p95');
        const gp = changeInterval(groups, e, r.phase, r.cls, 'goodput');
        const base = { series: label(e), phase: r.phase, cls: r.cls };
        return [
          { ...base, metric: 'p95 change', value: r.p95Change, lo: p95?.lo ?? null, hi: p95?.hi ?? null },
          {
            ...base,
            metric: 'goodput change',
            value: r.goodputChange,
            lo: gp?.lo ?? null,
            hi: gp?.hi ?? null,
          },
        ];
      }),
    )
    .filter((v) => v.value !== null);
  const phaseOrder: string[] = [];
  for (const e of cmp.entries)
    for (const r of e.rows) if (!phaseOrder.includes(r.phase)) phaseOrder.push(r.phase);
  const seriesOrder = [...new Set(cmp.entries.map(label))];
  const known = Object.fromEntries(cmp.entries.map((e) => [label(e), STRATEGY_COLORS[e.strategy] ?? '']));
  const x = { field: 'phase', type: 'nominal', sort: phaseOrder, title: null, axis: { labelAngle: 0 } };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: `Change vs ${cmp.baseline} (negative p95 = lower latency, positive goodput = more) — error bar = 95 % interval`,
    data: { values },
    facet: {
      row: { field: 'metric', type: 'nominal', title: null, sort: ['p95 change', 'goodput change'] },
      column: { field: 'cls', type: 'nominal', title: null, sort: [...SERVICE_CLASSES] },
    },
    spec: {
      width: Math.min(340, 70 * phaseOrder.length + 40),
      height: 140,
      layer: [
        {
          mark: { type: 'bar' },
          encoding: {
            x,
            xOffset: { field: 'series', sort: seriesOrder },
            y: { field: 'value', type: 'quantitative', title: null, axis: { format: '+.0%' } },
            color: {
              field: 'series',
              type: 'nominal',
              title: 'strategy',
              scale: colorScale(seriesOrder, known),
            },
          },
        },
        {
          // The 95 % interval of each change (absent for runs without per-second data).
          mark: { type: 'rule', color: '#222', strokeWidth: 1.5 },
          transform: [{ filter: 'datum.lo != null' }],
          encoding: {
            x,
            xOffset: { field: 'series', sort: seriesOrder },
            y: { field: 'lo', type: 'quantitative' },
            y2: { field: 'hi' },
          },
        },
        { mark: { type: 'rule', color: '#000' }, encoding: { y: { datum: 0 } } },
      ],
    },
    resolve: { scale: { y: 'independent' } },
  } as TopLevelSpec;
}
