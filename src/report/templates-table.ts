// Per-template latency in `plb report` and report.html: for each phase, class and SQL template of
// a group's runs, p50 and p95 (median over the runs, IQR with repeats) and queries per second.
import type { RunSummary } from '../run-format/summary.js';
import type { ServiceClass } from '../core/service-class.js';
import type { Stat } from '../run-format/report.js';
import { stat } from './stats.js';

export interface AggregatedTemplate {
  phase: string;
  class: ServiceClass;
  template: string;
  runs: number;
  p50: Stat;
  p95: Stat;
  /** Completed queries per second of the phase. */
  qps: Stat;
  errors: Stat;
}

/** Medians over the runs of each (phase, class, template) the runs' summaries have. */
export function aggregateTemplates(runs: readonly RunSummary[]): AggregatedTemplate[] | undefined {
  const keys: { phase: string; class: ServiceClass; template: string }[] = [];
  const rows = new Map<string, NonNullable<RunSummary['templates']>>();
  for (const r of runs)
    for (const t of r.templates ?? []) {
      const k = `${t.phase}\u0000${t.class}\u0000${t.template}`;
      if (!rows.has(k)) {
        rows.set(k, []);
        keys.push({ phase: t.phase, class: t.class, template: t.template });
      }
      rows.get(k)?.push(t);
    }
  if (keys.length === 0) return undefined;
  return keys.map((k) => {
    const xs = rows.get(`${k.phase}\u0000${k.class}\u0000${k.template}`) ?? [];
    return {
      ...k,
      runs: xs.length,
      p50: stat(xs.map((x) => x.p50)),
      p95: stat(xs.map((x) => x.p95)),
      qps: stat(xs.map((x) => (x.seconds > 0 ? x.queries / x.seconds : null))),
      errors: stat(xs.map((x) => x.errors)),
    };
  });
}

export interface TemplateTableParts<G> {
  title: (g: G, wide: boolean) => string;
  stat: (s: Stat, f: (v: number) => string, wide: boolean) => string;
}

const ms = (v: number): string => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
const one = (v: number): string => v.toFixed(1);
const int = (v: number): string => String(Math.round(v));

/** One row per phase, class and template; null when the runs recorded none. */
export function templateTable<G extends { templates?: AggregatedTemplate[] }>(
  g: G,
  wide: boolean,
  parts: TemplateTableParts<G>,
): { title: string; head: string[]; rows: string[][] } | null {
  if (!g.templates || g.templates.length === 0) return null;
  // plb's own three in a compact terminal report: --wide (and the HTML) show them.
  if (!wide && g.templates.every((t) => ['point', 'range', 'scan'].includes(t.template))) return null;
  return {
    title: `${parts.title(g, wide)}: per SQL template`,
    head: ['phase', 'class', 'template', 'p50 ms', 'p95 ms', 'q/s', 'errors'],
    rows: g.templates.map((t) => [
      t.phase,
      t.class,
      t.template,
      parts.stat(t.p50, ms, wide),
      parts.stat(t.p95, ms, wide),
      parts.stat(t.qps, one, wide),
      parts.stat(t.errors, int, wide),
    ]),
  };
}

/** A workload's own templates as a setting: `premium a 0.8, b 0.2; freemium c 1` and its key. */
export function templateMix(set: {
  classes: Record<ServiceClass, { name: string; weight: number; sql: string }[]>;
}): [string, unknown] {
  const one = (cls: ServiceClass) => set.classes[cls].map((t) => `${t.name} ${t.weight}`).join(', ');
  const p = one('premium');
  const f = one('freemium');
  const key = (['premium', 'freemium'] as const).map((c) =>
    set.classes[c].map((t) => [t.name, t.weight, t.sql]),
  );
  return [p === f ? p : `premium ${p}; freemium ${f}`, key];
}
