// Per-template latency in `plb report` and report.html: for each phase, class and SQL template of
// a group's runs, p50 and p95 (median over the runs, IQR with repeats) and queries per second.
import type { RunSummary } from '../../run-format/summary.js';
import type { ServiceClass } from '../../core/service-class.js';
import type { Stat } from '../../run-format/report.js';
import { stat } from '../../metrics/math.js';
import type { TemplateIntervals } from '../../metrics/summary/template-stats.js';
import { overRuns } from '../evidence/evidence.js';

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
  /** 95 % intervals of p50 and p95: one run's bootstrap, or over 3+ runs; absent for older runs. */
  intervals?: TemplateIntervals;
}

/**
 * One run: its own intervals. Several: the t interval of the runs' mean (as the class figures'
 * interval over runs), which needs 3; the pooled bootstrap needs per-template seconds, which a
 * run does not keep.
 */
function intervalsOver(xs: NonNullable<RunSummary['templates']>): TemplateIntervals | undefined {
  const own = xs.filter((x) => x.intervals !== undefined);
  if (own.length === 0) return undefined;
  if (xs.length === 1) return own[0]?.intervals;
  if (xs.length < 3)
    return { block: null, p50: null, p95: null, note: `${xs.length} runs: an interval over runs needs 3` };
  const iv = (vals: (number | null)[]) => {
    const e = overRuns(vals.map((v) => v ?? NaN));
    return e.lo === null || e.hi === null ? null : { lo: e.lo, hi: e.hi };
  };
  return { block: null, p50: iv(xs.map((x) => x.p50)), p95: iv(xs.map((x) => x.p95)) };
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
      ...(intervalsOver(xs) ? { intervals: intervalsOver(xs) } : {}),
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
  const withIv = g.templates.some((t) => t.intervals !== undefined);
  const iv = (t: AggregatedTemplate, m: 'p50' | 'p95'): string[] => {
    if (!withIv) return [];
    const x = t.intervals?.[m];
    return [x ? `${ms(x.lo)}..${ms(x.hi)}` : '-'];
  };
  return {
    title: `${parts.title(g, wide)}: per SQL template${withIv ? ' (95 % intervals)' : ''}`,
    head: [
      'phase',
      'class',
      'template',
      'p50 ms',
      ...(withIv ? ['p50 95 %'] : []),
      'p95 ms',
      ...(withIv ? ['p95 95 %'] : []),
      'q/s',
      'errors',
    ],
    rows: g.templates.map((t) => [
      t.phase,
      t.class,
      t.template,
      parts.stat(t.p50, ms, wide),
      ...iv(t, 'p50'),
      parts.stat(t.p95, ms, wide),
      ...iv(t, 'p95'),
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
