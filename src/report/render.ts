// Text outputs of `plb report`: terminal tables, markdown, CSV (long format) and JSON.
import { stringify } from 'csv-stringify/sync';
import { SERVICE_CLASSES } from '../core/service-class.js';
import { aggregateRuns, compareReplicaIds, settingsDiff } from './aggregate.js';
import { CLASS_METRICS, type RunGroup } from '../run-format/report.js';
import { differLine, sharedLine } from './settings.js';
import { compareStrategies } from './compare.js';
import { type Comparison } from '../run-format/report.js';
import { QUANTILE_METHOD } from './stats.js';
import { type Stat } from '../run-format/report.js';
import { quantile } from '../metrics/math.js';
import type { RunSummary } from '../run-format/summary.js';
import { paperFigures } from './paper-figures.js';
import { paperSection } from './paper-render.js';
import { replicaLatencyTable, signalsTable } from './signals-table.js';
import type { ReportJson } from '../run-format/report.js';

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
import { escapeControl } from '../core/text.js';

export type ReportFormat = 'table' | 'json' | 'csv' | 'markdown';

/**
 * The one sign convention of every change plb prints (against ref, or against a baseline
 * strategy): (value - reference) / reference, so + means the number went up. For latency that
 * is worse, for goodput better.
 */
export const SIGN_CONVENTION = 'Δ = (value - ref) / ref: p95 Δ < 0 is faster, goodput Δ > 0 more.';

export function groupTitle(g: RunGroup, iqr = true): string {
  const runs =
    g.runIds.length === 1
      ? `run ${g.runIds[0]}`
      : `${g.runIds.length} runs, median${iqr ? ' [q1..q3]' : 's'}`;
  const settings = g.settingsLabel ? ` · ${g.settingsLabel}` : '';
  return `${g.plan} · ${g.strategy} · mix ${g.mixLabel}${settings} · ${runs}${g.complete ? '' : ' · INCOMPLETE'}`;
}

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

/** Past this many replicas a table shows their spread (min/median/max), not a column each. */
const MAX_REPLICA_COLUMNS = 12;

export function replicaTable(g: RunGroup, opts: TableOptions = {}): TableModel {
  const wide = opts.wide ?? true;
  const ids = [...new Set(g.phases.flatMap((p) => Object.keys(p.replicas)))].sort(compareReplicaIds);
  const spread = ids.length > MAX_REPLICA_COLUMNS;
  const perReplica = spread
    ? wide
      ? ['CPU min', 'CPU median', 'CPU max']
      : ['min', 'median', 'max']
    : wide
      ? ids.map((id) => `${id} CPU`)
      : ids;
  const head = wide
    ? ['Phase', 'CPU mean', 'CPU CV', ...perReplica, 'Client CPU', 'Loop p99 ms']
    : ['Phase', 'CPU', 'CV', ...perReplica, 'Client', 'Loop p99'];
  const rows = g.phases.map((p) => {
    let cells: string[];
    if (spread) {
      // The replicas' own (median) CPU in the phase, spread across replicas.
      const xs = ids
        .map((id) => p.replicas[id]?.cpuMean.median)
        .filter((x): x is number => typeof x === 'number')
        .sort((a, b) => a - b);
      const at = (q: number): string => {
        const v = quantile(xs, q);
        return v === null ? '-' : pct(v);
      };
      cells = [at(0), at(0.5), at(1)];
    } else {
      cells = ids.map((id) => {
        const r = p.replicas[id];
        return r ? fmtStat(r.cpuMean, pct, wide) : '-';
      });
    }
    return [
      p.name,
      fmtStat(p.cpuMean, pct, wide),
      fmtStat(p.cpuCv, fixed(2), wide),
      ...cells,
      fmtStat(p.harnessCpu, pct, wide),
      fmtStat(p.harnessLoopP99Ms, fixed(1), wide),
    ];
  });
  const what = wide ? 'replicas and the client' : 'replica CPU of quota, client';
  const across = spread ? ` (${ids.length} replicas: their CPU across replicas)` : '';
  return { title: `${groupTitle(g, wide)} · ${what}${across}`, head, rows };
}

/**
 * Failures heard of per replica and phase, by cause, as `unreachable/overloaded/slow`; null when
 * there were none (or the runs predate the classification).
 */
export function failureTable(g: RunGroup, opts: TableOptions = {}): TableModel | null {
  const wide = opts.wide ?? true;
  const ids = [...new Set(g.phases.flatMap((p) => Object.keys(p.replicas)))].sort(compareReplicaIds);
  const any = g.phases.some((p) =>
    ids.some((id) => {
      const r = p.replicas[id];
      return r && [r.unreachable, r.overloaded, r.slow].some((s) => (s.median ?? 0) > 0);
    }),
  );
  if (!any) return null;
  // Many replicas: only those that had failures get a column.
  const shown =
    ids.length > MAX_REPLICA_COLUMNS
      ? ids.filter((id) =>
          g.phases.some((p) => {
            const r = p.replicas[id];
            return r && [r.unreachable, r.overloaded, r.slow].some((s) => (s.median ?? 0) > 0);
          }),
        )
      : ids;
  const rows = g.phases.map((p) => [
    p.name,
    ...shown.map((id) => {
      const r = p.replicas[id];
      return r ? [r.unreachable, r.overloaded, r.slow].map((s) => fmtStat(s, int, wide)).join('/') : '-';
    }),
  ]);
  return {
    title: `${groupTitle(g, wide)} · failures heard of (unreachable/overloaded/slow; only unreachable counts toward fall)`,
    head: ['Phase', ...shown],
    rows,
  };
}

export function detectionTable(g: RunGroup, opts: TableOptions = {}): TableModel | null {
  if (g.detection.length === 0) return null;
  const wide = opts.wide ?? true;
  const d = g.detections;
  const counts =
    d.down.median === null
      ? ''
      : ` (detections: ${fmtStat(d.down, int, wide)} down, ${fmtStat(d.up, int, wide)} up, ${fmtStat(d.unexplained, int, wide)} false)`;
  return {
    title: `${groupTitle(g, wide)} · detection delay${counts}`,
    head: ['Replica', 'Action', '#', 'Delay ms', 'Missed'],
    rows: g.detection.map((d) => [
      d.replica,
      d.action,
      String(d.occurrence),
      fmtStat(d.delayMs, int, wide),
      String(d.missed),
    ]),
  };
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
export function groupNotes(g: RunGroup): string[] {
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

export function tablesOf(g: RunGroup, opts: TableOptions): TableModel[] {
  const d = detectionTable(g, opts);
  const f = failureTable(g, opts);
  const parts = { title: groupTitle, stat: fmtStat };
  const lat = replicaLatencyTable(g, opts.wide ?? true, parts);
  const sig = signalsTable(g, opts.wide ?? true, parts);
  return [
    phaseTable(g, opts),
    replicaTable(g, opts),
    ...(lat ? [lat] : []),
    ...(sig ? [sig] : []),
    ...(f ? [f] : []),
    ...(d ? [d] : []),
  ];
}

const CSV_HEAD = [
  'plan',
  'strategy',
  'mix',
  'runs',
  'phase',
  'subject',
  'metric',
  'median',
  'q1',
  'q3',
  'n',
  'baseline',
  'settings',
];

/** Long format: one row per group, phase, subject (class, replica or `all`) and metric. */
export function renderCsv(groups: readonly RunGroup[], cmp: Comparison | null): string {
  const rows: (string | number | null)[][] = [CSV_HEAD];
  for (const g of groups) {
    const pre = [g.plan, g.strategy, g.mixLabel, g.runIds.length];
    const push = (phase: string, subject: string, metric: string, s: Stat): void => {
      rows.push([...pre, phase, subject, metric, s.median, s.q1, s.q3, s.n, null, g.settingsLabel]);
    };
    for (const p of g.phases) {
      push(p.name, 'all', 'survivors', p.survivors);
      for (const c of SERVICE_CLASSES) for (const m of CLASS_METRICS) push(p.name, c, m, p.classes[c][m]);
      push(p.name, 'all', 'cpuMean', p.cpuMean);
      push(p.name, 'all', 'cpuCv', p.cpuCv);
      push(p.name, 'client', 'cpu', p.harnessCpu);
      push(p.name, 'client', 'loopP99Ms', p.harnessLoopP99Ms);
      for (const [id, r] of Object.entries(p.replicas)) {
        push(p.name, id, 'cpuMean', r.cpuMean);
        push(p.name, id, 'unreachable', r.unreachable);
        push(p.name, id, 'overloaded', r.overloaded);
        push(p.name, id, 'slow', r.slow);
        if (r.p95Ms) push(p.name, id, 'p95Ms', r.p95Ms);
      }
      if (p.signals)
        for (const m of ['queryShareSpread', 'cpuShareSpread', 'weightDeviation'] as const)
          push(p.name, 'signals', m, p.signals[m]);
    }
  }
  for (const e of cmp?.entries ?? []) {
    for (const r of e.rows) {
      const pre = [e.plan, e.strategy, e.mixLabel, e.runs, r.phase, r.cls];
      rows.push([...pre, 'p95Change', r.p95Change, null, null, null, e.baseline, e.settingsLabel]);
      rows.push([...pre, 'goodputChange', r.goodputChange, null, null, null, e.baseline, e.settingsLabel]);
    }
  }
  // null cells are empty; cells holding commas, quotes or newlines are quoted (RFC 4180).
  return stringify(rows);
}

const PER_RUN_HEAD = [
  'run',
  'plan',
  'strategy',
  'mix',
  'seed',
  'complete',
  'phase',
  'invalid',
  'survivors',
  'class',
  'goodput',
  'p50',
  'p95',
  'p99',
  'goodputRetention',
  'p95Inflation',
  'errors',
  'sessionsFailed',
  'sessionsCut',
  'admissionFailures',
  'lifetimeP50Ms',
  'lifetimeP95Ms',
  'connectP95Ms',
  'cpuMean',
  'cpuCv',
];

/** `plb report --csv --per-run`: one row per run, phase and class, the run's own numbers (no medians). */
export function renderCsvPerRun(summaries: readonly RunSummary[]): string {
  const rows: (string | number | null)[][] = [PER_RUN_HEAD];
  for (const s of summaries) {
    for (const p of s.phases) {
      for (const c of SERVICE_CLASSES) {
        const k = p.classes[c];
        rows.push([
          s.runId,
          s.plan,
          s.strategy,
          `${s.mix.premium}:${s.mix.freemium}`,
          s.seed,
          String(s.complete),
          p.name,
          p.invalid ?? null,
          p.survivors,
          c,
          k.goodput,
          k.p50,
          k.p95,
          k.p99,
          k.goodputRetention,
          k.p95Inflation,
          k.errors,
          k.sessionsFailed,
          k.sessionsCut ?? null,
          k.admissionFailures,
          k.lifetimeP50Ms,
          k.lifetimeP95Ms,
          k.connectP95Ms ?? null,
          p.cpuMean,
          p.cpuCv,
        ]);
      }
    }
  }
  return stringify(rows);
}

export function reportJson(groups: RunGroup[], cmp: Comparison | null, baseline: string): ReportJson {
  const paper = paperFigures(groups);
  return {
    schema: 'plb-report/2',
    quantileMethod: QUANTILE_METHOD,
    baseline,
    groups,
    settings: settingsDiff(groups),
    comparison: cmp,
    ...(paper ? { paper } : {}),
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
  if (format === 'csv') return renderCsv(groups, hasCmp ? cmp : null);
  // Markdown is for documents, not terminals: every column.
  const wide = format === 'markdown' || (opts.wide ?? false);
  const tables = groups.flatMap((g) => tablesOf(g, { wide }));
  if (hasCmp) tables.push(comparisonTable(cmp, { wide }));
  const render = format === 'markdown' ? renderMarkdown : renderTable;
  const notes = [
    ...groups.flatMap(groupNotes),
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
  const header = settingsLines(groups).map(escapeControl);
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
