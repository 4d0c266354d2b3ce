// Text outputs of `plb report`: terminal tables, markdown, CSV (long format) and JSON.
import { SERVICE_CLASSES } from '../../core/service-class.js';
import { aggregateRuns, settingsDiff } from '../aggregate.js';
import { type RunGroup } from '../../run-format/report.js';
import { differLine, sharedLine } from '../settings.js';
import { compareStrategies } from '../compare.js';
import { type Comparison } from '../../run-format/report.js';
import { QUANTILE_METHOD } from '../../metrics/math.js';
import { type Stat } from '../../run-format/report.js';
import type { RunSummary } from '../../run-format/summary.js';
import { paperFigures } from '../paper/figures.js';
import { paperSection } from '../paper/render.js';
import { replicaLatencyTable, signalsTable } from './signals-table.js';
import { evidenceNotes, intervalTables, verdictTable } from '../evidence/evidence-render.js';
import { headlineLines } from '../evidence/headline.js';
import type { ReportJson } from '../../run-format/report.js';

import {
  fixed,
  fmtStat,
  fmtValue,
  int,
  pct,
  renderMarkdown,
  renderTable,
  seconds,
  signedPct,
  type Fmt,
  type TableModel,
  type TableOptions,
} from './table-model.js';
import { escapeControl } from '../../core/text.js';
import { renderCsv } from './csv.js';
import { detectionTable, failureTable, groupTitle, replicaTable } from './run-tables.js';
import { hangTable, shareTable } from './hang-tables.js';

import { templateTable } from './templates-table.js';
import { routersTable } from './routers-table.js';
import { workersTable } from './workers-table.js';

export type ReportFormat = 'table' | 'json' | 'csv' | 'markdown';

/**
 * The one sign convention of every change plb prints (against ref, or against a baseline
 * strategy): (value - reference) / reference, so + means the number went up. For latency that
 * is worse, for goodput better.
 */
export const SIGN_CONVENTION = 'Δ = (value - ref) / ref: p95 Δ < 0 is faster, goodput Δ > 0 more.';

/** A comparison entry's mix cell: the mix, and the settings its groups differ in. */
function mixCell(e: { mixLabel: string; settingsLabel?: string }): string {
  return e.settingsLabel ? `${e.mixLabel} · ${e.settingsLabel}` : e.mixLabel;
}

/** The report's header: the settings every group shares, and those the groups differ in. */
export function settingsLines(groups: readonly RunGroup[]): string[] {
  const diff = settingsDiff(groups);
  return [sharedLine(diff), differLine(diff)].filter((l): l is string => l !== null);
}

/** Compact: the medians of phase, K+, class, goodput, p95, p99, retention, p95 Δ, errors, failed sessions. */
export function phaseTable(g: RunGroup, opts: TableOptions = {}): TableModel {
  if (opts.wide === false) {
    const rows: string[][] = [];
    for (const p of g.phases) {
      for (const c of SERVICE_CLASSES) {
        const s = p.classes[c];
        const m = (st: Stat, f: Fmt): string => fmtStat(st, f, false);
        rows.push([
          p.invalid.length > 0 ? `${p.name} (invalid)` : p.name,
          m(p.survivors, int),
          c,
          m(s.goodput, fixed(1)),
          m(s.p95, fixed(1)),
          m(s.p99, fixed(1)),
          m(s.goodputRetention, pct),
          m(s.p95Inflation, signedPct),
          m(s.errors, int),
          m(s.sessionsFailed, int),
        ]);
      }
    }
    const head = [
      'Phase',
      'K+',
      'Class',
      'q/s',
      'p95 ms',
      'p99 ms',
      'Retain',
      'p95 Δref',
      'Errors',
      'Failed',
    ];
    return { title: groupTitle(g, false), head, rows };
  }
  const head = [
    'Phase',
    'K+',
    'Class',
    'Goodput q/s',
    'p50 ms',
    'p95 ms',
    'p99 ms',
    'Retention',
    'p95 infl.',
    'Life p50 s',
    'Life p95 s',
    'Errors',
    'Sess. failed',
    'Sess. cut',
    'Adm. failed',
    'Conn p95 ms',
  ];
  const rows: string[][] = [];
  for (const p of g.phases) {
    for (const c of SERVICE_CLASSES) {
      const s = p.classes[c];
      rows.push([
        p.invalid.length > 0 ? `${p.name} (invalid)` : p.name,
        fmtStat(p.survivors, int),
        c,
        fmtStat(s.goodput, fixed(1)),
        fmtStat(s.p50, fixed(1)),
        fmtStat(s.p95, fixed(1)),
        fmtStat(s.p99, fixed(1)),
        fmtStat(s.goodputRetention, pct),
        fmtStat(s.p95Inflation, signedPct),
        fmtStat(s.lifetimeP50Ms, seconds),
        fmtStat(s.lifetimeP95Ms, seconds),
        fmtStat(s.errors, int),
        fmtStat(s.sessionsFailed, int),
        fmtStat(s.sessionsCut, int),
        fmtStat(s.admissionFailures, int),
        fmtStat(s.connectP95Ms, fixed(1)),
      ]);
    }
  }
  return { title: groupTitle(g), head, rows };
}

export function comparisonTable(cmp: Comparison, opts: TableOptions = {}): TableModel {
  const title = `Change vs ${cmp.baseline}. ${SIGN_CONVENTION}`;
  if (opts.wide === false) {
    // Compact: the plan goes into the title when there is one, the baseline's values go.
    const plans = [...new Set(cmp.entries.map((e) => e.plan))];
    const onePlan = plans.length === 1;
    const head = [...(onePlan ? [] : ['Plan']), 'Mix', 'Strategy', 'Phase', 'Class', 'p95 ms', 'p95 Δ'];
    head.push('Goodput', 'Goodput Δ');
    const rows = cmp.entries.flatMap((e) =>
      e.rows.map((r) => [
        ...(onePlan ? [] : [e.plan]),
        mixCell(e),
        e.strategy,
        r.phase,
        r.cls,
        fmtValue(r.p95, fixed(1)),
        fmtValue(r.p95Change, signedPct),
        fmtValue(r.goodput, fixed(1)),
        fmtValue(r.goodputChange, signedPct),
      ]),
    );
    return { title: onePlan ? `${plans[0]} · ${title}` : title, head, rows };
  }
  const head = ['Plan', 'Mix', 'Strategy', 'Phase', 'Class', 'p95 ms', `p95 ${cmp.baseline}`, 'p95 Δ'];
  head.push('Goodput', `Goodput ${cmp.baseline}`, 'Goodput Δ');
  const rows: string[][] = [];
  for (const e of cmp.entries) {
    for (const r of e.rows) {
      rows.push([
        e.plan,
        mixCell(e),
        e.strategy,
        r.phase,
        r.cls,
        fmtValue(r.p95, fixed(1)),
        fmtValue(r.baseP95, fixed(1)),
        fmtValue(r.p95Change, signedPct),
        fmtValue(r.goodput, fixed(1)),
        fmtValue(r.baseGoodput, fixed(1)),
        fmtValue(r.goodputChange, signedPct),
      ]);
    }
  }
  return { title, head, rows };
}

/** What makes a group's numbers less than a clean measurement: invalid phases, incomplete runs. */
function groupNotes(g: RunGroup): string[] {
  const out: string[] = [];
  for (const p of g.phases) for (const why of p.invalid) out.push(`invalid phase ${p.name}: ${why}`);
  for (const why of g.problems) out.push(`incomplete run ${why}`);
  // A cluster that cannot say (an external one without cpu hooks): "-" is not measured, not idle.
  if (g.phases.length > 0 && g.phases.every((p) => p.cpuMean.n === 0))
    out.push('replica CPU not measured (the cpu columns show -): the cluster gave no CPU figures');
  if (g.excluded.length > 0)
    out.push(
      `left out of the medians (incomplete; --include-incomplete adds them): ${g.excluded.join(', ')}`,
    );
  return out.length > 0 ? [`${groupTitle(g)}\n${out.map((l) => `  ${l}`).join('\n')}`] : [];
}

/** Every table of a group, wide (HTML). */
export function groupTables(g: RunGroup): TableModel[] {
  return tablesOf(g, { wide: true });
}

function tablesOf(g: RunGroup, opts: TableOptions): TableModel[] {
  const d = detectionTable(g, opts);
  const f = failureTable(g, opts);
  const parts = { title: groupTitle, stat: fmtStat };
  const lat = replicaLatencyTable(g, opts.wide ?? true, parts);
  const sig = signalsTable(g, opts.wide ?? true, parts);
  const tpl = templateTable(g, opts.wide ?? true, parts);
  const routers = routersTable(g, opts.wide ?? true, groupTitle);
  const workers = workersTable(g, groupTitle);
  const hang = hangTable(g, opts);
  const share = shareTable(g, opts);
  return [
    phaseTable(g, opts),
    replicaTable(g, opts),
    ...(lat ? [lat] : []),
    ...(sig ? [sig] : []),
    ...(tpl ? [tpl] : []),
    ...(routers ? [routers] : []),
    ...(workers ? [workers] : []),
    ...(f ? [f] : []),
    ...(d ? [d] : []),
    ...(hang ? [hang] : []),
    ...(share ? [share] : []),
  ];
}

export function reportJson(groups: RunGroup[], cmp: Comparison | null, baseline: string): ReportJson {
  const paper = paperFigures(groups);
  const headline = headlineLines(groups, baseline);
  return {
    schema: 'plb-report/3',
    quantileMethod: QUANTILE_METHOD,
    baseline,
    groups,
    settings: settingsDiff(groups),
    comparison: cmp,
    ...(paper ? { paper } : {}),
    ...(headline.length > 0 ? { headline } : {}),
  };
}

/** The whole report of some groups in one format (what `plb report` prints). */
export function renderReport(
  groups: RunGroup[],
  opts: { format?: ReportFormat; baseline?: string; wide?: boolean } = {},
): string {
  const baseline = opts.baseline ?? 'rr';
  const format = opts.format ?? 'table';
  const cmp = compareStrategies(groups, baseline);
  const hasCmp = cmp.entries.length > 0;
  if (format === 'json')
    return JSON.stringify(reportJson(groups, hasCmp ? cmp : null, baseline), null, 2) + '\n';
  if (format === 'csv') return renderCsv(groups, hasCmp ? cmp : null, baseline);
  // Markdown is for documents, not terminals: every column.
  const wide = format === 'markdown' || (opts.wide ?? false);
  const tables = groups.flatMap((g) => tablesOf(g, { wide }));
  if (hasCmp) tables.push(comparisonTable(cmp, { wide }));
  const verdicts = verdictTable(groups, baseline, wide);
  if (verdicts) tables.push(verdicts);
  if (wide) tables.push(...intervalTables(groups));
  const render = format === 'markdown' ? renderMarkdown : renderTable;
  const notes = [
    ...groups.flatMap(groupNotes),
    ...evidenceNotes(groups),
    ...cmp.missingBaseline.map((k) =>
      escapeControl(`note: no ${baseline} runs for ${k}, so no comparison there`),
    ),
  ];
  const footer = [
    // The comparison's title states the convention; without one, the footer does (p95 Δref).
    ...(hasCmp ? [] : [`p95 Δref: change against ref. ${SIGN_CONVENTION}`]),
    ...(wide ? [] : ['--wide: every column (lifetimes, sessions cut, admission, connect time) and IQRs']),
    ...(groups.some((g) => g.runIds.length > 1) ? [`quantiles: ${QUANTILE_METHOD}`] : []),
  ];
  const headline = headlineLines(groups, baseline).map(escapeControl);
  const header = [
    ...(headline.length > 0 ? [headline.join('\n')] : []),
    ...settingsLines(groups).map(escapeControl),
  ];
  const paper = paperSection(paperFigures(groups), format === 'markdown' ? 'markdown' : 'table', wide);
  return [...header, ...tables.map(render), ...paper, ...notes, ...footer].join('\n\n') + '\n';
}

/**
 * The strategy comparison alone (what `plb bench matrix` prints at its end): from run summaries
 * or groups made by aggregateRuns, against `baseline` (default rr).
 */
export function renderComparison(
  input: readonly RunSummary[] | readonly RunGroup[],
  opts: { baseline?: string; format?: ReportFormat; wide?: boolean } = {},
): string {
  const groups = isGroups(input) ? [...input] : aggregateRuns(input as readonly RunSummary[]);
  const baseline = opts.baseline ?? 'rr';
  const cmp = compareStrategies(groups, baseline);
  const format = opts.format ?? 'table';
  if (format === 'json') return JSON.stringify(cmp, null, 2) + '\n';
  if (format === 'csv') return renderCsv([], cmp);
  const t = comparisonTable(cmp, { wide: format === 'markdown' || (opts.wide ?? false) });
  const notes = cmp.missingBaseline.map((k) => escapeControl(`note: no ${baseline} runs for ${k}`));
  return [format === 'markdown' ? renderMarkdown(t) : renderTable(t), ...notes].join('\n') + '\n';
}

function isGroups(input: readonly RunSummary[] | readonly RunGroup[]): input is readonly RunGroup[] {
  const first = input[0] as Partial<RunGroup> | undefined;
  return first !== undefined && Array.isArray(first.runIds);
}
