// map.html: one heatmap per claim (reference load x queries per session, a panel per mix, the
// colour the verdict, the text the measured value) and the centre's sweeps and ablations beside
// the accepted range. Self-contained like report.html: vega-lite rendered to inline SVG.
import type { TopLevelSpec } from 'vega-lite';
import type { MapJson } from '../../run-format/paper-map.js';
import { claimVerdictSchema, type ClaimVerdict } from '../../run-format/report.js';
import { renderSvg } from '../charts/charts.js';
import { escapeHtml, tableHtml } from '../html.js';
import { acceptedRange } from './intervals.js';
import { PUBLISHED_CLAIMS } from './published.js';
import { ablationTable, cellLabel, cellTable, claimKey, claimKeys, summaryTable } from './map.js';

const SCHEMA = 'https://vega.github.io/schema/vega-lite/v5.json';
const VERDICT_COLOR: Record<ClaimVerdict, string> = {
  reproduced: '#2a9d3a',
  contradicted: '#c0392b',
  inconclusive: '#e9c46a',
  'no interval': '#9aa5b1',
  'not measured': '#d0d4d8',
};
const VERDICTS = claimVerdictSchema.options;
const VERDICT_COLORS = VERDICTS.map((v) => VERDICT_COLOR[v]);

const CSS = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1d232a;max-width:1200px}
h1{font-size:22px;margin:0 0 6px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2e7;padding-bottom:4px}
.meta{color:#55606b;font-size:13px;margin-bottom:12px} .chart{margin:10px 0} .chart svg{max-width:100%;height:auto}
table{border-collapse:collapse;font-size:12px;margin:8px 0 16px} caption{text-align:left;font-weight:600;padding:4px 0}
th,td{border:1px solid #dde2e7;padding:3px 7px;text-align:right;white-space:nowrap}
th{background:#f3f5f7} td:first-child,th:first-child{text-align:left} .note{color:#55606b;font-size:12px}
`;

const fmt = (v: number | null, unit: string): string =>
  v === null ? '-' : unit === 'x' ? v.toFixed(2) : `${v > 0 ? '+' : ''}${Math.round(v)}`;

const unitOf = (published: string): string =>
  published.endsWith('pp') ? 'pp' : published.endsWith('x') ? 'x' : '%';

/** The heatmap of one claim: x reference CPU, y queries per session, a panel per mix. */
function claimHeatmapSpec(map: MapJson, key: string): TopLevelSpec | null {
  const values = map.claims
    .filter((c) => claimKey(c) === key)
    .flatMap((c) => {
      const cell = map.cells.find((x) => x.id === c.cell);
      if (!cell || cell.kind !== 'heatmap') return [];
      return [
        {
          cpu: `${Math.round(cell.settings.targetCpu * 100)}%`,
          cpuN: cell.settings.targetCpu,
          qps: cell.settings.queriesPerSession,
          mix: c.mix,
          verdict: c.verdict,
          text: fmt(c.measured, unitOf(c.published)),
        },
      ];
    });
  if (values.length === 0) return null;
  const cpus = [...new Set(values.sort((a, b) => a.cpuN - b.cpuN).map((v) => v.cpu))];
  return {
    $schema: SCHEMA,
    data: { values },
    facet: { column: { field: 'mix', type: 'nominal', title: 'mix P:F' } },
    spec: {
      width: 70 * cpus.length,
      height: 40 * new Set(values.map((v) => v.qps)).size,
      encoding: {
        x: {
          field: 'cpu',
          type: 'ordinal',
          sort: cpus,
          title: 'reference replica CPU',
          axis: { labelAngle: 0 },
        },
        y: { field: 'qps', type: 'ordinal', sort: 'descending', title: 'queries per session' },
      },
      layer: [
        {
          mark: { type: 'rect', stroke: '#fff' },
          encoding: {
            color: {
              field: 'verdict',
              type: 'nominal',
              scale: { domain: VERDICTS, range: VERDICT_COLORS },
              title: 'verdict',
            },
          },
        },
        { mark: { type: 'text', fontSize: 11 }, encoding: { text: { field: 'text', type: 'nominal' } } },
      ],
    },
  } as TopLevelSpec;
}

/** The centre, sweeps and ablations of one claim: measured value and interval against the accepted range. */
function claimSweepSpec(map: MapJson, key: string): TopLevelSpec | null {
  const rows = map.claims
    .filter((c) => claimKey(c) === key)
    .flatMap((c) => {
      const cell = map.cells.find((x) => x.id === c.cell);
      if (!cell || (cell.kind === 'heatmap' && cell.id !== map.centre) || c.measured === null) return [];
      return [
        {
          cell: cell.id === map.centre ? `centre (${cellLabel(cell)})` : cell.label,
          value: c.measured,
          lo: c.interval?.lo ?? c.measured,
          hi: c.interval?.hi ?? c.measured,
          verdict: c.verdict,
        },
      ];
    });
  if (rows.length === 0) return null;
  const first = map.claims.find((c) => claimKey(c) === key);
  const claim = PUBLISHED_CLAIMS.find((p) => p.id === first?.claim);
  const range = claim ? acceptedRange(claim) : null;
  const finite = (v: number) => (Number.isFinite(v) ? v : Math.max(...rows.map((r) => r.hi), v < 0 ? 0 : 1));
  return {
    $schema: SCHEMA,
    width: 520,
    height: 22 * rows.length,
    layer: [
      ...(range
        ? [
            {
              data: { values: [{ lo: finite(range.lo), hi: finite(range.hi) }] },
              mark: { type: 'rect' as const, color: '#2a9d3a', opacity: 0.15 },
              encoding: { x: { field: 'lo', type: 'quantitative' as const }, x2: { field: 'hi' } },
            },
          ]
        : []),
      {
        data: { values: rows },
        layer: [
          {
            mark: { type: 'rule' },
            encoding: {
              y: { field: 'cell', type: 'nominal', title: null, sort: null },
              x: {
                field: 'lo',
                type: 'quantitative',
                title: `measured (${unitOf(first?.published ?? '')}), 95 % interval; green: accepted range`,
              },
              x2: { field: 'hi' },
            },
          },
          {
            mark: { type: 'point', filled: true, size: 60 },
            encoding: {
              y: { field: 'cell', type: 'nominal', sort: null },
              x: { field: 'value', type: 'quantitative' },
              color: {
                field: 'verdict',
                type: 'nominal',
                scale: { domain: VERDICTS, range: VERDICT_COLORS },
              },
            },
          },
        ],
      },
    ],
  } as TopLevelSpec;
}

export async function renderMapHtml(map: MapJson): Promise<string> {
  const chart = async (spec: TopLevelSpec | null): Promise<string> =>
    spec ? `<div class="chart">${await renderSvg(spec)}</div>` : '';
  const parts = [
    `<h1>plb paper map: ${escapeHtml(map.grid)}</h1>`,
    `<div class="meta">${map.cells.length} cells on the simulator, T=${map.clients} closed clients (open cells: Poisson sessions), ${escapeHtml(
      map.plans,
    )} paper plans, seed ${map.seed}, ${map.repeat} repeat(s) a cell; each cell runs RQ2 (plb, rr) and RQ3 (plb). A claim made from the simulator alone.</div>`,
    `<div class="meta">${escapeHtml(map.rule)}</div>`,
    tableHtml(summaryTable(map)),
  ];
  for (const key of claimKeys(map)) {
    const c = map.claims.find((x) => claimKey(x) === key);
    parts.push(`<h2>${escapeHtml(key)} · paper ${escapeHtml(c?.published ?? '')}</h2>`);
    parts.push(await chart(claimHeatmapSpec(map, key)));
    parts.push(await chart(claimSweepSpec(map, key)));
  }
  parts.push('<h2>Tables</h2>');
  const abl = ablationTable(map);
  if (abl) parts.push(tableHtml(abl));
  parts.push(tableHtml(cellTable(map)));
  parts.push(
    `<p class="note">${claimKeys(map)
      .map((k, i) => `c${i + 1} = ${escapeHtml(k)}`)
      .join('; ')}</p>`,
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>plb paper map: ${escapeHtml(map.grid)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>${CSS}</style></head>
<body>
${parts.join('\n')}
</body></html>
`;
}
