// The replication-lag chart of report.html: one line per replica, in the style of the CPU chart.
import type { TopLevelSpec } from 'vega-lite';
import { compareReplicaIds } from '../cluster/driver.js';
import type { LoadedRun } from '../metrics/load-run.js';
import { bucketize, overlayLayers, overlayOf, WIDTH } from './charts.js';

/** A run with lag samples (the write workload was on). */
export function hasLag(run: LoadedRun): boolean {
  return run.timeline.some((r) => Object.values(r.replicas).some((c) => c.lagMs !== null));
}

/** Each replica's replication lag (ms) over time, with the faults and phases overlaid. */
export function lagTimelineSpec(run: LoadedRun): TopLevelSpec {
  const height = 170;
  const ids = [...run.replicaIds].sort(compareReplicaIds);
  const values = ids.flatMap((id) =>
    bucketize(
      run.timeline,
      (r) => r.replicas[id]?.lagMs ?? null,
      (r) => r.tS,
    ).map((p) => ({ ...p, series: id })),
  );
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: "Replication lag per replica (ms: the standby's time since its last replayed commit)",
    width: WIDTH,
    height,
    layer: [
      ...overlayLayers(overlayOf(run), height),
      {
        data: { values },
        mark: { type: 'line', strokeWidth: 1.2, invalid: 'break-paths-show-domains' },
        encoding: {
          x: { field: 't', type: 'quantitative' },
          y: { field: 'value', type: 'quantitative', title: 'lag ms' },
          color: { field: 'series', type: 'nominal', title: 'replica', sort: ids },
        },
      },
    ],
  } as TopLevelSpec;
}
