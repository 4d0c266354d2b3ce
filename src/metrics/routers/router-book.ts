/**
 * Many routers (--routers N > 1): what each application instance's clients measured and what its
 * router did, beside the run's own recorder, and how far the routers disagreed. Kept as raw
 * columns (12 bytes a query) so the phases, known only at the end, cut them exactly.
 */
import type { ServiceClass } from '../../core/service-class.js';
import type { FailureCause } from '../../core/failure-cause.js';
import type { ReplicaLag } from '../../cluster/lag-probe.js';
import type { RoutersSummary } from '../../run-format/summary.js';
import { newLatencyHistogram, toLatencyUs } from '../hdr/histogram.js';
import { percentileMs, round } from '../math.js';
import { f32, f64, u16, type Column } from '../store/columns.js';
import type { Recorder, ReplicaState, SessionEnding } from '../types.js';

interface ClassColumns {
  queryEnd: Column<Float64Array>;
  queryLatUs: Column<Float32Array>;
  errorEnd: Column<Float64Array>;
  opened: number;
}

/** What a router's replica looks like to the disagreement count: its role, borrowed or down. */
export interface RouterReplicaView {
  id: string;
  healthy: boolean;
  role: string;
  borrowedBy?: string;
}

/** Replicas on which at least two of the routers' views differ. */
export function disagreeingReplicas(views: readonly (readonly RouterReplicaView[])[]): number {
  const first = views[0];
  if (first === undefined) return 0;
  const key = (r: RouterReplicaView | undefined): string =>
    r === undefined ? '?' : r.healthy ? `${r.role}/${r.borrowedBy ?? ''}` : 'down';
  let n = 0;
  first.forEach((r, i) => {
    const k = key(r);
    if (views.some((v) => key(v[i]) !== k)) n++;
  });
  return n;
}

export class RouterBook {
  private readonly cols: Record<ServiceClass, ClassColumns>[];
  private readonly flips: Column<Float64Array>[];
  private readonly disagreeAt = f64();
  private readonly disagreeN = u16();

  constructor(
    readonly count: number,
    readonly view: string,
  ) {
    const cls = (): ClassColumns => ({ queryEnd: f64(), queryLatUs: f32(), errorEnd: f64(), opened: 0 });
    this.cols = Array.from({ length: count }, () => ({ premium: cls(), freemium: cls() }));
    this.flips = Array.from({ length: count }, () => f64());
  }

  /** Instance i's recorder: the run's, and this book's columns of router i. */
  recorderFor(i: number, base: Recorder): Recorder {
    return new InstanceRecorder(base, this.cols[i] as Record<ServiceClass, ClassColumns>);
  }

  /** Router i borrowed, returned or reclaimed a replica. */
  flip(router: number, tMs: number): void {
    this.flips[router]?.push(tMs);
  }

  /** Once a second: every router's view of the replicas (same order in each). */
  sample(tMs: number, views: readonly (readonly RouterReplicaView[])[]): void {
    this.disagreeAt.push(tMs);
    this.disagreeN.push(disagreeingReplicas(views));
  }

  /** Per router and phase (and over `fault`, when given), and the disagreement per phase. */
  summarize(phases: readonly { name: string; startS: number; endS: number }[]): RoutersSummary {
    const spans = phases.map((p) => ({ name: p.name, fromMs: p.startS * 1000, toMs: p.endS * 1000 }));
    return {
      count: this.count,
      view: this.view,
      perRouter: this.cols.map((c, router) => ({
        router,
        sessions: { premium: c.premium.opened, freemium: c.freemium.opened },
        borrowFlips: this.flips[router]?.length ?? 0,
        phases: spans.map((s) => ({
          phase: s.name,
          premium: classStats(c.premium, s.fromMs, s.toMs),
          freemium: classStats(c.freemium, s.fromMs, s.toMs),
        })),
      })),
      disagreement: spans.map((s) => {
        let sum = 0;
        let max: number | null = null;
        let seconds = 0;
        for (let i = this.disagreeAt.lowerBound(s.fromMs); i < this.disagreeAt.length; i++) {
          const t = this.disagreeAt.get(i);
          if (t >= s.toMs) break;
          const n = this.disagreeN.get(i);
          sum += n;
          max = Math.max(max ?? 0, n);
          seconds++;
        }
        const flips = this.flips.reduce((a, col) => a + countIn(col, s.fromMs, s.toMs), 0);
        return {
          phase: s.name,
          seconds,
          meanReplicas: seconds > 0 ? round(sum / seconds, 3) : null,
          maxReplicas: max,
          borrowFlips: flips,
        };
      }),
    };
  }
}

function countIn(col: Column<Float64Array>, fromMs: number, toMs: number): number {
  let n = 0;
  for (let i = col.lowerBound(fromMs); i < col.length; i++) {
    const t = col.get(i);
    if (t >= toMs) {
      if (col.ascending) break;
      continue;
    }
    if (t >= fromMs) n++;
  }
  return n;
}

function classStats(c: ClassColumns, fromMs: number, toMs: number) {
  const h = newLatencyHistogram();
  let queries = 0;
  // Query ends arrive nearly in order, not exactly (a session's end is stamped when it is heard).
  for (let i = 0; i < c.queryEnd.length; i++) {
    const t = c.queryEnd.get(i);
    if (t < fromMs || t >= toMs) continue;
    h.recordValue(c.queryLatUs.get(i));
    queries++;
  }
  const seconds = (toMs - fromMs) / 1000;
  return {
    p95: queries > 0 ? round(percentileMs(h, 95), 3) : null,
    goodput: seconds > 0 ? (round(queries / seconds, 3) ?? 0) : 0,
    queries,
    errors: countIn(c.errorEnd, fromMs, toMs),
  };
}

/** The run's recorder, and router i's columns of what its clients did. */
class InstanceRecorder implements Recorder {
  constructor(
    private readonly base: Recorder,
    private readonly cols: Record<ServiceClass, ClassColumns>,
  ) {}

  queryDone(cls: ServiceClass, replica: string, endMs: number, latencyMs: number): void {
    const c = this.cols[cls];
    c.queryEnd.push(endMs);
    c.queryLatUs.push(toLatencyUs(latencyMs));
    this.base.queryDone(cls, replica, endMs, latencyMs);
  }

  queryFailed(cls: ServiceClass, replica: string, endMs: number, reason: string): void {
    this.cols[cls].errorEnd.push(endMs);
    this.base.queryFailed(cls, replica, endMs, reason);
  }

  sessionOpened(
    cls: ServiceClass,
    replica: string,
    atMs: number,
    connectMs: number,
    crossZone?: boolean,
  ): void {
    this.cols[cls].opened++;
    this.base.sessionOpened(cls, replica, atMs, connectMs, crossZone);
  }

  sessionClosed(
    cls: ServiceClass,
    replica: string,
    openedMs: number,
    closedMs: number,
    e: SessionEnding,
  ): void {
    this.base.sessionClosed(cls, replica, openedMs, closedMs, e);
  }

  replicaFailure(replica: string, atMs: number, cause: FailureCause, via?: string): void {
    this.base.replicaFailure(replica, atMs, cause, via);
  }

  harnessCpu(atMs: number, cpu: number): void {
    this.base.harnessCpu(atMs, cpu);
  }

  hostCpu(atMs: number, busy: number, steal: number): void {
    this.base.hostCpu(atMs, busy, steal);
  }

  loopDelay(atMs: number, delayMs: number): void {
    this.base.loopDelay(atMs, delayMs);
  }

  admissionFailed(cls: ServiceClass, atMs: number, reason: string): void {
    this.base.admissionFailed(cls, atMs, reason);
  }

  sessionQueued(cls: ServiceClass, atMs: number, queueMs: number): void {
    this.base.sessionQueued?.(cls, atMs, queueMs);
  }

  cpu(atMs: number, fractions: Record<string, number | null>): void {
    this.base.cpu(atMs, fractions);
  }

  replicaState(atMs: number, perReplica: Record<string, ReplicaState>): void {
    this.base.replicaState(atMs, perReplica);
  }

  lag(atMs: number, perReplica: Record<string, ReplicaLag>): void {
    this.base.lag(atMs, perReplica);
  }
}
