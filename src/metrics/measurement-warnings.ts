import type { RunSummary } from '../run-format/summary.js';
import { harnessRateWarnings } from './harness-rate.js';
import { HARNESS_LOOP_P99_LIMIT_MS } from './types.js';

/** Lines that say when a run was not a clean measurement: the harness fell behind, false detections. */
export function measurementWarnings(summary: RunSummary): string[] {
  const out: string[] = [];
  for (const p of summary.phases) {
    const h = p.harness;
    if (h?.saturated)
      out.push(
        `warning: phase ${p.name}: client event-loop delay p99 ${h.loopP99Ms} ms (> ${HARNESS_LOOP_P99_LIMIT_MS} ms): the harness, not only the replicas, set the pace (client CPU up to ${Math.round((h.cpuMax ?? 0) * 100)}% of a core)`,
      );
  }
  out.push(...harnessRateWarnings(summary.phases));
  const d = summary.detectionCounts;
  if (d && d.unexplained > 0)
    out.push(
      `warning: ${d.unexplained} of ${d.down + d.up} detections are not explained by an injected fault (false detections)`,
    );
  return out;
}
