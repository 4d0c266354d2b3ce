import { Args, Errors, Flags } from '@oclif/core';
import { EXIT_CODES_HELP, errorLine } from '../core/fail.js';
import { PlbCommand } from '../cli/plb-command.js';
import { compareStrategies } from '../report/compare.js';
import { renderCsvPerRun } from '../report/tables/csv.js';
import { renderReport, reportJson, SIGN_CONVENTION } from '../report/tables/render.js';
import { DEFAULT_TOLERANCE, TOLERANCE_FIELDS } from '../report/gate/tolerance.js';
import { TOLERANCE_EXIT_CODE } from '../core/fail.js';
import { annotation, DEFAULT_GATE_FLOORS, GATE_K, reportGate } from '../report/gate/gate.js';
import { reportVerdictGate } from '../report/gate/verdict-render.js';
import { historyTable, readHistory } from '../report/gate/history.js';
import { writeHistoryHtml } from '../report/gate/history-chart.js';
import { writeReports } from '../report/report.js';
import { escapeLines } from '../core/text.js';
import { PlbError } from '../core/errors.js';

const OUTPUT = 'OUTPUT';

/** Named as oclif's own, so it exits and hints as a usage error does (core/fail.ts). */
class RequiredArgsError extends Errors.CLIError {}
const COMPARISON = 'COMPARISON';

export default class Report extends PlbCommand {
  static override description = `Phase tables, strategy comparison and report.html for run directories.

Several runs of one strategy+plan+mix are repeats: every metric is their median with the interquartile range (linear-interpolation quantiles, type 7). With several strategies on one plan the change of p95 and goodput against --baseline is shown. ${SIGN_CONVENTION} Terminal tables are compact (at most 100 columns for the demo plan); --wide shows every column. Writes report.html into each run directory, and for several runs a comparison page; with --json or --csv only when --html is given.

Tolerance fields: ${Object.keys(TOLERANCE_FIELDS).join(', ')}; p50/p95/p99/goodput/lifetime are relative to the baseline, retention/inflation/cpu/cv/errors are absolute differences; 25% and 0.25 are the same.

--gate holds verdicts, not figures: for the headline cells (premium and freemium p95 and goodput in the fault phases, each strategy against --baseline within its run) the runs' verdict is compared with the baseline's (a plb-report/3 JSON or run directories). A cell fails when its verdict flipped (better <-> worse), when premium's "no diff." became "worse", or when the baseline has a verdict and the runs none. The strategies' own figures are printed beside as a trend, never gated. --history-append FILE adds the verdict table as one JSON line; --history FILE (no run directories needed) tables premium's change against rr per night.

--gate-absolute gates absolute figures, for two sides measured on one machine: a cell fails only when it got worse by more than max(${GATE_K} x the baseline's IQR, floor), the IQR relative to the baseline median for relative fields; --tolerance gives the fields and floors (default ${DEFAULT_GATE_FLOORS}). --github adds ::error:: annotations and appends the verdict to $GITHUB_STEP_SUMMARY.

${EXIT_CODES_HELP}`;

  static override examples = [
    '<%= config.bin %> report runs/2026-11-30T10-00-00-plb',
    '<%= config.bin %> report runs/ --markdown --baseline static',
    '<%= config.bin %> report runs/ --csv --per-run > runs.csv',
    `<%= config.bin %> report runs/ --compare-to benchmarks/baseline/summary.json --tolerance ${DEFAULT_TOLERANCE}`,
    '<%= config.bin %> report runs/ --compare-to benchmarks/baseline/summary.json --gate --github',
    '<%= config.bin %> report runs/ --compare-to runs-of-last-week/ --gate-absolute',
    '<%= config.bin %> report --history nightly-history/history.jsonl',
    '<%= config.bin %> report runs/ --json --skip-html --baseline-out candidate/summary.json',
  ];

  static override strict = false;

  static override args = {
    runDir: Args.string({
      description: 'run directories (or directories holding them); not needed with --history',
    }),
  };

  static override flags = {
    csv: Flags.boolean({
      description: 'print CSV (long format: one row per metric)',
      exclusive: ['json', 'markdown', 'wide'],
      helpGroup: OUTPUT,
    }),
    'per-run': Flags.boolean({
      description: 'with --csv: one row per run, phase, subject and metric instead of the medians of repeats',
      dependsOn: ['csv'],
      helpGroup: OUTPUT,
    }),
    markdown: Flags.boolean({
      description: 'print markdown tables (every column)',
      exclusive: ['json', 'csv'],
      helpGroup: OUTPUT,
    }),
    wide: Flags.boolean({
      description: 'terminal tables with every column (lifetimes, sessions, connect time, IQRs)',
      exclusive: ['json', 'csv'],
      helpGroup: OUTPUT,
    }),
    html: Flags.string({
      description:
        'where to write the comparison page (default <runs parent>/comparison.html); with --json or --csv, write HTML only when this is given',
      exclusive: ['skip-html'],
      helpGroup: OUTPUT,
    }),
    'skip-html': Flags.boolean({
      description: 'do not write any HTML',
      exclusive: ['html'],
      helpGroup: OUTPUT,
    }),
    baseline: Flags.string({
      description: 'strategy the others are compared with',
      default: 'rr',
      helpGroup: COMPARISON,
    }),
    'compare-to': Flags.string({
      description: 'baseline summary.json (or plb report --json output) to check against',
      helpGroup: COMPARISON,
    }),
    tolerance: Flags.string({
      description: `allowed movement per metric, e.g. ${DEFAULT_TOLERANCE}`,
      helpGroup: COMPARISON,
    }),
    gate: Flags.boolean({
      description:
        "with --compare-to: fail when a headline cell's verdict against --baseline flipped from the baseline's (figures: a trend, not gated)",
      dependsOn: ['compare-to'],
      helpGroup: COMPARISON,
    }),
    'gate-absolute': Flags.boolean({
      description:
        'with --compare-to, both sides from one machine: fail on absolute figures worse than the baseline beyond its noise (IQR)',
      dependsOn: ['compare-to'],
      helpGroup: COMPARISON,
    }),
    'history-append': Flags.string({
      description:
        "with --gate: append the verdict table as one JSON line to this file (the nightly's history)",
      dependsOn: ['gate'],
      helpGroup: COMPARISON,
    }),
    history: Flags.string({
      description:
        "print premium's p95 change against rr per night from a --history-append file (with --html, a chart too), then stop",
      helpGroup: OUTPUT,
    }),
    github: Flags.boolean({
      description:
        'GitHub Actions: ::error:: annotations, and the gate verdict appended to $GITHUB_STEP_SUMMARY',
      helpGroup: OUTPUT,
    }),
    'baseline-out': Flags.string({
      description: 'write a candidate baseline for --compare-to made from these runs (the --json document)',
      helpGroup: OUTPUT,
    }),
    'include-incomplete': Flags.boolean({
      description:
        'put incomplete runs (stopped, failed faults, crashed) into the medians of groups that have complete runs too',
      default: false,
      helpGroup: COMPARISON,
    }),
  };

  async run(): Promise<object | void> {
    const { argv, flags } = await this.parse(Report);
    const json = this.jsonEnabled();
    // The argument is optional for --history alone; otherwise missing, as oclif would say it.
    if (argv.length === 0 && flags.history === undefined)
      throw new RequiredArgsError('missing argument runDir');
    if (flags.history !== undefined) {
      if (argv.length > 0)
        throw new PlbError('BAD_INPUT', 'history: give a history file or run directories, not both');
      const nights = readHistory(flags.history);
      if (flags.html !== undefined) {
        await writeHistoryHtml(flags.html, nights);
        process.stderr.write(`wrote ${escapeLines(flags.html)}\n`);
      }
      if (json) return { nights };
      process.stdout.write(escapeLines(historyTable(nights)));
      return;
    }
    const format = json ? 'json' : flags.csv ? 'csv' : flags.markdown ? 'markdown' : 'table';
    const out = await writeReports(argv as string[], {
      format,
      baseline: flags.baseline,
      // Undefined: the format decides (no HTML for --json/--csv without --html).
      html: flags['skip-html'] ? false : undefined,
      comparisonHtml: flags.html,
      compareTo: flags['compare-to'],
      tolerance: flags.tolerance,
      includeIncomplete: flags['include-incomplete'],
      gate: flags.gate,
      gateAbsolute: flags['gate-absolute'],
      historyAppend: flags['history-append'],
      baselineOut: flags['baseline-out'],
    });
    // stderr, not logToStderr: oclif silences that with --json, and these lines matter then too.
    const note = (line: string): void => {
      process.stderr.write(`${escapeLines(line)}\n`);
    };
    for (const f of out.htmlFiles) note(`wrote ${f}`);
    let moved = false;
    if (out.tolerance) {
      for (const n of out.tolerance.notes) note(`note: ${n}`);
      for (const line of out.movedLines) note(line);
      note(
        `${out.tolerance.moved.length} of ${out.tolerance.checked} checked metrics moved beyond tolerance`,
      );
      moved = out.tolerance.moved.length > 0;
    }
    if (out.candidate) {
      note(`wrote candidate baseline ${out.candidate.file}`);
      for (const w of out.candidate.warnings)
        note(flags.github ? annotation('warning', 'plb report', w) : `note: ${w}`);
    }
    // The gate's verdict table and annotations (stderr; the step summary with --github).
    if (out.absoluteGate && reportGate(out.absoluteGate, { log: note, github: flags.github })) moved = true;
    if (
      out.verdictGate &&
      reportVerdictGate(out.verdictGate, { log: note, github: flags.github, images: out.images })
    )
      moved = true;
    if (json) {
      const cmp = compareStrategies(out.groups, flags.baseline);
      // The plb-report document as schema'd (run-format/report.ts); verdicts went to stderr.
      const result = reportJson(out.groups, cmp.entries.length > 0 ? cmp : null, flags.baseline);
      if (!moved) return result;
      // The report is printed even when a metric moved: the exit code alone says it did.
      this.logJson(result);
    } else {
      // Names come from files on disk: control characters are escaped for the terminal. Tables
      // escape them themselves (before colouring); CSV reaches a pipe or file as rendered.
      const verbatim = format === 'table' || (!process.stdout.isTTY && format === 'csv');
      const text = flags['per-run']
        ? renderCsvPerRun(out.runs.map((r) => r.summary))
        : flags.wide
          ? renderReport(out.groups, { format, baseline: flags.baseline, wide: true })
          : out.text;
      process.stdout.write(verbatim ? text : escapeLines(text));
    }
    if (moved) {
      // Not an error line: the moved metrics (or failed cells) were listed above.
      this.exit(TOLERANCE_EXIT_CODE);
    }
  }

  /** With --github an input error (no runs, unreadable baseline) shows on the workflow run too. */
  protected override async catch(err: Error & { exitCode?: number }): Promise<never> {
    if (!(err instanceof Errors.ExitError) && this.argv.includes('--github'))
      process.stderr.write(`${annotation('error', 'plb report', errorLine(err))}\n`);
    return super.catch(err);
  }
}
