// The balance-signal and per-replica latency tables of `plb report` (the guide's monitoring
// signals, metrics/signals.ts), one per group, next to the phase and replica tables.
import { DEFAULT_SIGNAL_THRESHOLDS, type SignalThresholds } from '../../metrics/signals.js';
import type { PhaseSummary } from '../../run-format/summary.js';
import { compareReplicaIds } from '../aggregate.js';
import { type RunGroup } from '../../run-format/report.js';
import type { Stat } from '../../run-format/report.js';

export interface SignalTableParts {
  title: (g: RunGroup, wide: boolean) => string;
  stat: (s: Stat, f: (v: number) => string, wide: boolean) => string;
}

interface Table {
  title: string;
  head: string[];
  rows: string[][];
}

const ALERT = 'ALERT';

const two = (v: number): string => v.toFixed(2);

/** `1.82 ALERT` when the median is over the threshold. */
function overCell(s: Stat, limit: number, wide: boolean, parts: SignalTableParts): string {
  const text = parts.stat(s, two, wide);
  return s.median !== null && s.median > limit ? `${text} ${ALERT}` : text;
}

/**
 * Per phase: query-share and CPU-share spread (max/mean over the replicas up), silent replicas,
 * worst realised/configured weight deviation; each against its threshold. Null without signals.
 */
export function signalsTable(
  g: RunGroup,
  wide: boolean,
  parts: SignalTableParts,
  t: SignalThresholds = DEFAULT_SIGNAL_THRESHOLDS,
): Table | null {
  const phases = g.phases.filter((p) => p.signals);
  if (phases.length === 0) return null;
  const head = [
    'Phase',
    `Query spread (>${t.queryShareSpread})`,
    `CPU spread (>${t.cpuShareSpread})`,
    `Silent (>=${t.silentWindowS}s)`,
    `Weight dev (>${t.weightDeviation})`,
  ];
  const rows = phases.map((p) => {
    const s = p.signals!;
    const silent =
      s.silent.length === 0
        ? '-'
        : `${s.silent.join(' ')}${g.runIds.length > 1 ? ` (${s.silentRuns}/${p.runs} runs)` : ''} ${ALERT}`;
    return [
      p.name,
      overCell(s.queryShareSpread, t.queryShareSpread, wide, parts),
      overCell(s.cpuShareSpread, t.cpuShareSpread, wide, parts),
      silent,
      overCell(s.weightDeviation, t.weightDeviation, wide, parts),
    ];
  });
  return {
    title: `${parts.title(g, wide)} · balance signals (max/mean over replicas up; ALERT: over)`,
    head,
    rows,
  };
}

/** Past this many replicas the latency table shows the slowest replica, not a column each. */
const MAX_LATENCY_COLUMNS = 12;

/**
 * p95 of the queries each replica served, per phase (a recovering replica flooded with sessions
 * shows here first). Past MAX_LATENCY_COLUMNS replicas: median, max and which replica. Null
 * when no run recorded it.
 */
export function replicaLatencyTable(g: RunGroup, wide: boolean, parts: SignalTableParts): Table | null {
  const ids = [...new Set(g.phases.flatMap((p) => Object.keys(p.replicas)))].sort(compareReplicaIds);
  if (!g.phases.some((p) => Object.values(p.replicas).some((r) => r.p95Ms))) return null;
  const ms = (v: number): string => v.toFixed(1);
  const title = `${parts.title(g, wide)} · p95 ms of the queries each replica served`;
  if (ids.length <= MAX_LATENCY_COLUMNS) {
    const rows = g.phases.map((p) => [
      p.name,
      ...ids.map((id) => {
        const s = p.replicas[id]?.p95Ms;
        return s ? parts.stat(s, ms, wide) : '-';
      }),
    ]);
    return { title, head: ['Phase', ...ids], rows };
  }
  const rows = g.phases.map((p) => {
    const xs = ids
      .map((id) => ({ id, v: p.replicas[id]?.p95Ms?.median }))
      .filter((x): x is { id: string; v: number } => typeof x.v === 'number')
      .sort((a, b) => a.v - b.v);
    const top = xs[xs.length - 1];
    const mid = xs[Math.floor((xs.length - 1) / 2)];
    return [p.name, mid ? ms(mid.v) : '-', top ? ms(top.v) : '-', top?.id ?? '-'];
  });
  return { title: `${title} (${ids.length} replicas)`, head: ['Phase', 'median', 'max', 'slowest'], rows };
}

const SIGNAL_LABELS = {
  queryShareSpread: 'query spread',
  cpuShareSpread: 'CPU spread',
  silent: 'silent',
  weightDeviation: 'weight dev',
} as const;

/** With zones: the share of sessions opened outside their client's zone, per phase; undefined without. */
export function crossZoneLine(phases: readonly PhaseSummary[]): string | undefined {
  if (!phases.some((p) => p.crossZone)) return undefined;
  const parts = phases.map((p) => {
    const share = p.crossZone?.share;
    return `${p.name} ${share === null || share === undefined ? '-' : `${(share * 100).toFixed(1)}%`}`;
  });
  return `cross-zone sessions: ${parts.join(' | ')}`;
}

/** The bench's one line of a run: the signals over threshold, per phase (`no alert` when none). */
export function signalsLine(
  phases: readonly PhaseSummary[],
  t: SignalThresholds = DEFAULT_SIGNAL_THRESHOLDS,
): string {
  const limits = {
    queryShareSpread: t.queryShareSpread,
    cpuShareSpread: t.cpuShareSpread,
    weightDeviation: t.weightDeviation,
  };
  const parts = phases.flatMap((p) => {
    const s = p.signals;
    if (!s || s.alerts.length === 0) return [];
    const what = s.alerts.map((a) =>
      a === 'silent'
        ? `silent ${s.silent.join(' ')}`
        : `${SIGNAL_LABELS[a]} ${s[a]?.toFixed(2)} > ${limits[a]}`,
    );
    return [`${p.name} ${what.join(', ')}`];
  });
  if (!phases.some((p) => p.signals)) return 'balance signals: -';
  return `balance signals: ${parts.length === 0 ? 'no alert' : `${ALERT} ${parts.join(' | ')}`}`;
}
