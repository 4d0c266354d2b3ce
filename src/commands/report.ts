import { Args, Command, Flags } from '@oclif/core';
import { fail } from '../fail.js';
import { formatError, isPlbError, PlbError } from '../errors.js';
import { DEFAULT_TOLERANCE, TOLERANCE_EXIT_CODE, TOLERANCE_FIELDS } from '../report/tolerance.js';
import { annotation, DEFAULT_GATE_FLOORS, GATE_K, gateSummaryLine, reportGate } from '../report/gate.js';
import { writeReports } from '../report/report.js';
import { escapeLines } from '../text.js';

export default class Report extends Command {
  static override description = `Phase tables, strategy comparison and report.html for run directories.

Several runs of one strategy+plan+mix are repeats: every metric is their median with the
interquartile range (linear-interpolation quantiles, type 7). With several strategies on one
plan the change of p95 and goodput against --baseline is shown (positive = better).
Writes report.html into each run directory, and for several runs a comparison page; with
--json or --csv only when --html is given.

Exit codes: 0 ok; 2 bad input or unreadable run directory; ${TOLERANCE_EXIT_CODE} a metric moved beyond
its --tolerance (with --compare-to). Tolerance fields: ${Object.keys(TOLERANCE_FIELDS).join(', ')};
p50/p95/p99/goodput/lifetime are relative to the baseline, retention/inflation/cpu/cv/errors are
absolute differences; 25% and 0.25 are the same.

--gate makes --compare-to one-sided and noise-aware: a cell (group, phase, class, metric) fails
only when it got worse (latency or inflation up, goodput, retention or lifetime down) by more than
max(${GATE_K} x the baseline's IQR, floor), the IQR relative to the baseline median for relative
fields. Better never fails; a cell the baseline has and the runs lack fails. With --gate,
--tolerance gives the fields to gate and their floors (default ${DEFAULT_GATE_FLOORS}).
--github adds ::error:: annotations and appends the verdict to $GITHUB_STEP_SUMMARY.`;

  static override examples = [
    '<%= config.bin %> report runs/2026-11-30T10-00-00-plb',
    '<%= config.bin %> report runs/ --markdown --baseline static',
    `<%= config.bin %> report runs/ --compare-to benchmarks/baseline/summary.json --tolerance ${DEFAULT_TOLERANCE}`,
    '<%= config.bin %> report runs/ --compare-to benchmarks/baseline/summary.json --gate --github',
    '<%= config.bin %> report runs/ --json --skip-html --baseline-out candidate/summary.json',
  ];

  static override strict = false;

  static override args = {
    runDir: Args.string({ required: true, description: 'run directories (or directories holding them)' }),
  };

  static override flags = {
    json: Flags.boolean({ description: 'print JSON', exclusive: ['csv', 'markdown'] }),
    csv: Flags.boolean({ description: 'print CSV (long format)', exclusive: ['json', 'markdown'] }),
    markdown: Flags.boolean({ description: 'print markdown tables', exclusive: ['json', 'csv'] }),
    baseline: Flags.string({ description: 'strategy the others are compared with', default: 'rr' }),
    html: Flags.string({
      description:
        'where to write the comparison page (default <runs parent>/comparison.html); with --json or --csv, write HTML only when this is given',
      exclusive: ['skip-html'],
    }),
    'skip-html': Flags.boolean({ description: 'do not write any HTML', exclusive: ['html'] }),
    'compare-to': Flags.string({
      description: 'baseline summary.json (or plb report --json output) to check against',
    }),
    tolerance: Flags.string({ description: `allowed movement per metric, e.g. ${DEFAULT_TOLERANCE}` }),
    gate: Flags.boolean({
      description: 'with --compare-to: fail only on cells worse than the baseline beyond its noise (IQR)',
      dependsOn: ['compare-to'],
    }),
    github: Flags.boolean({
      description:
        'GitHub Actions: ::error:: annotations, and the gate verdict appended to $GITHUB_STEP_SUMMARY',
    }),
    'baseline-out': Flags.string({
      description: 'write a candidate baseline for --compare-to made from these runs (the --json document)',
    }),
    'include-incomplete': Flags.boolean({
      description:
        'put incomplete runs (stopped, failed faults, crashed) into the medians of groups that have complete runs too',
      default: false,
    }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Report);
    const format = flags.json ? 'json' : flags.csv ? 'csv' : flags.markdown ? 'markdown' : 'table';
    try {
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
        baselineOut: flags['baseline-out'],
      });
      // Names come from files on disk: control characters are escaped for the terminal. Tables
      // escape them themselves (before colouring); JSON and CSV reach a pipe or file as rendered.
      const verbatim =
        format === 'table' || (!process.stdout.isTTY && (format === 'json' || format === 'csv'));
      process.stdout.write(verbatim ? out.text : escapeLines(out.text));
      for (const f of out.htmlFiles) this.logToStderr(`wrote ${f}`);
      if (out.tolerance) {
        for (const n of out.tolerance.notes) this.logToStderr(`note: ${n}`);
        for (const line of out.movedLines) this.logToStderr(line);
        const summary = `${out.tolerance.moved.length} of ${out.tolerance.checked} checked metrics moved beyond tolerance`;
        this.logToStderr(summary);
        if (out.tolerance.moved.length > 0) {
          throw new PlbError('TOLERANCE_EXCEEDED', summary);
        }
      }
      if (out.candidate) {
        this.logToStderr(`wrote candidate baseline ${out.candidate.file}`);
        for (const w of out.candidate.warnings)
          this.logToStderr(flags.github ? annotation('warning', 'plb report', w) : `note: ${w}`);
      }
      if (out.gate && reportGate(out.gate, { log: (l) => this.logToStderr(l), github: flags.github })) {
        throw new PlbError('TOLERANCE_EXCEEDED', gateSummaryLine(out.gate));
      }
    } catch (err) {
      if (isPlbError(err, 'TOLERANCE_EXCEEDED')) this.exit(TOLERANCE_EXIT_CODE);
      // An input error (no runs, unreadable baseline) must show on the workflow run too.
      if (flags.github) process.stderr.write(`${annotation('error', 'plb report', formatError(err))}\n`);
      if (isPlbError(err)) fail(this, err);
      throw err;
    }
  }
}
