// The replication-lag chart of report.html: one line per replica, in the style of the CPU chart.
import type { TopLevelSpec } from 'vega-lite';
import type { LoadedRun } from '../../metrics/store/load-run.js';
import { replicaTimelineSpec } from './charts.js';

/** A run with lag samples (the write workload was on). */
export function hasLag(run: LoadedRun): boolean {
  return run.timeline.some((r) => Object.values(r.replicas).some((c) => c.lagMs !== null));
}

/** Each replica's replication lag (ms) over time, with the faults and phases overlaid. */
export function lagTimelineSpec(run: LoadedRun): TopLevelSpec {
  return replicaTimelineSpec(run, {
    title: "Replication lag per replica (ms: the standby's time since its last replayed commit)",
    value: (c) => c.lagMs,
    y: { title: 'lag ms' },
  });
}
