// CSV of `plb report --csv`: the long format (one row per metric, medians of repeats, with the
// intervals and verdicts) and, with --per-run, one row per run.
import { stringify } from 'csv-stringify/sync';
import { SERVICE_CLASSES } from '../../core/service-class.js';
import {
  CLASS_METRICS,
  HANG_METRICS,
  type Comparison,
  type PooledStat,
  type RunGroup,
  type Stat,
} from '../../run-format/report.js';
import type { RunSummary } from '../../run-format/summary.js';
import { evidenceCsvRows } from '../evidence/evidence-render.js';

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
  'lo',
  'hi',
  'verdict',
  'detectable',
];

/** Long format: one row per group, phase, subject (class, replica or `all`) and metric. */
export function renderCsv(groups: readonly RunGroup[], cmp: Comparison | null, baseline = 'rr'): string {
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
    // The hang path: phase `hang`, subject `<replica> <action> <occurrence>`, lo/hi the runs' mean's interval.
    const pooled = (phase: string, subject: string, metric: string, s: PooledStat): void => {
      rows.push([
        ...pre,
        phase,
        subject,
        metric,
        s.median,
        s.q1,
        s.q3,
        s.n,
        null,
        g.settingsLabel,
        s.lo,
        s.hi,
      ]);
    };
    for (const f of g.hangPath?.faults ?? [])
      for (const m of HANG_METRICS) pooled('hang', `${f.replica} ${f.action} ${f.occurrence}`, m, f[m]);
    if (g.hangPath) pooled('hang', 'all', 'falseDowns', g.hangPath.falseDowns);
    for (const p of g.sessionShare ?? [])
      for (const [id, r] of Object.entries(p.replicas)) {
        pooled(p.phase, id, 'sessionShare', r.share);
        push(p.phase, id, 'weightShare', r.weightShare);
        push(p.phase, id, 'falseDowns', r.falseDowns);
      }
  }
  for (const e of cmp?.entries ?? []) {
    for (const r of e.rows) {
      const pre = [e.plan, e.strategy, e.mixLabel, e.runs, r.phase, r.cls];
      rows.push([...pre, 'p95Change', r.p95Change, null, null, null, e.baseline, e.settingsLabel]);
      rows.push([...pre, 'goodputChange', r.goodputChange, null, null, null, e.baseline, e.settingsLabel]);
    }
  }
  rows.push(...evidenceCsvRows(groups, baseline));
  // Every row has every column; null cells are empty; cells holding commas, quotes or newlines are quoted (RFC 4180).
  return stringify(
    rows.map((r) =>
      r.length < CSV_HEAD.length ? [...r, ...Array(CSV_HEAD.length - r.length).fill(null)] : r,
    ),
  );
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
