// A group's hang path and session shares over its runs: each metric as median and IQR, and the
// runs' mean with its 95 % t interval from 3 runs on (the report's over-runs interval).
import { compareReplicaIds } from '../core/replica-ids.js';
import { stat } from '../metrics/math.js';
import {
  HANG_METRICS,
  type AggregatedHang,
  type AggregatedShare,
  type PooledStat,
  type RunGroup,
} from '../run-format/report.js';
import type { HangFault, RunSummary } from '../run-format/summary.js';
import { overRuns } from './evidence/evidence.js';

/** Median [q1..q3] and the mean with its interval of one metric over the runs (nulls left out). */
export function pooled(values: readonly (number | null | undefined)[]): PooledStat {
  const xs = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  const m = overRuns(xs);
  const mean = xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
  return { ...stat(xs), mean, lo: m.lo, hi: m.hi };
}

/** The faults of the runs matched by replica, action and occurrence (the nth such fault of the run). */
function hangFaults(runs: readonly RunSummary[]): AggregatedHang[] {
  const keys: { replica: string; action: string; occurrence: number }[] = [];
  const byKey = new Map<string, HangFault[]>();
  for (const r of runs) {
    const seen = new Map<string, number>();
    for (const f of r.hangPath?.faults ?? []) {
      const base = `${f.replica}|${f.action}`;
      const occurrence = (seen.get(base) ?? 0) + 1;
      seen.set(base, occurrence);
      const k = `${base}|${occurrence}`;
      if (!byKey.has(k)) {
        byKey.set(k, []);
        keys.push({ replica: f.replica, action: f.action, occurrence });
      }
      byKey.get(k)?.push(f);
    }
  }
  return keys.map((k) => {
    const fs = byKey.get(`${k.replica}|${k.action}|${k.occurrence}`) ?? [];
    const metrics = Object.fromEntries(HANG_METRICS.map((m) => [m, pooled(fs.map((f) => f[m]))])) as Record<
      (typeof HANG_METRICS)[number],
      PooledStat
    >;
    return {
      ...k,
      runs: fs.length,
      missed: fs.filter((f) => f.downMs === null).length,
      downVia: [...new Set(fs.flatMap((f) => (f.downVia === null ? [] : [f.downVia])))].sort(),
      ...metrics,
    };
  });
}

/** Per phase (by name): the replicas' shares over the runs that have the phase. */
function shares(runs: readonly RunSummary[]): AggregatedShare[] {
  const names: string[] = [];
  for (const r of runs)
    for (const s of r.sessionShare ?? []) if (!names.includes(s.phase)) names.push(s.phase);
  return names.map((phase) => {
    const ps = runs.flatMap((r) => (r.sessionShare ?? []).filter((s) => s.phase === phase));
    const ids = [...new Set(ps.flatMap((p) => Object.keys(p.replicas)))].sort(compareReplicaIds);
    const degraded = [...new Set(ps.flatMap((p) => p.degraded.map((d) => `${d.replica} ${d.action}`)))];
    return {
      phase,
      degraded,
      sessions: stat(ps.map((p) => p.sessions)),
      replicas: Object.fromEntries(
        ids.map((id) => [
          id,
          {
            share: pooled(ps.map((p) => p.replicas[id]?.share)),
            weightShare: stat(ps.map((p) => p.replicas[id]?.weightShare)),
            falseDowns: stat(ps.map((p) => p.replicas[id]?.falseDowns)),
          },
        ]),
      ),
    };
  });
}

/** What a group gets: absent for runs that predate both sections. */
export function aggregateHang(runs: readonly RunSummary[]): Pick<RunGroup, 'hangPath' | 'sessionShare'> {
  const withHang = runs.filter((r) => r.hangPath !== undefined);
  const withShare = runs.filter((r) => r.sessionShare !== undefined);
  return {
    ...(withHang.length > 0
      ? {
          hangPath: {
            faults: hangFaults(withHang),
            falseDowns: pooled(withHang.map((r) => r.hangPath?.falseDowns)),
          },
        }
      : {}),
    ...(withShare.length > 0 ? { sessionShare: shares(withShare) } : {}),
  };
}
