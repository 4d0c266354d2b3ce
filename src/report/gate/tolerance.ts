// `--compare-to <summary.json> --tolerance <spec>`: did a metric move beyond its tolerance?
// Two-sided, fixed tolerances; the nightly uses the one-sided, IQR-aware gate in gate.ts.
import { readFileSync } from 'node:fs';
import { PlbError } from '../../core/errors.js';
import { SERVICE_CLASSES } from '../../core/service-class.js';
import { validateSummary } from '../../metrics/store/load-run.js';
import { reportBaselineSchema, type BaselineGroup } from '../../run-format/report.js';
import { parseOrThrow } from '../../core/zod-issue.js';
import { aggregateRuns } from '../aggregate.js';
import { type ClassMetric } from '../../run-format/report.js';
import type { Stat } from '../../run-format/report.js';

export const DEFAULT_TOLERANCE = 'p95=25%,goodput=20%,retention=0.15';

type Kind = 'relative' | 'absolute';
type Better = 'higher' | 'lower' | 'none';

/**
 * Fields of a tolerance spec. Relative: |current - baseline| / |baseline|. Absolute: |current -
 * baseline| in the metric's own unit (retention, inflation, CPU and CV are fractions; errors a count).
 */
export const TOLERANCE_FIELDS = {
  p50: { kind: 'relative', metrics: ['p50'], better: 'lower' },
  p95: { kind: 'relative', metrics: ['p95'], better: 'lower' },
  p99: { kind: 'relative', metrics: ['p99'], better: 'lower' },
  goodput: { kind: 'relative', metrics: ['goodput'], better: 'higher' },
  lifetime: { kind: 'relative', metrics: ['lifetimeP50Ms', 'lifetimeP95Ms'], better: 'higher' },
  retention: { kind: 'absolute', metrics: ['goodputRetention'], better: 'higher' },
  inflation: { kind: 'absolute', metrics: ['p95Inflation'], better: 'lower' },
  errors: { kind: 'absolute', metrics: ['errors'], better: 'lower' },
  cpu: { kind: 'absolute', metrics: ['cpuMean'], better: 'none' },
  cv: { kind: 'absolute', metrics: ['cpuCv'], better: 'lower' },
} as const satisfies Record<string, { kind: Kind; metrics: readonly string[]; better: Better }>;

export type ToleranceField = keyof typeof TOLERANCE_FIELDS;
export type Tolerance = Partial<Record<ToleranceField, number>>;

/**
 * `p95=25%,goodput=20%,retention=0.15`: comma-separated field=value; `25%` and `0.25` are the same
 * number. Throws BAD_INPUT naming the bad field.
 */
export function parseTolerance(spec: string): Tolerance {
  const out: Tolerance = {};
  const parts = spec
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  const bad = (msg: string): never => {
    throw new PlbError('BAD_INPUT', `tolerance: ${msg}`, {
      hint: `use field=value[%] with fields ${Object.keys(TOLERANCE_FIELDS).join(', ')}; e.g. ${DEFAULT_TOLERANCE}`,
    });
  };
  if (parts.length === 0) bad('empty spec');
  for (const part of parts) {
    const m = /^([A-Za-z0-9_]+)\s*=\s*(.*)$/.exec(part);
    if (!m) return bad(`'${part}' is not field=value`);
    const field = m[1] as string;
    const raw = (m[2] as string).trim();
    if (!Object.hasOwn(TOLERANCE_FIELDS, field)) return bad(`unknown field '${field}'`);
    if (Object.hasOwn(out, field)) bad(`field '${field}' given twice`);
    const pct = raw.endsWith('%');
    const numText = pct ? raw.slice(0, -1).trim() : raw;
    const n = /^\d+(\.\d+)?$|^\.\d+$/.test(numText) ? Number(numText) : NaN;
    if (!Number.isFinite(n)) return bad(`${field}: '${raw}' is not a non-negative number or percent`);
    out[field as ToleranceField] = pct ? n / 100 : n;
  }
  return out;
}

export interface Moved {
  group: string;
  phase: string;
  /** premium | freemium | all (phase-level CPU) */
  subject: string;
  metric: string;
  baseline: number | null;
  current: number | null;
  /** Relative or absolute difference as the field defines it; null when one side is missing. */
  delta: number | null;
  kind: Kind;
  tolerance: number;
  direction: 'better' | 'worse' | 'changed';
}

export interface ToleranceResult {
  moved: Moved[];
  /** Number of metric comparisons made. */
  checked: number;
  /** Groups or phases present on one side only (not failures, except phases missing now). */
  notes: string[];
}

/** A baseline file: the JSON of `plb report --json` ({groups}), a RunSummary, or an array of them. */
export function loadBaseline(path: string): BaselineGroup[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new PlbError('BAD_INPUT', `compare-to: cannot read ${path} as JSON`, { cause: err });
  }
  return baselineGroups(raw, path);
}

function baselineGroups(raw: unknown, where: string): BaselineGroup[] {
  if (Array.isArray(raw)) return aggregateRuns(raw.map((r, i) => validateSummary(r, `${where}[${i}]`)));
  const obj = raw as Record<string, unknown> | null;
  if (obj && Array.isArray(obj.groups))
    return parseOrThrow(reportBaselineSchema, raw, where, { code: 'BAD_INPUT' }).groups;
  if (obj && Array.isArray(obj.phases)) return aggregateRuns([validateSummary(obj, where)]);
  throw new PlbError(
    'BAD_INPUT',
    `compare-to: ${where} is neither a summary.json nor plb report --json output`,
  );
}

/** Compares the medians of the current groups with the baseline groups of the same key. */
export function checkTolerance(
  current: readonly BaselineGroup[],
  baseline: readonly BaselineGroup[],
  tol: Tolerance,
): ToleranceResult {
  const moved: Moved[] = [];
  const notes: string[] = [];
  let checked = 0;
  let matched = 0;
  for (const g of current) {
    const b = baseline.find((x) => x.key === g.key);
    if (!b) {
      notes.push(`no baseline for ${g.key}`);
      continue;
    }
    matched++;
    for (const bp of b.phases) {
      const p = g.phases.find((x) => x.name === bp.name);
      if (!p) {
        notes.push(`${g.key}: phase ${bp.name} missing in the current runs`);
        moved.push({
          group: g.key,
          phase: bp.name,
          subject: 'all',
          metric: 'phase',
          baseline: null,
          current: null,
          delta: null,
          kind: 'absolute',
          tolerance: 0,
          direction: 'worse',
        });
        continue;
      }
      for (const [field, tolerance] of Object.entries(tol) as [ToleranceField, number][]) {
        const def = TOLERANCE_FIELDS[field];
        for (const metric of def.metrics) {
          const pairs: [string, Stat | undefined, Stat | undefined][] =
            metric === 'cpuMean' || metric === 'cpuCv'
              ? [['all', bp[metric], p[metric]]]
              : SERVICE_CLASSES.map((c) => [
                  c,
                  bp.classes[c]?.[metric as ClassMetric],
                  p.classes[c]?.[metric as ClassMetric],
                ]);
          for (const [subject, bs, cs] of pairs) {
            checked++;
            const m = compareOne(bs?.median ?? null, cs?.median ?? null, def.kind, tolerance, def.better);
            if (m)
              moved.push({ group: g.key, phase: bp.name, subject, metric, kind: def.kind, tolerance, ...m });
          }
        }
      }
    }
    for (const p of g.phases) {
      if (!b.phases.some((x) => x.name === p.name))
        notes.push(`${g.key}: phase ${p.name} not in the baseline`);
    }
  }
  for (const b of baseline) if (!current.some((g) => g.key === b.key)) notes.push(`not run now: ${b.key}`);
  if (matched === 0) {
    throw new PlbError(
      'BAD_INPUT',
      'compare-to: no run matches a baseline group (same plan, strategy and mix)',
      {
        hint: `baseline has ${baseline.map((b) => b.key).join(', ') || 'no groups'}`,
      },
    );
  }
  return { moved, checked, notes };
}

function compareOne(
  base: number | null,
  cur: number | null,
  kind: Kind,
  tolerance: number,
  better: Better,
): Pick<Moved, 'baseline' | 'current' | 'delta' | 'direction'> | null {
  if (base === null && cur === null) return null;
  if (base === null || cur === null)
    return { baseline: base, current: cur, delta: null, direction: 'changed' };
  let delta: number;
  if (kind === 'absolute') delta = cur - base;
  else if (base !== 0) delta = (cur - base) / Math.abs(base);
  else if (cur === 0) return null;
  else delta = Infinity * Math.sign(cur);
  // A tiny epsilon so a move of exactly the tolerance passes despite float noise.
  if (Math.abs(delta) <= tolerance + 1e-9) return null;
  const direction =
    better === 'none'
      ? 'changed'
      : delta > 0 === (better === 'higher')
        ? ('better' as const)
        : ('worse' as const);
  return { baseline: base, current: cur, delta, direction };
}
