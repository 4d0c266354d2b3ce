// `plb report` as a function: load run directories, render text, write HTML, check tolerances.
import { dirname, join, resolve, sep } from 'node:path';
import { PlbError } from '../core/errors.js';
import { checkWritableFile, writeFileSafe } from '../core/safe-write.js';
import type { LoadedRun } from '../metrics/store/load-run.js';
import { aggregateRuns } from './aggregate.js';
import { attachEvidence } from './evidence/evidence.js';
import { type RunGroup } from '../run-format/report.js';
import { renderComparisonHtml, renderRunHtml } from './html.js';
import { renderReport, type ReportFormat } from './tables/render.js';
import { loadRuns } from './run-dir.js';
import {
  checkTolerance,
  DEFAULT_TOLERANCE,
  loadBaseline,
  parseTolerance,
  type Moved,
  type ToleranceResult,
} from './gate/tolerance.js';
import { DEFAULT_GATE_FLOORS, parseGateFloors, runGate, type GateResult } from './gate/gate.js';
import { candidateBaseline, candidateWarnings, writeCandidateBaseline } from './gate/candidate-baseline.js';
import { loadVerdictBaseline } from './gate/verdict-baseline.js';
import { runVerdictGate, type VerdictGateResult } from './gate/verdict-gate.js';
import { appendHistory, historyEntry } from './gate/history.js';

export interface ReportOptions {
  format?: ReportFormat;
  baseline?: string;
  /**
   * Write report.html into each run dir and, for several runs, the comparison page. Default: yes
   * for tables and markdown; for JSON and CSV (output for machines) only when comparisonHtml is
   * given.
   */
  html?: boolean;
  /** Where the comparison page goes (default: comparison.html in the runs' common parent). */
  comparisonHtml?: string;
  compareTo?: string;
  tolerance?: string;
  /** Put incomplete runs into the medians of groups that have complete ones too (default false). */
  includeIncomplete?: boolean;
  /**
   * With compareTo: the verdict gate (each strategy's in-run verdicts against the baseline
   * strategy, tonight against the baseline's; figures only as a trend).
   */
  gate?: boolean;
  /**
   * With compareTo: the one-sided, IQR-aware gate on absolute figures (tolerance = the floors)
   * instead of the two-sided check. Meaningful only when both sides ran on one machine.
   */
  gateAbsolute?: boolean;
  /** With gate: append the verdict table as one line to this JSONL history. */
  historyAppend?: string;
  /** Write a candidate baseline (the --json document plus provenance) made from these runs. */
  baselineOut?: string;
}

export interface ReportOutcome {
  runs: LoadedRun[];
  groups: RunGroup[];
  /** The report in the chosen format (for stdout). */
  text: string;
  htmlFiles: string[];
  tolerance: ToleranceResult | null;
  /** One line per moved metric (for stderr), empty when nothing moved. */
  movedLines: string[];
  /** With gateAbsolute: the per-cell verdict on absolute figures. */
  absoluteGate?: GateResult | null;
  /** With gate: the per-cell verdict on verdicts. */
  verdictGate?: VerdictGateResult | null;
  /** The PostgreSQL images the runs used (config.json), `ref@digest` or `ref (id)`. */
  images: string[];
  /** With baselineOut: the file written and why the candidate may not be fit to promote. */
  candidate?: { file: string; warnings: string[] } | null;
}

export async function writeReports(
  paths: readonly string[],
  opts: ReportOptions = {},
): Promise<ReportOutcome> {
  if (paths.length === 0) throw new PlbError('BAD_INPUT', 'run-dir: give at least one run directory');
  const baseline = opts.baseline ?? 'rr';
  if (opts.gate && opts.compareTo === undefined) throw new PlbError('BAD_INPUT', 'gate: needs --compare-to');
  if (opts.gateAbsolute && opts.compareTo === undefined)
    throw new PlbError('BAD_INPUT', 'gate-absolute: needs --compare-to');
  if (opts.gate && opts.gateAbsolute)
    throw new PlbError('BAD_INPUT', 'gate: give --gate or --gate-absolute, not both');
  if (opts.gate && opts.tolerance !== undefined)
    throw new PlbError('BAD_INPUT', 'tolerance: --gate holds verdicts, not figures', {
      hint: 'floors for absolute figures go with --gate-absolute (one machine only)',
    });
  if (opts.historyAppend !== undefined && !opts.gate)
    throw new PlbError('BAD_INPUT', 'history-append: needs --gate');
  const historyFile =
    opts.historyAppend !== undefined ? checkWritableFile(opts.historyAppend, 'history-append') : undefined;
  // Parse the tolerance before any work so a bad spec fails fast.
  const gateFloors = opts.gateAbsolute ? parseGateFloors(opts.tolerance ?? DEFAULT_GATE_FLOORS) : null;
  const tol =
    opts.compareTo !== undefined && !gateFloors && !opts.gate
      ? parseTolerance(opts.tolerance ?? DEFAULT_TOLERANCE)
      : null;
  if (opts.compareTo === undefined && opts.tolerance !== undefined) {
    throw new PlbError('BAD_INPUT', 'tolerance: needs --compare-to');
  }
  const baselineOut =
    opts.baselineOut !== undefined ? checkWritableFile(opts.baselineOut, 'baseline-out') : undefined;
  const runs = loadRuns(paths);
  // Every input is checked before anything is written: the baseline, then every target.
  const baselineGroups = opts.compareTo !== undefined && !opts.gate ? loadBaseline(opts.compareTo) : null;
  const verdictBaseline =
    opts.compareTo !== undefined && opts.gate ? loadVerdictBaseline(opts.compareTo, baseline) : null;
  const groups = aggregateRuns(
    runs.map((r) => r.summary),
    {
      includeIncomplete: opts.includeIncomplete ?? false,
      configs: new Map(runs.map((r) => [r.summary, r.config])),
    },
  );
  attachEvidence(groups, runs, baseline);
  const format = opts.format ?? 'table';
  const text = renderReport(groups, { format, baseline });

  const htmlFiles: string[] = [];
  const html =
    opts.html ?? (format === 'table' || format === 'markdown' || opts.comparisonHtml !== undefined);
  if (html) {
    const runFiles = runs.map((run) => checkWritableFile(join(run.dir, 'report.html'), 'report.html'));
    const comparison =
      runs.length > 1 || opts.comparisonHtml !== undefined
        ? checkWritableFile(
            opts.comparisonHtml ?? join(comparisonDir(runs.map((r) => r.dir)), 'comparison.html'),
            opts.comparisonHtml !== undefined ? 'html' : 'comparison.html',
          )
        : null;
    for (const [i, run] of runs.entries()) {
      const file = runFiles[i]!;
      writeFileSafe(file, await renderRunHtml(run), 'report.html');
      htmlFiles.push(file);
    }
    if (comparison !== null) {
      writeFileSafe(comparison, await renderComparisonHtml(groups, baseline), 'html');
      htmlFiles.push(comparison);
    }
  }

  let candidate: ReportOutcome['candidate'] = null;
  if (baselineOut !== undefined) {
    const doc = candidateBaseline(
      groups,
      runs.map((r) => r.summary),
      baseline,
    );
    writeCandidateBaseline(baselineOut, doc);
    candidate = { file: baselineOut, warnings: candidateWarnings(groups) };
  }

  let tolerance: ToleranceResult | null = null;
  if (baselineGroups && tol) {
    tolerance = checkTolerance(groups, baselineGroups, tol);
  }
  const absoluteGate = baselineGroups && gateFloors ? runGate(groups, baselineGroups, gateFloors) : null;
  const verdictGate = verdictBaseline ? runVerdictGate(groups, verdictBaseline) : null;
  const images = imagesOf(runs);
  if (verdictGate && historyFile !== undefined) appendHistory(historyFile, historyEntry(verdictGate, images));
  return {
    runs,
    groups,
    text,
    htmlFiles,
    tolerance,
    movedLines: tolerance ? tolerance.moved.map(movedLine) : [],
    absoluteGate,
    verdictGate,
    images,
    candidate,
  };
}

/** The images the runs' primaries ran on, each once: `ref@sha256:…` when pulled by digest. */
function imagesOf(runs: readonly LoadedRun[]): string[] {
  const out = new Set<string>();
  for (const r of runs) {
    const img = r.config.environment?.image;
    if (!img) continue;
    const digest = img.digests[0];
    out.add(digest ?? (img.id ? `${img.ref} (${img.id.slice(0, 19)})` : img.ref));
  }
  return [...out];
}

function movedLine(m: Moved): string {
  const v = (x: number | null): string => (x === null ? 'none' : String(Math.round(x * 1000) / 1000));
  if (m.metric === 'phase') return `moved: ${m.group} phase ${m.phase} is missing in the current runs`;
  const delta =
    m.delta === null
      ? 'present on one side only'
      : m.kind === 'relative'
        ? `${m.delta > 0 ? '+' : ''}${(m.delta * 100).toFixed(1)}%, tolerance ${(m.tolerance * 100).toFixed(1)}%`
        : `${m.delta > 0 ? '+' : ''}${Math.round(m.delta * 1000) / 1000}, tolerance ${m.tolerance}`;
  return `moved: ${m.group} ${m.phase} ${m.subject} ${m.metric}: ${v(m.baseline)} -> ${v(m.current)} (${delta}) ${m.direction}`;
}

/**
 * The runs' common parent: comparison.html goes next to the runs. Runs with nothing in common but
 * the root share no folder of their own; then it goes next to the first run, never into `/`.
 */
export function comparisonDir(dirs: readonly string[]): string {
  const parents = dirs.map((d) => dirname(resolve(d)));
  const parts = parents.map((p) => p.split(sep));
  const first = parts[0] ?? [];
  let n = first.length;
  for (const p of parts) {
    let i = 0;
    while (i < n && p[i] === first[i]) i++;
    n = i;
  }
  const common = first.slice(0, n).join(sep) || (parents[0] ?? sep);
  // A run directly under `/`: the page goes into the run's own folder.
  return common === sep ? resolve(dirs[0] ?? '.') : common;
}
