/**
 * Per-template latency: every query's end time and latency by class and template, and per phase
 * the count, errors, p50 and p95 (summary.json `templates`). A few bytes a query (typed columns).
 * Percentiles come from an HdrHistogram of the phase's queries, as the class figures do.
 *
 * Intervals: the class figures' bootstrap (per-second blocks) is to be applied here too once it
 * is the project's one interval function; `seconds` says how many seconds each row spans.
 */
import type { ServiceClass } from '../core/service-class.js';
import { f32, f64, type Column } from './columns.js';
import { newLatencyHistogram, toLatencyUs } from './histogram.js';
import { percentileMs, round } from './math.js';

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
}

interface Series {
  endMs: Column<Float64Array>;
  /** Latency ms; NaN for a failed query. */
  latencyMs: Column<Float32Array>;
}

export class TemplateLatencies {
  private readonly series = new Map<string, { cls: ServiceClass; template: string; s: Series }>();

  private of(cls: ServiceClass, template: string): Series {
    const key = `${cls}\u0000${template}`;
    let e = this.series.get(key);
    if (e === undefined) {
      e = { cls, template, s: { endMs: f64(), latencyMs: f32() } };
      this.series.set(key, e);
    }
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
  summarize(phases: readonly { name: string; startS: number; endS: number }[]): TemplatePhaseStats[] {
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
        for (let i = 0; i < s.endMs.length; i++) {
          const t = s.endMs.get(i);
          if (!(t >= lo && t < hi)) continue;
          const l = s.latencyMs.get(i);
          if (Number.isNaN(l)) errors++;
          else {
            queries++;
            h.recordValue(toLatencyUs(l));
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
        });
      }
    return out;
  }
}
