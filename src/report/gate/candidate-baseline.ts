// `plb report runs/ --baseline-out FILE`: a baseline for --compare-to made from these runs, so a
// CI runner's own artifacts can become its next baseline (benchmarks/baseline/README.md).
import type { RunSummary } from '../../run-format/summary.js';
import { writeFileSafe } from '../../core/safe-write.js';
import type { RunGroup } from '../../run-format/report.js';
import { compareStrategies } from '../compare.js';
import { reportJson } from '../tables/render.js';
import { type ReportJson } from '../../run-format/report.js';

/** Where a candidate came from: enough to tell whether it is fit to promote. */
interface CandidateProvenance {
  createdAt: string;
  runs: number;
  seeds: number[];
  node: string;
  /** GITHUB_SHA, GITHUB_RUN_ID and RUNNER_OS when made on GitHub Actions. */
  commit?: string;
  ciRun?: string;
  runnerOs?: string;
}

export type CandidateBaseline = ReportJson & { candidate: CandidateProvenance };

/** The `plb report --json` document (what loadBaseline reads) plus where it came from. */
export function candidateBaseline(
  groups: RunGroup[],
  summaries: readonly RunSummary[],
  baselineStrategy: string,
  env: NodeJS.ProcessEnv = process.env,
  now: Date = new Date(),
): CandidateBaseline {
  const cmp = compareStrategies(groups, baselineStrategy);
  const candidate: CandidateProvenance = {
    createdAt: now.toISOString(),
    runs: summaries.length,
    seeds: [...new Set(summaries.map((s) => s.seed))].sort((a, b) => a - b),
    node: process.version,
    ...(env.GITHUB_SHA ? { commit: env.GITHUB_SHA } : {}),
    ...(env.GITHUB_RUN_ID ? { ciRun: env.GITHUB_RUN_ID } : {}),
    ...(env.RUNNER_OS ? { runnerOs: env.RUNNER_OS } : {}),
  };
  return { ...reportJson(groups, cmp.entries.length > 0 ? cmp : null, baselineStrategy), candidate };
}

/** Why a candidate is not fit to promote as it is (empty when it is). */
export function candidateWarnings(groups: readonly RunGroup[]): string[] {
  const out: string[] = [];
  for (const g of groups) {
    if (!g.complete) out.push(`candidate: ${g.key} has incomplete runs (${g.problems.join('; ')})`);
    if (g.runIds.length < 3)
      out.push(`candidate: ${g.key} has ${g.runIds.length} run(s); the gate's IQR needs 3 or more`);
    for (const p of g.phases)
      for (const why of p.invalid)
        out.push(`candidate: ${g.key} ${p.name} is not a valid measurement in ${why}`);
  }
  return out;
}

export function writeCandidateBaseline(file: string, doc: CandidateBaseline): void {
  writeFileSafe(file, JSON.stringify(doc, null, 2) + '\n', 'baseline-out');
}
