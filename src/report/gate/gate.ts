// `plb report --compare-to <baseline> --gate`: the nightly's one-sided, noise-aware verdict.
import type { BaselineGroup } from '../../run-format/report.js';
import { appendFileSync } from 'node:fs';
import { PlbError } from '../../core/errors.js';
import { SERVICE_CLASSES } from '../../core/service-class.js';
import type { ClassMetric, RunGroup } from '../../run-format/report.js';
import type { Stat } from '../../run-format/report.js';
import { parseTolerance, TOLERANCE_FIELDS, type Tolerance, type ToleranceField } from './tolerance.js';
import { estimateOf, GATED_INTERVAL, intervalVerdict, ratioInterval } from './gate-intervals.js';

/**
 * Multiple of the baseline's relative IQR a metric may worsen by before the gate fails. With three
 * repeats the IQR is half the range, and the gap between two medians of three spreads about as wide
 * as one run: 3 × IQR keeps a false alarm rare over the ~90 cells of a nightly.
 */
export const GATE_K = 3;

/** Smallest tolerance per field, for cells whose baseline IQR is 0 (one run, or equal values). */
export const DEFAULT_GATE_FLOORS = 'p95=15%,goodput=10%,retention=0.05';

type GateVerdict = 'pass' | 'better' | 'worse' | 'missing' | 'new';

export interface GateCell {
  group: string;
  /** Empty for a whole group missing. */
  phase: string;
  /** premium | freemium | all (phase-level metrics); empty for a missing group or phase. */
  subject: string;
  /** A class or phase metric; `group` or `phase` when that whole thing is missing now. */
  metric: string;
  kind: 'relative' | 'absolute';
  baseline: Stat | null;
  current: Stat | null;
  /** current - baseline, relative to |baseline| or absolute as the field defines; null when one side is missing. */
  change: number | null;
  /** k × IQR (relative to |median| for relative fields) of the baseline. */
  noise: number;
  floor: number;
  /** max(noise, floor): how far the metric may move in its worse direction. */
  tolerance: number;
  verdict: GateVerdict;
  /** 95 % interval of the relative change, when both runs have per-second data: the verdict reads it. */
  interval?: { lo: number; hi: number };
}

export interface GateResult {
  k: number;
  floors: Tolerance;
  cells: GateCell[];
  /** Worse beyond tolerance, or measured in the baseline and missing now. */
  failed: GateCell[];
  /** Things worth knowing that do not fail the gate (unmatched groups, thin or incomplete data). */
  notes: string[];
}

/**
 * The tolerance spec as the gate reads it: the fields to gate and each one's floor. Fields without a
 * worse direction (cpu) cannot be gated one-sidedly and are refused.
 */
export function parseGateFloors(spec: string): Tolerance {
  const floors = parseTolerance(spec);
  for (const field of Object.keys(floors) as ToleranceField[]) {
    if (TOLERANCE_FIELDS[field].better === 'none') {
      throw new PlbError(
        'BAD_INPUT',
        `tolerance: ${field} has no worse direction, so --gate cannot check it`,
        {
          hint: `with --gate give floors for fields that have one, e.g. ${DEFAULT_GATE_FLOORS}`,
        },
      );
    }
  }
  return floors;
}

/**
 * Checks the current groups against the baseline, one-sidedly: a cell fails only when its median
 * moved in the worse direction by more than max(k × baseline IQR [/ |baseline median|], floor).
 * Better never fails. A cell the baseline measured that is missing now fails; a new one passes.
 */
export function runGate(
  current: readonly RunGroup[],
  baseline: readonly BaselineGroup[],
  floors: Tolerance,
  k = GATE_K,
): GateResult {
  const cells: GateCell[] = [];
  const notes: string[] = [];
  const missing = (group: string, phase: string, metric: string): GateCell => ({
    group,
    phase,
    subject: '',
    metric,
    kind: 'absolute',
    baseline: null,
    current: null,
    change: null,
    noise: 0,
    floor: 0,
    tolerance: 0,
    verdict: 'missing',
  });
  if (!current.some((g) => baseline.some((b) => b.key === g.key))) {
    throw new PlbError(
      'BAD_INPUT',
      'compare-to: no run matches a baseline group (same plan, strategy and mix)',
      {
        hint: `baseline has ${baseline.map((b) => b.key).join(', ') || 'no groups'}`,
      },
    );
  }
  for (const g of current)
    if (!baseline.some((b) => b.key === g.key)) notes.push(`no baseline for ${g.key}, not gated`);
  for (const b of baseline) {
    const g = current.find((x) => x.key === b.key);
    if (!g) {
      cells.push(missing(b.key, '', 'group'));
      continue;
    }
    if (b.runIds.length < 3)
      notes.push(
        `baseline ${b.key} has ${b.runIds.length} run(s): its IQR says little, the floors carry the gate`,
      );
    if (!g.complete) notes.push(`${g.key}: incomplete runs (${g.problems.join('; ')})`);
    for (const bp of b.phases) {
      const p = g.phases.find((x) => x.name === bp.name);
      if (!p) {
        cells.push(missing(b.key, bp.name, 'phase'));
        continue;
      }
      for (const why of p.invalid) notes.push(`${g.key} ${p.name}: not a valid measurement in ${why}`);
      for (const [field, floor] of Object.entries(floors) as [ToleranceField, number][]) {
        const def = TOLERANCE_FIELDS[field];
        if (def.better === 'none') continue;
        for (const metric of def.metrics) {
          const pairs: [string, Stat | undefined, Stat | undefined][] =
            metric === 'cpuCv'
              ? [['all', bp[metric], p[metric]]]
              : SERVICE_CLASSES.map((c) => [
                  c,
                  bp.classes[c]?.[metric as ClassMetric],
                  p.classes[c]?.[metric as ClassMetric],
                ]);
          for (const [subject, bs, cs] of pairs) {
            const cell = gateCell(bs ?? null, cs ?? null, def.kind, def.better, floor, k);
            const im = GATED_INTERVAL[metric];
            const ce = im ? estimateOf(g.evidence, bp.name, subject, im) : null;
            const be = im ? estimateOf(b.evidence, bp.name, subject, im) : null;
            const iv = ce && be && def.kind === 'relative' ? ratioInterval(ce, be) : null;
            // With an interval, noise is in it: the tolerance is the floor alone.
            if (cell && iv && cell.verdict !== 'new' && cell.verdict !== 'missing')
              Object.assign(cell, {
                interval: iv,
                tolerance: floor,
                noise: 0,
                verdict: intervalVerdict(iv, def.better, floor),
              });
            if (cell) cells.push({ group: b.key, phase: bp.name, subject, metric, ...cell });
          }
        }
      }
    }
    for (const p of g.phases)
      if (!b.phases.some((x) => x.name === p.name))
        notes.push(`${g.key}: phase ${p.name} not in the baseline`);
  }
  return {
    k,
    floors,
    cells,
    failed: cells.filter((c) => c.verdict === 'worse' || c.verdict === 'missing'),
    notes,
  };
}

function gateCell(
  base: Stat | null,
  cur: Stat | null,
  kind: 'relative' | 'absolute',
  better: 'higher' | 'lower',
  floor: number,
  k: number,
): Omit<GateCell, 'group' | 'phase' | 'subject' | 'metric'> | null {
  const b = base?.median ?? null;
  const c = cur?.median ?? null;
  if (b === null && c === null) return null;
  const iqr = base && base.q1 !== null && base.q3 !== null ? base.q3 - base.q1 : 0;
  const noise = k * (kind === 'relative' ? (b ? iqr / Math.abs(b) : 0) : iqr);
  const tolerance = Math.max(noise, floor);
  const common = { kind, baseline: base, current: cur, noise, floor, tolerance };
  if (b === null) return { ...common, change: null, verdict: 'new' };
  if (c === null) return { ...common, change: null, verdict: 'missing' };
  const change =
    kind === 'absolute' ? c - b : b !== 0 ? (c - b) / Math.abs(b) : c === 0 ? 0 : Infinity * Math.sign(c);
  const worseBy = better === 'lower' ? change : -change;
  // The epsilon lets a move of exactly the tolerance pass despite float noise.
  const verdict = worseBy > tolerance + 1e-9 ? 'worse' : worseBy < -(tolerance + 1e-9) ? 'better' : 'pass';
  return { ...common, change, verdict };
}

// ---- rendering -------------------------------------------------------------------------------

function num(x: number | null | undefined): string {
  if (x === null || x === undefined) return '-';
  const a = Math.abs(x);
  return a >= 100 ? x.toFixed(1) : a >= 1 ? x.toFixed(2) : x.toFixed(3);
}

function statText(s: Stat | null): string {
  if (!s || s.median === null) return '-';
  return s.n > 1 ? `${num(s.median)} [${num(s.q1)}, ${num(s.q3)}]` : num(s.median);
}

function amount(x: number, kind: GateCell['kind'], signed: boolean): string {
  if (!Number.isFinite(x)) return x > 0 ? '+inf' : '-inf';
  const sign = signed && x > 0 ? '+' : '';
  return kind === 'relative' ? `${sign}${(x * 100).toFixed(1)}%` : `${sign}${num(x)}`;
}

function toleranceText(c: GateCell): string {
  if (c.verdict === 'missing' && c.baseline === null) return '-';
  if (c.interval) return `${amount(c.tolerance, c.kind, false)} (floor; interval)`;
  return `${amount(c.tolerance, c.kind, false)} (${c.noise >= c.floor ? 'noise' : 'floor'})`;
}

function what(c: GateCell): string {
  if (c.metric === 'group') return `${c.group}: in the baseline, no runs now`;
  if (c.metric === 'phase') return `${c.group} ${c.phase}: phase measured in the baseline, missing now`;
  return `${c.group} ${c.phase} ${c.subject} ${c.metric}`;
}

const HEADER = [
  'verdict',
  'group',
  'phase',
  'class',
  'metric',
  'baseline [q1, q3]',
  'now [q1, q3]',
  'change',
  'tolerance',
];

function rows(cells: readonly GateCell[]): string[][] {
  return cells.map((c) => [
    c.verdict.toUpperCase(),
    c.group,
    c.phase || '-',
    c.subject || '-',
    c.metric,
    statText(c.baseline),
    statText(c.current),
    c.change === null
      ? '-'
      : `${amount(c.change, c.kind, true)}${c.interval ? ` [${amount(c.interval.lo, c.kind, true)}, ${amount(c.interval.hi, c.kind, true)}]` : ''}`,
    toleranceText(c),
  ]);
}

/** One line: PASS or FAIL with counts. */
function gateSummaryLine(r: GateResult): string {
  const count = (v: GateVerdict): number => r.cells.filter((c) => c.verdict === v).length;
  const head = r.failed.length > 0 ? 'FAIL' : 'PASS';
  return `gate ${head}: ${count('worse')} worse beyond tolerance, ${count('missing')} missing, ${count('better')} better, ${count('pass')} within noise, ${count('new')} new (${r.cells.length} cells; with a 95 % interval of the change: worse only when all of it is beyond the floor, else tolerance max(${r.k} × IQR, floor))`;
}

/** The per-cell verdict table as aligned plain text (CI logs, terminals). */
export function gateTable(r: GateResult): string {
  return alignedText([HEADER, ...rows(r.cells)]);
}

/** Rows as columns padded to their widest cell, two spaces apart (both gates' text tables). */
export function alignedText(all: readonly (readonly string[])[]): string {
  const widths = (all[0] ?? []).map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)));
  return (
    all
      .map((row) =>
        row
          .map((v, i) => v.padEnd(widths[i] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

const mdCell = (v: string): string => v.replace(/\|/g, '\\|').replace(/[\r\n]+/g, ' ');

function mdTable(cells: readonly GateCell[]): string {
  const lines = [HEADER, HEADER.map(() => '---'), ...rows(cells)];
  return lines.map((row) => `| ${row.map(mdCell).join(' | ')} |`).join('\n') + '\n';
}

/** The verdict for a GitHub step summary: headline, failing cells, then every cell folded away. */
export function gateMarkdown(r: GateResult): string {
  const out = [
    `## plb nightly gate: ${r.failed.length > 0 ? '❌ FAIL' : '✅ PASS'}`,
    '',
    gateSummaryLine(r),
    '',
  ];
  if (r.failed.length > 0) out.push('### Failing cells', '', mdTable(r.failed));
  const better = r.cells.filter((c) => c.verdict === 'better');
  if (better.length > 0)
    out.push(
      `${better.length} cell(s) got better beyond noise: if that was meant, promote the candidate baseline.`,
      '',
    );
  if (r.notes.length > 0) out.push('### Notes', '', ...r.notes.map((n) => `- ${mdCell(n)}`), '');
  out.push('<details><summary>Every cell</summary>', '', mdTable(r.cells), '</details>', '');
  return out.join('\n');
}

/** A GitHub workflow command (`::error title=…::message`), escaped so the runner decodes it whole. */
/** Appends a gate's markdown verdict to GitHub's step summary, or says why it could not. */
export function appendStepSummary(
  markdown: string,
  opts: { log: (line: string) => void; env?: NodeJS.ProcessEnv | undefined },
): void {
  const file = (opts.env ?? process.env).GITHUB_STEP_SUMMARY;
  if (!file) {
    opts.log('note: GITHUB_STEP_SUMMARY is not set; the markdown verdict was not written');
    return;
  }
  try {
    appendFileSync(file, markdown);
  } catch (err) {
    opts.log(
      annotation('warning', 'plb gate', `cannot append to GITHUB_STEP_SUMMARY (${(err as Error).message})`),
    );
  }
}

export function annotation(level: 'error' | 'warning' | 'notice', title: string, message: string): string {
  const data = (s: string): string => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
  const prop = (s: string): string => data(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
  return `::${level} title=${prop(title)}::${data(message)}`;
}

/** `::error::` per failing cell and `::warning::` per note, for the Actions log and checks. */
export function gateAnnotations(r: GateResult): string[] {
  const fails = r.failed.map((c) => {
    if (c.metric === 'group' || c.metric === 'phase') return annotation('error', 'plb gate', what(c));
    const detail =
      c.change === null
        ? `${statText(c.baseline)} in the baseline, missing now`
        : `${statText(c.baseline)} -> ${statText(c.current)} (${amount(c.change, c.kind, true)}, tolerance ${toleranceText(c)})`;
    return annotation('error', 'plb gate', `${what(c)}: ${detail}`);
  });
  return [...fails, ...r.notes.map((n) => annotation('warning', 'plb gate', n))];
}

/**
 * Prints the verdict (notes, table, summary line) through `log`; with `github` also the annotations
 * and the markdown appended to $GITHUB_STEP_SUMMARY. Returns true when the gate failed.
 */
export function reportGate(
  r: GateResult,
  opts: { log: (line: string) => void; github?: boolean; env?: NodeJS.ProcessEnv },
): boolean {
  for (const n of r.notes) opts.log(`note: ${n}`);
  opts.log(gateTable(r).trimEnd());
  if (opts.github) {
    for (const a of gateAnnotations(r)) opts.log(a);
    appendStepSummary(gateMarkdown(r), opts);
  }
  opts.log(gateSummaryLine(r));
  return r.failed.length > 0;
}
