/**
 * Per-template latency: every query's end time and latency by class and template, and per phase
 * the count, errors, p50 and p95 (summary.json `templates`). A few bytes a query (typed columns).
 * Percentiles come from an HdrHistogram of the phase's queries, as the class figures do; their
 * 95 % intervals from the class figures' bootstrap (intervals.ts) over the phase's whole seconds,
 * blocks at least the class's session p95 lifetime long.
 */
import type { ServiceClass } from '../../core/service-class.js';
import { f32, f64, type Column } from '../store/columns.js';
import { recordValue } from '../hdr/counts.js';
import { newLatencyHistogram, toLatencyUs } from '../hdr/histogram.js';
import { percentileMs, round } from '../math.js';
import {
  blockLength,
  bootstrapCell,
  percentileInterval,
  tooFewSeconds,
  type Interval,
  type SecondSample,
} from '../intervals/intervals.js';
import { sparseOfValues } from '../hdr/sparse-counts.js';

/** The 95 % intervals of a template's p50 and p95 (ms); null with a note when there are none. */
export interface TemplateIntervals {
  block: number | null;
  p50: Interval | null;
  p95: Interval | null;
  note?: string;
}

/** A phase as summarize() reads it: its window and, when known, each class's session p95 (ms). */
export interface TemplatePhase {
  name: string;
  startS: number;
  endS: number;
  classes?: Partial<Record<ServiceClass, { lifetimeP95Ms?: number | null }>>;
}

export interface TemplatePhaseStats {
  phase: string;
  class: ServiceClass;
  template: string;
  queries: number;
  errors: number;
  /** ms; null without a completed query. */
  p50: number | null;
  p95: number | null;
  /** Length of the phase, s. */
  seconds: number;
  intervals?: TemplateIntervals;
}

interface Series {
  endMs: Column<Float64Array>;
  /** Latency ms; NaN for a failed query. */
  latencyMs: Column<Float32Array>;
}

export class TemplateLatencies {
  private readonly series = new Map<string, { cls: ServiceClass; template: string; s: Series }>();

  /** The same series by class, then template: a query's lookup builds no key string. */
  private readonly byClass: Record<ServiceClass, Map<string, Series>> = {
    premium: new Map(),
    freemium: new Map(),
  };

  private of(cls: ServiceClass, template: string): Series {
    const known = this.byClass[cls].get(template);
    if (known !== undefined) return known;
    const e = { cls, template, s: { endMs: f64(), latencyMs: f32() } };
    this.series.set(`${cls}\u0000${template}`, e);
    this.byClass[cls].set(template, e.s);
    return e.s;
  }

  done(cls: ServiceClass, template: string, endMs: number, latencyMs: number): void {
    const s = this.of(cls, template);
    s.endMs.push(endMs);
    s.latencyMs.push(latencyMs);
  }

  failed(cls: ServiceClass, template: string, endMs: number): void {
    const s = this.of(cls, template);
    s.endMs.push(endMs);
    s.latencyMs.push(Number.NaN);
  }

  get empty(): boolean {
    return this.series.size === 0;
  }

  /** Per phase (by its [startS, endS) window of run time), class and template. */
  summarize(phases: readonly TemplatePhase[]): TemplatePhaseStats[] {
    const out: TemplatePhaseStats[] = [];
    const entries = [...this.series.values()].sort(
      (a, b) => a.cls.localeCompare(b.cls) * -1 || a.template.localeCompare(b.template),
    );
    for (const p of phases)
      for (const { cls, template, s } of entries) {
        const h = newLatencyHistogram();
        let queries = 0;
        let errors = 0;
        const lo = p.startS * 1000;
        const hi = p.endS * 1000;
        // End times come in time order: the phase's queries are one stretch (the check stays).
        for (let i = s.endMs.lowerBound(lo), end = s.endMs.upperLimit(hi); i < end; i++) {
          const t = s.endMs.get(i);
          if (!(t >= lo && t < hi)) continue;
          const l = s.latencyMs.get(i);
          if (Number.isNaN(l)) errors++;
          else {
            queries++;
            recordValue(h, toLatencyUs(l));
          }
        }
        out.push({
          phase: p.name,
          class: cls,
          template,
          queries,
          errors,
          p50: round(queries > 0 ? percentileMs(h, 50) : null, 3),
          p95: round(queries > 0 ? percentileMs(h, 95) : null, 3),
          seconds: round(p.endS - p.startS, 3) ?? 0,
          intervals: intervalsOf(s, p, cls, template),
        });
      }
    return out;
  }
}

const roundIv = (iv: Interval | null): Interval | null =>
  iv === null ? null : { lo: round(iv.lo, 3) ?? iv.lo, hi: round(iv.hi, 3) ?? iv.hi };

/**
 * The bootstrap intervals of one template in one phase: its queries by whole second (each second
 * in the phase holding its middle, as the class figures' seconds), seeded by the cell's name.
 */
function intervalsOf(s: Series, p: TemplatePhase, cls: ServiceClass, template: string): TemplateIntervals {
  const first = Math.max(0, Math.floor(p.startS));
  const secs: number[][] = [];
  for (let t = first; t + 0.5 < p.endS; t++) if (t + 0.5 >= p.startS) secs.push([]);
  const from = secs.length > 0 && first + 0.5 < p.startS ? first + 1 : first;
  // A second wider each side than the seconds taken, so no query at an edge is missed; the index
  // check below decides which second each belongs to.
  const [i0, i1] = [
    s.endMs.lowerBound((from - 1) * 1000),
    s.endMs.upperLimit((from + secs.length + 1) * 1000),
  ];
  for (let i = i0; i < i1; i++) {
    const l = s.latencyMs.get(i);
    if (Number.isNaN(l)) continue;
    secs[Math.floor(s.endMs.get(i) / 1000) - from]?.push(toLatencyUs(l));
  }
  const sessionMs = p.classes?.[cls]?.lifetimeP95Ms;
  const block = blockLength(secs.length, typeof sessionMs === 'number' ? sessionMs / 1000 : null);
  const why = tooFewSeconds(secs.length, block);
  if (why !== null) return { block: secs.length > 0 ? block : null, p50: null, p95: null, note: why };
  const samples: SecondSample[] = secs.map((v) => ({ latency: sparseOfValues(v), lifetime: null }));
  const boot = bootstrapCell([samples], { key: `${p.name}/${cls}/${template}`, block });
  return {
    block,
    p50: roundIv(percentileInterval(boot.replicates.p50, 0.95, boot.blocks, 0)),
    p95: roundIv(percentileInterval(boot.replicates.p95, 0.95, boot.blocks, 0)),
  };
}
