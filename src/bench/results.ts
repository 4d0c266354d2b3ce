// What `plb bench run` prints at the end: the runs side by side, or their summaries as JSON; the
// comparison, the aggregate, the paper's figures and the headline; report.html in every run.
import { formatError } from '../core/errors.js';
import { renderComparison, renderReport } from '../report/tables/render.js';
import { writeReports } from '../report/report.js';
import { headlineLines } from '../report/evidence/headline.js';
import { paperFigures } from '../report/paper/figures.js';
import { paperSection } from '../report/paper/render.js';
import { renderSideBySide } from '../report/tables/side-by-side.js';
import type { BenchResult } from './run.js';

function renderBenchResults(
  results: readonly BenchResult[],
  opts: { json: boolean; wide?: boolean },
): string {
  if (opts.json)
    return JSON.stringify(
      results.map((r) => ({ dir: r.dir, interrupted: r.interrupted, summary: r.summary })),
      null,
      2,
    );
  return renderSideBySide(
    results.map((r) => r.summary),
    { wide: opts.wide ?? false },
  );
}

/**
 * One run per strategy: the phase tables side by side, then the change against rr. Repeats or
 * several mixes: the aggregated report (median and IQR). Always: report.html in every run directory.
 */
export async function renderOutcome(
  results: readonly BenchResult[],
  strategies: readonly string[],
  planned: number,
  json: boolean,
  wide: boolean,
  io: { log: (line: string) => void; warn: (line: string) => void },
): Promise<void> {
  if (results.length === 0) return;
  const baseline = strategies.includes('rr') ? 'rr' : (strategies[0] ?? 'rr');
  const compare = strategies.length > 1 && strategies.includes('rr');
  const onePerStrategy = planned === strategies.length;
  if (json) io.log(renderBenchResults(results, { json: true }));
  else if (onePerStrategy) {
    io.log(renderBenchResults(results, { json: false, wide }));
    if (compare)
      io.log(
        renderComparison(
          results.map((r) => r.summary),
          { baseline, wide },
        ),
      );
  }
  try {
    const report = await writeReports(
      results.map((r) => r.dir),
      { format: 'table', baseline },
    );
    if (!json && !onePerStrategy) {
      io.log(wide ? renderReport(report.groups, { baseline, wide }) : report.text);
      if (compare) io.log(renderComparison(report.groups, { baseline, wide }));
    }
    // The side-by-side tables above leave out the paper's figures: a paper experiment gets them here.
    if (!json && onePerStrategy) {
      const paper = paperSection(paperFigures(report.groups), 'table', wide);
      if (paper.length > 0) io.log(paper.join('\n\n'));
    }
    // The series ends with its answer: intervals and verdicts, and whether every run was valid.
    const headline = headlineLines(report.groups, baseline);
    if (!json && headline.length > 0) io.log(headline.join('\n'));
    for (const f of report.htmlFiles) io.warn(`html: ${f}`);
  } catch (err) {
    // The runs are on disk whatever happens here: a report failure must not lose them.
    io.warn(`report failed: ${formatError(err)} (plb report <run-dir> retries)`);
  }
}
