// What `plb bench run` prints at the end: the runs side by side, or their summaries as JSON.
import { renderSideBySide } from '../report/side-by-side.js';
import type { BenchResult } from './run.js';

export function renderBenchResults(
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
