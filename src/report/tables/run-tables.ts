// The per-run-group tables of replicas, failures and detections (the phase table and the
// comparison stay in render.ts).
import { compareReplicaIds } from '../aggregate.js';
import { quantile } from '../../metrics/math.js';
import type { RunGroup } from '../../run-format/report.js';
import { fixed, fmtStat, int, pct, type TableModel, type TableOptions } from './table-model.js';

export function groupTitle(g: RunGroup, iqr = true): string {
  const runs =
    g.runIds.length === 1
      ? `run ${g.runIds[0]}`
      : `${g.runIds.length} runs, median${iqr ? ' [q1..q3]' : 's'}`;
  const settings = g.settingsLabel ? ` · ${g.settingsLabel}` : '';
  return `${g.plan} · ${g.strategy} · mix ${g.mixLabel}${settings} · ${runs}${g.complete ? '' : ' · INCOMPLETE'}`;
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
  // The host's column only where it was sampled (real runs from this version on).
  const host = g.phases.some((p) => p.hostBusy !== undefined);
  const head = wide
    ? [
        'Phase',
        'CPU mean',
        'CPU CV',
        ...perReplica,
        'Client CPU',
        'Loop p99 ms',
        ...(host ? ['Host busy'] : []),
      ]
    : ['Phase', 'CPU', 'CV', ...perReplica, 'Client', 'Loop p99', ...(host ? ['Host'] : [])];
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
      ...(host ? [p.hostBusy ? fmtStat(p.hostBusy, pct, wide) : '-'] : []),
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
