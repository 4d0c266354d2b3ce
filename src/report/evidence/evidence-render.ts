// The evidence as tables (terminal, markdown, HTML) and CSV rows: each figure with its 95 %
// interval, each change with its interval and verdict.
import { INTERVAL_METRICS, type IntervalMetric } from '../../metrics/intervals/intervals.js';
import { SERVICE_CLASSES } from '../../core/service-class.js';
import type { RunGroup } from '../../run-format/report.js';
import type { Change, Estimate } from '../../run-format/evidence.js';
import { changeText, verdictText } from './verdicts.js';

interface Model {
  title: string;
  head: string[];
  rows: string[][];
}

const UNIT: Record<IntervalMetric, (v: number) => string> = {
  p50: (v) => v.toFixed(v < 10 ? 2 : 1),
  p95: (v) => v.toFixed(v < 10 ? 2 : 1),
  p99: (v) => v.toFixed(v < 10 ? 2 : 1),
  goodput: (v) => v.toFixed(1),
  lifetime: (v) => (v / 1000).toFixed(2),
};
const LABEL: Record<IntervalMetric, string> = {
  p50: 'p50 ms',
  p95: 'p95 ms',
  p99: 'p99 ms',
  goodput: 'goodput q/s',
  lifetime: 'life p50 s',
};

/** `12.3 [10.1, 15.0]`, or the value alone without an interval. */
function estimateText(e: Estimate, m: IntervalMetric): string {
  if (e.value === null) return '-';
  const f = UNIT[m];
  return e.lo === null || e.hi === null
    ? `${f(e.value)} (no interval)`
    : `${f(e.value)} [${f(e.lo)}, ${f(e.hi)}]`;
}

const changeCell = (c: Change | undefined): string =>
  c === undefined ? '-' : `${changeText(c)} ${verdictText(c)}`;

function label(g: RunGroup): string {
  return `${g.plan} · ${g.strategy} · ${g.mixLabel}${g.settingsLabel ? ` · ${g.settingsLabel}` : ''} (${g.runIds.length} run${g.runIds.length === 1 ? '' : 's'})`;
}

/** Every change against the baseline strategy, with its interval and verdict (one table). */
export function verdictTable(groups: readonly RunGroup[], baseline: string, wide: boolean): Model | null {
  const metrics: IntervalMetric[] = wide ? [...INTERVAL_METRICS] : ['p95', 'goodput'];
  const rows: string[][] = [];
  for (const g of groups) {
    if (!g.evidence?.baselineKey) continue;
    for (const p of g.evidence.phases)
      for (const cls of SERVICE_CLASSES) {
        const c = p.classes[cls];
        rows.push([
          g.strategy,
          g.mixLabel,
          p.name,
          cls,
          ...metrics.map((m) => changeCell(c.vsBaseline?.[m])),
        ]);
      }
  }
  if (rows.length === 0) return null;
  return {
    title: `Change vs ${baseline} with 95 % interval and verdict (Δ = (value - ${baseline}) / ${baseline}; "no diff. (±x%)": x = smallest detectable change)`,
    head: ['Strategy', 'Mix', 'Phase', 'Class', ...metrics.map((m) => `${LABEL[m].split(' ')[0]} Δ`)],
    rows,
  };
}

/** Per group: every figure with its 95 % interval, and its change against ref. */
export function intervalTables(groups: readonly RunGroup[]): Model[] {
  const out: Model[] = [];
  for (const g of groups) {
    const e = g.evidence;
    if (!e) continue;
    const rows: string[][] = [];
    for (const p of e.phases)
      for (const cls of SERVICE_CLASSES) {
        const c = p.classes[cls];
        rows.push([
          p.name,
          cls,
          ...INTERVAL_METRICS.map((m) => estimateText(c.metrics[m], m)),
          changeCell(c.vsRef?.p95),
          changeCell(c.vsRef?.goodput),
          c.note ?? (c.block === null ? '' : `${c.seconds} s, blocks ${c.block} s`),
        ]);
      }
    out.push({
      title: `${label(g)} · 95 % intervals (${g.runIds.length > 1 ? 'pooled over the runs' : 'this run'})`,
      head: ['Phase', 'Class', ...INTERVAL_METRICS.map((m) => LABEL[m]), 'p95 Δref', 'goodput Δref', 'data'],
      rows,
    });
  }
  return out;
}

/** Notes on what got no interval, and invalid runs. */
export function evidenceNotes(groups: readonly RunGroup[]): string[] {
  return [...new Set(groups.flatMap((g) => g.evidence?.notes ?? []))].map((n) => `note: ${n}`);
}

/** CSV rows (the long format's columns): intervals and changes with their verdicts. */
export function evidenceCsvRows(groups: readonly RunGroup[], baseline: string): (string | number | null)[][] {
  const rows: (string | number | null)[][] = [];
  for (const g of groups) {
    const pre = [g.plan, g.strategy, g.mixLabel, g.runIds.length];
    for (const p of g.evidence?.phases ?? [])
      for (const cls of SERVICE_CLASSES) {
        const c = p.classes[cls];
        for (const m of INTERVAL_METRICS) {
          const e = c.metrics[m];
          rows.push([
            ...pre,
            p.name,
            cls,
            `${m} interval`,
            e.value,
            null,
            null,
            null,
            null,
            g.settingsLabel,
            e.lo,
            e.hi,
            c.note ?? null,
            null,
          ]);
          for (const [what, ch] of [
            ['vs ref', c.vsRef?.[m]],
            [`vs ${baseline}`, c.vsBaseline?.[m]],
          ] as const) {
            if (!ch) continue;
            const base = what === 'vs ref' ? 'ref' : baseline;
            rows.push([
              ...pre,
              p.name,
              cls,
              `${m} change`,
              ch.delta,
              null,
              null,
              null,
              base,
              g.settingsLabel,
              ch.lo,
              ch.hi,
              ch.verdict,
              ch.detectable,
            ]);
          }
        }
      }
  }
  return rows;
}
