/**
 * Replication lag per replica, sampled once a second while the write workload runs, and its
 * per-phase figures (PhaseSummary.replicas[id].lag). Only sampled with writes on: without them a
 * standby's "time since the last replayed commit" grows on an idle primary and means nothing.
 */
import { f64, type Column } from '../store/columns.js';
import { nearestRank, round } from '../math.js';
import { phaseIndexAt } from '../phases.js';
import type { Phase } from '../../faults/actions.js';
import type { PhaseSummary } from '../../run-format/summary.js';
import type { ReplicaLag } from '../../cluster/lag-probe.js';

/** A replica's lag over a phase: the standby's lag in ms and the primary's byte distance. */
export interface ReplicaLagStats {
  p50Ms: number | null;
  maxMs: number | null;
  bytesP50: number | null;
  bytesMax: number | null;
  /** Samples in the phase (0: the replica never answered). */
  samples: number;
}

/** Samples in typed columns (NaN = null), one time column and three per replica. */
export class LagLog {
  readonly at = f64();
  private readonly ms: Column<Float64Array>[];
  private readonly replayMs: Column<Float64Array>[];
  private readonly bytes: Column<Float64Array>[];

  constructor(readonly replicas: readonly string[]) {
    this.ms = replicas.map(() => f64());
    this.replayMs = replicas.map(() => f64());
    this.bytes = replicas.map(() => f64());
  }

  push(atMs: number, values: Readonly<Record<string, ReplicaLag>>): void {
    this.at.push(atMs);
    const v = (x: number | null | undefined): number => (x === null || x === undefined ? Number.NaN : x);
    this.replicas.forEach((id, i) => {
      const s = values[id];
      this.ms[i]?.push(v(s?.lagMs));
      this.replayMs[i]?.push(v(s?.replayLagMs));
      this.bytes[i]?.push(v(s?.lagBytes));
    });
  }

  get length(): number {
    return this.at.length;
  }

  /** Sample `k` of replica index `r`. */
  sample(r: number, k: number): ReplicaLag {
    const n = (c: Column<Float64Array> | undefined): number | null => {
      const x = c?.get(k) ?? Number.NaN;
      return Number.isNaN(x) ? null : x;
    };
    return { lagMs: n(this.ms[r]), replayLagMs: n(this.replayMs[r]), lagBytes: n(this.bytes[r]) };
  }
}

/** Per phase, per replica id: the lag figures; undefined for every phase when nothing was sampled. */
export function lagPhaseStats(
  log: LagLog,
  phases: readonly Phase[],
): Record<string, ReplicaLagStats>[] | undefined {
  if (log.length === 0) return undefined;
  const ms = phases.map(() => log.replicas.map(() => [] as number[]));
  const bytes = phases.map(() => log.replicas.map(() => [] as number[]));
  for (let k = 0; k < log.length; k++) {
    const p = phaseIndexAt(phases, log.at.get(k));
    log.replicas.forEach((_, r) => {
      const s = log.sample(r, k);
      // The standby's own figure; the primary's replay_lag when the standby did not answer.
      const lag = s.lagMs ?? s.replayLagMs;
      if (lag !== null) ms[p]?.[r]?.push(lag);
      if (s.lagBytes !== null) bytes[p]?.[r]?.push(s.lagBytes);
    });
  }
  return phases.map((_, p) => {
    const out: Record<string, ReplicaLagStats> = {};
    log.replicas.forEach((id, r) => {
      out[id] = lagStatsOf(ms[p]?.[r] ?? [], bytes[p]?.[r] ?? []);
    });
    return out;
  });
}

/** The figures of one replica over one phase from its samples (the summary, and a rebuilt run's timeline). */
export function lagStatsOf(lagMs: readonly number[], lagBytes: readonly number[]): ReplicaLagStats {
  const m = [...lagMs].sort((a, b) => a - b);
  const b = [...lagBytes].sort((x, y) => x - y);
  return {
    p50Ms: round(nearestRank(m, 50), 1),
    maxMs: round(m[m.length - 1] ?? null, 1),
    bytesP50: nearestRank(b, 50) ?? null,
    bytesMax: b[b.length - 1] ?? null,
    samples: Math.max(m.length, b.length),
  };
}

/** A compact line per phase for the text report: `lag r1 p50 12 ms max 40 ms (3.2 kB) | r2 ...`. */
export function lagLine(stats: Readonly<Record<string, ReplicaLagStats>>): string {
  const ms = (x: number | null): string => (x === null ? '-' : `${Math.round(x)}`);
  const kb = (x: number | null): string => (x === null ? '-' : `${(x / 1024).toFixed(1)} kB`);
  return Object.entries(stats)
    .map(([id, s]) => `${id} p50 ${ms(s.p50Ms)} max ${ms(s.maxMs)} ms (${kb(s.bytesMax)})`)
    .join(' | ');
}

/** The text report's lag lines, one per phase (none in a read-only run). */
export function lagLines(phases: readonly PhaseSummary[]): string[] {
  return phases.flatMap((p) => {
    const stats: Record<string, ReplicaLagStats> = {};
    for (const [id, r] of Object.entries(p.replicas)) if (r.lag) stats[id] = r.lag;
    return Object.keys(stats).length > 0 ? [`replication lag ${p.name}: ${lagLine(stats)}`] : [];
  });
}
