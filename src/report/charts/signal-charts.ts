// report.html: the balance signals per second (query-share and CPU-share spread over a sliding
// window), from timeline.csv (CPU, health) and seconds.jsonl (queries per replica).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TopLevelSpec } from 'vega-lite';
import type { LoadedRun } from '../../metrics/store/load-run.js';
import { RUN_FILES } from '../../metrics/store/run-writer.js';
import { parseSeconds, type SecondRecord } from '../../metrics/store/seconds.js';
import { round } from '../../metrics/math.js';
import { DEFAULT_SIGNAL_THRESHOLDS, shareSpread } from '../../metrics/signals.js';
import type { TimelineRow } from '../../metrics/store/timeline.js';
import { overlayLayers, overlayOf } from './charts.js';

/**
 * Seconds per point of the per-second spreads: one second of a few hundred queries over a few
 * replicas is mostly noise (the guide takes rates over 5 minutes; a bench phase lasts less).
 */
const SPREAD_WINDOW_S = 5;

export interface SpreadPoint {
  t: number;
  queryShareSpread: number | null;
  cpuShareSpread: number | null;
}

/**
 * Per second t: max/mean over the replicas the router had healthy at t of their queries and of
 * their mean CPU over [t - windowS + 1, t].
 */
export function spreadSeries(
  timeline: readonly TimelineRow[],
  seconds: ReadonlyMap<number, SecondRecord>,
  windowS = SPREAD_WINDOW_S,
): SpreadPoint[] {
  return timeline.map((row, i) => {
    const span = timeline.slice(Math.max(0, i - windowS + 1), i + 1);
    const ids = Object.keys(row.replicas).filter((id) => row.replicas[id]?.healthy !== false);
    const queries = ids.map((id) =>
      span.reduce((s, r) => s + (seconds.get(r.tS)?.replicas[id]?.queries ?? 0), 0),
    );
    const cpus = ids.flatMap((id) => {
      const xs = span.map((r) => r.replicas[id]?.cpu).filter((c): c is number => typeof c === 'number');
      return xs.length > 0 ? [xs.reduce((s, c) => s + c, 0) / xs.length] : [];
    });
    return {
      t: row.tS,
      queryShareSpread: seconds.size > 0 ? round(shareSpread(queries), 4) : null,
      cpuShareSpread: round(shareSpread(cpus), 4),
    };
  });
}

/** seconds.jsonl of a run directory (empty when absent: older runs). */
export function readSeconds(dir: string): Map<number, SecondRecord> {
  const p = join(dir, RUN_FILES.seconds);
  return existsSync(p) ? parseSeconds(readFileSync(p, 'utf8')) : new Map();
}

/** The two spreads per second with their alert thresholds, phases shaded, faults marked. */
export function spreadTimelineSpec(run: LoadedRun, points: readonly SpreadPoint[]): TopLevelSpec {
  const height = 170;
  const t = DEFAULT_SIGNAL_THRESHOLDS;
  const series = [
    { key: 'queryShareSpread' as const, name: `query share (alert > ${t.queryShareSpread})` },
    { key: 'cpuShareSpread' as const, name: `CPU share (alert > ${t.cpuShareSpread})` },
  ];
  const values = series.flatMap((s) => points.map((p) => ({ t: p.t, value: p[s.key], series: s.name })));
  const limits = [
    { value: t.queryShareSpread, series: series[0]?.name },
    { value: t.cpuShareSpread, series: series[1]?.name },
  ];
  const color = {
    field: 'series',
    type: 'nominal',
    title: 'spread',
    scale: { range: ['#1f6fb4', '#c47f00'] },
  };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: `Balance: max/mean over the healthy replicas (${SPREAD_WINDOW_S} s window)`,
    width: 720,
    height,
    layer: [
      ...overlayLayers(overlayOf(run), height),
      {
        data: { values },
        mark: { type: 'line', strokeWidth: 1.2, invalid: 'break-paths-show-domains' },
        encoding: {
          x: { field: 't', type: 'quantitative' },
          y: { field: 'value', type: 'quantitative', title: 'max / mean', scale: { zero: false } },
          color,
        },
      },
      {
        data: { values: limits },
        mark: { type: 'rule', strokeDash: [2, 2], strokeWidth: 1 },
        encoding: { y: { field: 'value', type: 'quantitative' }, color },
      },
    ],
  } as TopLevelSpec;
}
