import { Args, Command, Flags } from '@oclif/core';
import { fail } from '../fail.js';
import { isPlbError, PlbError } from '../errors.js';
import { DEFAULT_TOLERANCE, TOLERANCE_EXIT_CODE, TOLERANCE_FIELDS } from '../report/tolerance.js';
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
absolute differences; 25% and 0.25 are the same.`;

  static override examples = [
    '<%= config.bin %> report runs/2026-11-30T10-00-00-plb',
    '<%= config.bin %> report runs/ --markdown --baseline static',
    `<%= config.bin %> report runs/ --compare-to benchmarks/baseline/summary.json --tolerance ${DEFAULT_TOLERANCE}`,
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
    } catch (err) {
      if (isPlbError(err, 'TOLERANCE_EXCEEDED')) this.exit(TOLERANCE_EXIT_CODE);
      if (isPlbError(err)) fail(this, err);
      throw err;
    }
  }
}
