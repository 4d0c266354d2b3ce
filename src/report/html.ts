// report.html: one self-contained file (inline CSS and SVG, no scripts, nothing fetched).
import type { LoadedRun } from '../metrics/store/load-run.js';
import { attachEvidence } from './evidence/evidence.js';
import { evidenceNotes, intervalTables, verdictTable } from './evidence/evidence-render.js';
import { headlineLines } from './evidence/headline.js';
import { aggregateRuns } from './aggregate.js';
import { type RunGroup } from '../run-format/report.js';
import {
  classTimelineSpec,
  cpuTimelineSpec,
  harnessTimelineSpec,
  hasLag,
  lagTimelineSpec,
  renderSvg,
  roleTimelineSpec,
} from './charts/charts.js';
import { comparisonNote, comparisonSpec, phaseBarsNote, phaseBarsSpec } from './charts/bar-charts.js';
import { compareStrategies } from './compare.js';
import { paperHtml } from './paper/charts.js';
import { comparisonTable, groupTables, settingsLines } from './tables/render.js';
import { type TableModel } from './tables/table-model.js';
import { QUANTILE_METHOD } from '../metrics/math.js';
import { hostShortfall } from '../metrics/summary/measurement-warnings.js';
import { readSeconds, spreadSeries, spreadTimelineSpec } from './charts/signal-charts.js';

const CSS = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1d232a;max-width:1200px}
h1{font-size:22px;margin:0 0 6px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2e7;padding-bottom:4px}
.meta{color:#55606b;font-size:13px;margin-bottom:12px} .meta b{color:#1d232a}
.chart{margin:10px 0} .chart svg{max-width:100%;height:auto}
table{border-collapse:collapse;font-size:12px;margin:8px 0 16px} caption{text-align:left;font-weight:600;padding:4px 0}
th,td{border:1px solid #dde2e7;padding:3px 7px;text-align:right;white-space:nowrap}
th{background:#f3f5f7} td:first-child,th:first-child{text-align:left}
.warn{color:#b3261e;font-weight:600} .note{color:#55606b;font-size:12px}
`;

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function tableHtml(t: TableModel): string {
  const head = `<tr>${t.head.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr>`;
  const rows = t.rows.map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`).join('\n');
  return `<table><caption>${escapeHtml(t.title)}</caption>\n<thead>${head}</thead>\n<tbody>\n${rows}\n</tbody></table>`;
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>${CSS}</style></head>
<body>
${body}
</body></html>
`;
}

const chart = (svg: string): string => `<div class="chart">${svg}</div>`;
const noteHtml = (n: string | null): string[] => (n === null ? [] : [`<p class="note">${escapeHtml(n)}</p>`]);

/** Per phase bars with their error bars, and a note naming the bars without an interval. */
async function barChart(groups: readonly RunGroup[], metric: 'p95' | 'goodput'): Promise<string[]> {
  return [chart(await renderSvg(phaseBarsSpec(groups, metric))), ...noteHtml(phaseBarsNote(groups, metric))];
}

/** report.html of one run. */
export async function renderRunHtml(run: LoadedRun): Promise<string> {
  const s = run.summary;
  const [group] = aggregateRuns([s]) as [RunGroup];
  attachEvidence([group], [run]);
  const cfg = run.config;
  const meta = [
    ['strategy', s.strategy],
    ['plan', s.plan],
    ['mix', group.mixLabel],
    ['clients', String(s.clients)],
    ['seed', String(s.seed)],
    ['duration', `${s.durationS} s`],
    ['started', s.startedAt],
    ...(cfg.plbVersion !== undefined ? [['plb', cfg.plbVersion]] : []),
    ...(cfg.environment?.postgres ? [['PostgreSQL', cfg.environment.postgres]] : []),
  ]
    .map(([k, v]) => `${k} <b>${escapeHtml(v ?? '')}</b>`)
    .join(' · ');
  const parts = [
    `<h1>plb run ${escapeHtml(s.runId)}</h1>`,
    `<div class="meta">${meta}</div>`,
    s.complete
      ? ''
      : `<p class="warn">This run did not finish: the numbers cover only what it measured.${
          s.errors && s.errors.length > 0 ? ` ${escapeHtml(s.errors.join('; '))}` : ''
        }</p>`,
    ...s.phases
      .filter((p) => p.invalid)
      .map(
        (p) => `<p class="warn">Phase ${escapeHtml(p.name)} is invalid: ${escapeHtml(p.invalid ?? '')}</p>`,
      ),
    '<h2>Over time</h2>',
  ];
  if (run.timeline.length > 0) {
    parts.push(chart(await renderSvg(classTimelineSpec(run, 'p95'))));
    parts.push(chart(await renderSvg(classTimelineSpec(run, 'goodput'))));
  } else {
    parts.push('<p class="note">No timeline rows in this run directory.</p>');
  }
  parts.push('<h2>Per phase</h2>');
  parts.push(...(await barChart([group], 'p95')));
  parts.push(...(await barChart([group], 'goodput')));
  parts.push(...groupTables(group).map(tableHtml));
  parts.push(...intervalTables([group]).map(tableHtml));
  for (const n of evidenceNotes([group])) parts.push(`<p class="note">${escapeHtml(n)}</p>`);
  if (run.timeline.length > 0 && run.replicaIds.length > 0) {
    parts.push('<h2>Replicas</h2>');
    parts.push(chart(await renderSvg(cpuTimelineSpec(run))));
    parts.push(
      chart(await renderSvg(spreadTimelineSpec(run, spreadSeries(run.timeline, readSeconds(run.dir))))),
    );
    parts.push(chart(await renderSvg(roleTimelineSpec(run))));
    if (hasLag(run)) parts.push(chart(await renderSvg(lagTimelineSpec(run))));
  }
  if (run.timeline.some((r) => r.harness.loopP99Ms !== null)) {
    parts.push('<h2>The client (harness)</h2>');
    const saturated = s.phases.filter((p) => p.harness?.saturated).map((p) => p.name);
    if (saturated.length > 0)
      parts.push(
        `<p class="warn">The client fell behind in ${escapeHtml(saturated.join(', '))}: those latencies measure the harness too.</p>`,
      );
    parts.push(chart(await renderSvg(harnessTimelineSpec(run, 'loop'))));
    parts.push(chart(await renderSvg(harnessTimelineSpec(run, 'cpu'))));
    for (const p of s.phases) {
      const why = hostShortfall(p.harness);
      if (why) parts.push(`<p class="warn">Phase ${escapeHtml(p.name)}: ${escapeHtml(why)}.</p>`);
    }
    if (run.timeline.some((r) => r.harness.hostBusy !== null))
      parts.push(chart(await renderSvg(harnessTimelineSpec(run, 'host'))));
  }
  parts.push(
    `<p class="note">Generated by plb report. Dashed red lines: faults injected; shaded bands: phases.</p>`,
  );
  return page(`plb run ${s.runId}`, parts.filter((p) => p !== '').join('\n'));
}

/** The comparison page of several runs: strategies against the baseline, repeats as median and IQR. */
/** The headline as a block on top of a page. */
function headlineHtml(lines: readonly string[]): string[] {
  if (lines.length === 0) return [];
  return [`<pre class="headline">${escapeHtml(lines.join('\n'))}</pre>`];
}

export async function renderComparisonHtml(groups: readonly RunGroup[], baseline = 'rr'): Promise<string> {
  const cmp = compareStrategies(groups, baseline);
  const runs = groups.reduce((n, g) => n + g.runIds.length, 0);
  const plans = [...new Set(groups.map((g) => g.plan))].join(', ');
  const parts = [
    `<h1>plb comparison: ${escapeHtml(plans)}</h1>`,
    `<div class="meta">${runs} runs in ${groups.length} groups (strategy, plan, mix and settings) · baseline <b>${escapeHtml(
      baseline,
    )}</b> · repeats as median and IQR, quantiles by ${escapeHtml(QUANTILE_METHOD)}</div>`,
    ...settingsLines(groups).map((l) => `<div class="meta">${escapeHtml(l)}</div>`),
    ...headlineHtml(headlineLines(groups, baseline)),
  ];
  if (cmp.entries.length > 0) {
    parts.push(`<h2>Against ${escapeHtml(baseline)}</h2>`);
    parts.push(chart(await renderSvg(comparisonSpec(cmp, groups))));
    parts.push(...noteHtml(comparisonNote(cmp, groups)));
    parts.push(tableHtml(comparisonTable(cmp)));
    const verdicts = verdictTable(groups, baseline, true);
    if (verdicts) parts.push(tableHtml(verdicts));
  }
  for (const k of cmp.missingBaseline)
    parts.push(`<p class="note">No ${escapeHtml(baseline)} runs for ${escapeHtml(k)}.</p>`);
  parts.push('<h2>Per phase</h2>');
  parts.push(...(await barChart(groups, 'p95')));
  parts.push(...(await barChart(groups, 'goodput')));
  parts.push(
    ...(await paperHtml(groups, async (spec) => chart(await renderSvg(spec)), tableHtml, escapeHtml)),
  );
  parts.push('<h2>Tables</h2>');
  parts.push(...groups.flatMap(groupTables).map(tableHtml));
  parts.push(...intervalTables(groups).map(tableHtml));
  return page(`plb comparison: ${plans}`, parts.join('\n'));
}
