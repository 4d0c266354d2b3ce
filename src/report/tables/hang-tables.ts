// The hang path of each fault that cut a replica off, and each phase's session shares, per group.
import { compareReplicaIds } from '../../core/replica-ids.js';
import type { AggregatedShare, PooledStat, RunGroup, Stat } from '../../run-format/report.js';
import type { RunSummary } from '../../run-format/summary.js';
import { groupTitle } from './run-tables.js';
import { fmtStat, int, type Fmt, type TableModel, type TableOptions } from './table-model.js';

/** ms shown as seconds with two decimals (detection times are a few seconds). */
const secs: Fmt = (v) => (v / 1000).toFixed(2);
const share: Fmt = (v) => `${(v * 100).toFixed(1)}%`;
const sharePct: Fmt = (v) => `${Math.round(v * 100)}%`;

/** `lo..hi` of the runs' mean (3 runs or more), else `-`. */
function interval(s: PooledStat, f: Fmt): string {
  return s.lo === null || s.hi === null ? '-' : `${f(s.lo)}..${f(s.hi)}`;
}

/**
 * One row per fault that made a replica unreachable (down, stop, pause, partition, reset): the
 * time from injection to down (first, by the checker, the first failure a session met), the
 * sessions on it then and how long they waited, and what it failed. Null without such a fault.
 */
export function hangTable(g: RunGroup, opts: TableOptions = {}): TableModel | null {
  const h = g.hangPath;
  if (!h || h.faults.length === 0) return null;
  const wide = opts.wide ?? true;
  const st = (s: Stat, f: Fmt): string => fmtStat(s, f, wide);
  const falseDowns = h.falseDowns.median === null ? '' : `; false downs ${st(h.falseDowns, int)}`;
  const title = `${groupTitle(g, wide)} · hang path, s from injection${falseDowns}`;
  if (!wide) {
    return {
      title,
      head: [
        'Replica',
        'Action',
        'Down s',
        'By',
        'Passive s',
        'On it',
        'Wait p50',
        'Wait max',
        'Shut',
        'Timeouts',
      ],
      rows: h.faults.map((f) => [
        f.occurrence > 1 ? `${f.replica} #${f.occurrence}` : f.replica,
        f.action,
        st(f.downMs, secs),
        f.downVia.join('/') || '-',
        st(f.passiveMs, secs),
        st(f.sessions, int),
        st(f.waitP50Ms, secs),
        st(f.waitMaxMs, secs),
        st(f.shutdown, int),
        st(f.queryTimeouts, int),
      ]),
    };
  }
  return {
    title,
    head: [
      'Replica',
      'Action',
      '#',
      'Down s',
      'Down 95% CI',
      'By',
      'Checker s',
      'Passive s',
      'Sessions on it',
      'Wait p50 s',
      'Wait max s',
      'Wait max 95% CI',
      'Failed',
      'Shut down',
      'Connects shut',
      'Still open',
      'Query timeouts',
      'Connects failed',
      'Missed',
    ],
    rows: h.faults.map((f) => [
      f.replica,
      f.action,
      String(f.occurrence),
      st(f.downMs, secs),
      interval(f.downMs, secs),
      f.downVia.join('/') || '-',
      st(f.checkerMs, secs),
      st(f.passiveMs, secs),
      st(f.sessions, int),
      st(f.waitP50Ms, secs),
      st(f.waitMaxMs, secs),
      interval(f.waitMaxMs, secs),
      st(f.failed, int),
      st(f.shutdown, int),
      st(f.connectsShut, int),
      st(f.open, int),
      st(f.queryTimeouts, int),
      st(f.connectsFailed, int),
      `${f.missed}/${f.runs}`,
    ]),
  };
}

/** Past this many replicas only those degraded, down or falsely taken for down get a column. */
const MAX_SHARE_COLUMNS = 12;

function shownReplicas(rows: readonly AggregatedShare[]): { ids: string[]; all: boolean } {
  const ids = [...new Set(rows.flatMap((p) => Object.keys(p.replicas)))].sort(compareReplicaIds);
  if (ids.length <= MAX_SHARE_COLUMNS) return { ids, all: true };
  const named = new Set(rows.flatMap((p) => p.degraded.map((d) => d.split(' ')[0] ?? '')));
  const keep = ids.filter(
    (id) =>
      named.has(id) ||
      rows.some((p) => {
        const r = p.replicas[id];
        return r !== undefined && (r.weightShare.median === null || (r.falseDowns.median ?? 0) > 0);
      }),
  );
  return { ids: keep, all: false };
}

/**
 * Per phase: each replica's share of the sessions opened next to its weight's share over the
 * replicas up (a degraded replica's should fall under the load-aware strategies), the degraded
 * replicas named, and down detections no fault explains. Null without a fault.
 */
export function shareTable(g: RunGroup, opts: TableOptions = {}): TableModel | null {
  const rows = g.sessionShare;
  if (!rows || rows.length < 2) return null;
  const wide = opts.wide ?? true;
  const { ids, all } = shownReplicas(rows);
  const cell = (r: AggregatedShare['replicas'][string] | undefined): string => {
    if (!r) return '-';
    const w = r.weightShare.median === null ? '-' : (wide ? share : sharePct)(r.weightShare.median);
    return `${fmtStat(r.share, wide ? share : sharePct, wide)} / ${w}`;
  };
  const falseDowns = (p: AggregatedShare): string => {
    const n = Object.values(p.replicas).reduce((sum, r) => sum + (r.falseDowns.median ?? 0), 0);
    return String(Math.round(n * 10) / 10);
  };
  return {
    title: `${groupTitle(g, wide)} · session share: of the sessions opened / of the weight up${all ? '' : ` (${ids.length} replicas shown: degraded, down or falsely down)`}`,
    head: ['Phase', 'Degraded', ...(wide ? ['Sessions'] : []), ...ids, 'False downs'],
    rows: rows.map((p) => [
      p.phase,
      p.degraded.join(', ') || '-',
      ...(wide ? [fmtStat(p.sessions, int, wide)] : []),
      ...ids.map((id) => cell(p.replicas[id])),
      falseDowns(p),
    ]),
  };
}

/**
 * A run's hang path in a line per fault (the bench's closing text): `hang r2 partition: down
 * after 6.0 s (health), 12 sessions on it waited p50 6.0 s, max 6.1 s; 0 query timeouts`.
 */
export function hangLines(s: RunSummary): string[] {
  const sec = (v: number | null): string => (v === null ? '-' : `${(v / 1000).toFixed(1)} s`);
  return (s.hangPath?.faults ?? []).map((f) => {
    const down = f.downMs === null ? 'never marked down' : `down after ${sec(f.downMs)} (${f.downVia})`;
    const shut = f.shutdown > 0 || (f.connectsShut ?? 0) > 0 ? `, ${f.shutdown} shut down` : '';
    return `hang ${f.replica} ${f.action}: ${down}, ${f.sessions} sessions on it waited p50 ${sec(f.waitP50Ms)}, max ${sec(f.waitMaxMs)}${shut}; ${f.queryTimeouts} query timeouts, ${f.connectsFailed} connects failed`;
  });
}
