/**
 * --workers W: what each worker process measured, beside the run's own recorder (which gets every
 * value of every worker, so its per-second histograms are the exact merge). Per worker and class a
 * latency histogram over the run and a count per second, so the report can show each worker and a
 * reader can check that the run's per-second counts are the sum of the workers'.
 */
import type { Histogram } from 'hdr-histogram-js';
import { SERVICE_CLASSES, type ServiceClass } from '../../core/service-class.js';
import type { WorkersSummary } from '../../run-format/summary.js';
import { addHistogram, recordValue } from '../hdr/counts.js';
import { newLatencyHistogram, toLatencyUs } from '../hdr/histogram.js';
import { percentileMs } from '../math.js';

interface ClassFigures {
  hist: Histogram;
  perSecond: number[];
  errors: number;
  sessions: number;
}

/** One worker's figures; `record` is called with every value it sent. */
export class WorkerFigures {
  readonly classes: Record<ServiceClass, ClassFigures>;
  exit: string | undefined;

  constructor(
    readonly worker: number,
    readonly instances: readonly number[],
    public pid: number | null,
  ) {
    const figures = (): ClassFigures => ({
      hist: newLatencyHistogram(),
      perSecond: [],
      errors: 0,
      sessions: 0,
    });
    this.classes = { premium: figures(), freemium: figures() };
  }

  queryDone(cls: ServiceClass, endMs: number, latencyMs: number): void {
    const c = this.classes[cls];
    recordValue(c.hist, toLatencyUs(latencyMs));
    const s = Math.floor(endMs / 1000);
    if (s >= 0) c.perSecond[s] = (c.perSecond[s] ?? 0) + 1;
  }

  queryFailed(cls: ServiceClass): void {
    this.classes[cls].errors++;
  }

  sessionOpened(cls: ServiceClass): void {
    this.classes[cls].sessions++;
  }

  summary(): WorkersSummary[number] {
    const per = <T>(f: (c: ClassFigures) => T): Record<ServiceClass, T> => ({
      premium: f(this.classes.premium),
      freemium: f(this.classes.freemium),
    });
    const seconds = new Set<number>();
    for (const cls of SERVICE_CLASSES)
      this.classes[cls].perSecond.forEach((n, s) => {
        if (n > 0) seconds.add(s);
      });
    return {
      worker: this.worker,
      pid: this.pid,
      instances: [...this.instances],
      queries: per((c) => c.hist.totalCount),
      errors: per((c) => c.errors),
      sessions: per((c) => c.sessions),
      p95Ms: per((c) => percentileMs(c.hist, 95)),
      seconds: seconds.size,
      perSecond: per((c) => Array.from({ length: c.perSecond.length }, (_, s) => c.perSecond[s] ?? 0)),
      exit: this.exit ?? 'running',
    };
  }
}

/**
 * The exact merge of W parts' per-second histograms: per second and class the HDR add of every
 * part's (never an average of percentiles). Equal, count for count, to the histogram one process
 * would have recorded from the same values.
 */
export function mergeSeconds(
  parts: readonly ReadonlyMap<number, Partial<Record<ServiceClass, Histogram>>>[],
): Map<number, Record<ServiceClass, Histogram>> {
  const out = new Map<number, Record<ServiceClass, Histogram>>();
  for (const part of parts)
    for (const [s, byClass] of part) {
      let into = out.get(s);
      if (into === undefined) {
        into = { premium: newLatencyHistogram(), freemium: newLatencyHistogram() };
        out.set(s, into);
      }
      for (const cls of SERVICE_CLASSES) {
        const h = byClass[cls];
        if (h) addHistogram(into[cls], h);
      }
    }
  return out;
}
