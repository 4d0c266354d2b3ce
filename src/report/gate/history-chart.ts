// The nightly history as a chart: per fault phase, each strategy's change of premium's p95 against
// rr night by night, a point with its 95 % interval; written as one HTML page beside the table.
import type { TopLevelSpec } from 'vega-lite';
import { writeFileSafe } from '../../core/safe-write.js';
import { colorScale, STRATEGY_COLORS, WIDTH } from '../charts/chart-style.js';
import { renderSvg } from '../charts/charts.js';
import { historyTable, type HistoryEntry } from './history.js';

interface Point {
  night: string;
  strategy: string;
  phase: string;
  delta: number;
  lo: number | null;
  hi: number | null;
  verdict: string;
}

function points(entries: readonly HistoryEntry[]): Point[] {
  return entries.flatMap((e) =>
    e.cells
      .filter((c) => c.cls === 'premium' && c.metric === 'p95' && c.delta !== null)
      .map((c) => ({
        night: e.at.slice(0, 16).replace('T', ' '),
        strategy: c.strategy,
        phase: c.phase,
        delta: c.delta as number,
        lo: c.lo,
        hi: c.hi,
        verdict: c.verdict ?? '-',
      })),
  );
}

function historyChartSpec(entries: readonly HistoryEntry[]): TopLevelSpec {
  const data = points(entries);
  const strategies = [...new Set(data.map((p) => p.strategy))];
  const color = {
    field: 'strategy',
    type: 'nominal',
    scale: colorScale(strategies, STRATEGY_COLORS),
  } as const;
  const x = { field: 'night', type: 'ordinal', title: 'night (UTC)' } as const;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: "premium p95 against rr, per night (change within the night's run, 95 % interval)",
    data: { values: data },
    facet: { row: { field: 'phase', type: 'nominal', title: 'fault phase' } },
    spec: {
      width: WIDTH - 120,
      height: 140,
      layer: [
        { mark: { type: 'rule', color: '#888' }, encoding: { y: { datum: 0 } } },
        {
          mark: { type: 'rule' },
          encoding: {
            x,
            y: { field: 'lo', type: 'quantitative', axis: { format: '+%' }, title: 'change vs rr' },
            y2: { field: 'hi' },
            color,
          },
        },
        {
          mark: { type: 'point', filled: true },
          encoding: {
            x,
            y: { field: 'delta', type: 'quantitative' },
            color,
            tooltip: [{ field: 'strategy' }, { field: 'verdict' }, { field: 'delta', format: '+.0%' }],
          },
        },
      ],
    },
  } as TopLevelSpec;
}

const escape = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** history.html: the chart and the table, one self-contained page. */
export async function writeHistoryHtml(file: string, entries: readonly HistoryEntry[]): Promise<void> {
  const svg =
    points(entries).length > 0 ? await renderSvg(historyChartSpec(entries)) : '<p>no premium p95 cell</p>';
  const page = `<!doctype html>
<html><head><meta charset="utf-8"><title>plb nightly history</title></head>
<body style="font-family: sans-serif">
<h1>plb nightly history</h1>
${svg}
<pre>${escape(historyTable(entries))}</pre>
</body></html>
`;
  writeFileSafe(file, page, 'html');
}
