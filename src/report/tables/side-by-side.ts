import Table from 'cli-table3';
import type { ClassPhaseStats, RunSummary } from '../../run-format/summary.js';
import { crossZoneLine, signalsLine } from './signals-table.js';
import { hangLines } from './hang-tables.js';
import { SERVICE_CLASSES } from '../../core/service-class.js';
import { tableStyle } from '../../core/table-style.js';
import { SIGN_CONVENTION } from './render.js';
import { type TableOptions } from './table-model.js';
import { lagLines } from '../../metrics/samplers/lag.js';

const ms = (v: number | null): string => (v === null ? '-' : v < 10 ? v.toFixed(2) : v.toFixed(1));
const pct = (v: number | null): string => (v === null ? '-' : `${v >= 0 ? '+' : ''}${(v * 100).toFixed(0)}%`);
const num = (v: number): string => v.toFixed(1);

/**
 * The phase tables of the runs side by side: one row per phase and class, one column group per
 * run. Wide: p95 ms, its change against ref, goodput q/s, its change against ref, failed sessions.
 * Compact (the default, 100 columns for three runs): p95 ms and the two changes; the failed
 * sessions are in each run's measurement line below.
 */
export function renderSideBySide(summaries: readonly RunSummary[], opts: TableOptions = {}): string {
  if (summaries.length === 0) return 'no runs';
  const wide = opts.wide ?? false;
  const labels = summaries.map((s) => label(s, summaries));
  const head = ['phase', 'K+', 'class'];
  for (const l of labels)
    head.push(
      ...(wide
        ? [`${l}\np95 ms`, `${l}\nΔp95`, `${l}\nq/s`, `${l}\nΔq/s`, `${l}\nfailed`]
        : [`${l}\np95`, `${l}\nΔp95`, `${l}\nΔq/s`]),
    );
  const table = new Table({ head, style: { ...tableStyle(), compact: true } });
  const phases = summaries[0]?.phases ?? [];
  for (const phase of phases) {
    for (const cls of SERVICE_CLASSES) {
      const row = [phase.invalid ? `${phase.name} (invalid)` : phase.name, String(phase.survivors), cls];
      for (const s of summaries) {
        const c: ClassPhaseStats | undefined = s.phases.find((p) => p.name === phase.name)?.classes[cls];
        const goodputChange = c?.goodputRetention == null ? null : c.goodputRetention - 1;
        if (!c) row.push(...(wide ? ['-', '-', '-', '-', '-'] : ['-', '-', '-']));
        else if (wide)
          row.push(
            ms(c.p95),
            pct(c.p95Inflation),
            num(c.goodput),
            pct(goodputChange),
            String(c.sessionsFailed),
          );
        else row.push(ms(c.p95), pct(c.p95Inflation), pct(goodputChange));
      }
      table.push(row);
    }
  }
  const lines = [table.toString()];
  lines.push(`${wide ? '' : 'p95 in ms; '}Δp95, Δq/s: change against ref.`, SIGN_CONVENTION);
  for (const s of summaries) {
    const cpu = s.phases.map(
      (p) =>
        `${p.name} ${p.cpuMean === null ? '-' : `${(p.cpuMean * 100).toFixed(0)}%`}${p.cpuCv === null ? '' : ` cv ${p.cpuCv.toFixed(2)}`}`,
    );
    lines.push(`${label(s, summaries)} replica CPU (mean of quota, cv): ${cpu.join(' | ')}`);
    lines.push(`${label(s, summaries)} ${measurementLine(s)}`);
    for (const l of lagLines(s.phases)) lines.push(`${label(s, summaries)} ${l}`);
    lines.push(`${label(s, summaries)} ${signalsLine(s.phases)}`);
    for (const l of admissionLines(s)) lines.push(`${label(s, summaries)} ${l}`);
    for (const l of hangLines(s)) lines.push(`${label(s, summaries)} ${l}`);
    const zone = crossZoneLine(s.phases);
    if (zone) lines.push(`${label(s, summaries)} ${zone}`);
    for (const e of s.errors ?? []) lines.push(`${label(s, summaries)} incomplete: ${e}`);
  }
  return lines.join('\n');
}

/**
 * Is this run a measurement? The client's worst event-loop delay p99 and CPU, the detections
 * (and how many no fault explains), and the failures heard of by cause.
 */
function measurementLine(s: RunSummary): string {
  const hs = s.phases.flatMap((p) => (p.harness ? [p.harness] : []));
  const loop = hs.length > 0 ? Math.max(...hs.map((h) => h.loopP99Ms ?? 0)) : null;
  const cpu = hs.length > 0 ? Math.max(...hs.map((h) => h.cpuMax ?? 0)) : null;
  const d = s.detectionCounts;
  const sum = (m: 'unreachable' | 'overloaded' | 'slow'): number =>
    s.phases.reduce((n, p) => n + Object.values(p.replicas).reduce((k, r) => k + (r[m] ?? 0), 0), 0);
  const failed = s.phases.reduce(
    (n, p) => n + p.classes.premium.sessionsFailed + p.classes.freemium.sessionsFailed,
    0,
  );
  return [
    `client: event-loop delay p99 (worst phase) ${loop === null ? '-' : `${loop.toFixed(1)} ms`}, CPU max ${cpu === null ? '-' : `${Math.round(cpu * 100)}%`} of a core`,
    d ? `detections ${d.down} down / ${d.up} up, ${d.unexplained} false` : 'detections -',
    `failures heard: ${sum('unreachable')} unreachable, ${sum('overloaded')} overloaded, ${sum('slow')} slow`,
    `${failed} sessions failed`,
  ].join('; ');
}

function label(s: RunSummary, all: readonly RunSummary[]): string {
  const sameStrategy = all.filter((x) => x.strategy === s.strategy).length;
  return sameStrategy > 1
    ? `${s.strategy} #${all.filter((x) => x.strategy === s.strategy).indexOf(s) + 1}`
    : s.strategy;
}

/**
 * With an admission queue (plb-admit, lc-queue): per phase, each class's queue p95 and timeouts
 * (queue time is its own metric, never in query latency), and the recovery tail of every rejoin.
 * Empty for runs without a queue or a rejoin.
 */
function admissionLines(s: RunSummary): string[] {
  const lines: string[] = [];
  const queued = s.phases.filter((p) => p.classes.premium.queueP95Ms !== undefined);
  if (queued.length > 0) {
    const cell = (v: number | null | undefined, t: number | undefined) =>
      `${v === null || v === undefined ? '-' : `${Math.round(v)} ms`}${t ? ` (${t} timed out)` : ''}`;
    lines.push(
      `admission queue p95 (P / F): ${queued
        .map(
          (p) =>
            `${p.name} ${cell(p.classes.premium.queueP95Ms, p.classes.premium.queueTimeouts)} / ${cell(p.classes.freemium.queueP95Ms, p.classes.freemium.queueTimeouts)}`,
        )
        .join(' | ')}`,
    );
  }
  const tail = s.recoveryTail ?? [];
  if (tail.length > 0) {
    const sec = (v: number | null) => (v === null ? 'not in the run' : `${v} s`);
    lines.push(
      `recovery tail (p95 back within 10 % of ref): ${tail
        .map((t) => `${t.phase} premium ${sec(t.premiumS)}, freemium ${sec(t.freemiumS)}`)
        .join(' | ')}`,
    );
  }
  return lines;
}
