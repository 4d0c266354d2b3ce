import type { HarnessPhaseStats, RunSummary } from '../../run-format/summary.js';
import { harnessRateWarnings } from './harness-rate.js';
import { HARNESS_LOOP_P99_LIMIT_MS, HOST_BUSY_LIMIT, HOST_STEAL_LIMIT } from '../types.js';

/** Why a phase's host was not a clean testbed (busy to the limit, or stolen from), or undefined. */
export function hostShortfall(h: HarnessPhaseStats | undefined): string | undefined {
  const host = h?.host;
  if (!host) return undefined;
  const pct = (x: number): string => `${Math.round(x * 100)}%`;
  if (host.busyMean >= HOST_BUSY_LIMIT)
    return `the host's cores were ${pct(host.busyMean)} busy (>= ${pct(HOST_BUSY_LIMIT)}): the replicas' quotas were not guaranteed`;
  if (host.stealMean >= HOST_STEAL_LIMIT)
    return `the hypervisor took ${pct(host.stealMean)} of the host's cores (>= ${pct(HOST_STEAL_LIMIT)})`;
  return undefined;
}

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
  for (const p of summary.phases) {
    const why = hostShortfall(p.harness);
    if (why) out.push(`warning: phase ${p.name}: ${why}`);
  }
  out.push(...harnessRateWarnings(summary.phases));
  const d = summary.detectionCounts;
  if (d && d.unexplained > 0)
    out.push(
      `warning: ${d.unexplained} of ${d.down + d.up} detections are not explained by an injected fault (false detections)`,
    );
  return out;
}
