// What the verdict gate reads on each side: groups with their fault phases, the absolute medians
// (the trend) and the in-run verdicts against rr. The baseline is a `plb report --json` document
// of plb-report/3 or later, or run directories (read and given their intervals here).
import { readFileSync, statSync } from 'node:fs';
import { z } from 'zod';
import { PlbError } from '../../core/errors.js';
import { parseOrThrow } from '../../core/zod-issue.js';
import { statSchema } from '../../run-format/common.js';
import { groupEvidenceSchema, type GroupEvidence } from '../../run-format/evidence.js';
import { aggregateRuns } from '../aggregate.js';
import { attachEvidence } from '../evidence/evidence.js';
import { loadRuns } from '../run-dir.js';

/** A group as the verdict gate reads it: a RunGroup is one. */
export interface VerdictGroup {
  key: string;
  strategy: string;
  phases: ReadonlyArray<{
    name: string;
    survivors?: { median: number | null };
    classes: Partial<Record<'premium' | 'freemium', Partial<Record<string, { median: number | null }>>>>;
  }>;
  evidence?: GroupEvidence;
}

/** plb-report/3 added the groups' evidence (intervals and verdicts); /1 and /2 have none. */
const hasVerdicts = (schema: string): boolean => Number(/^plb-report\/(\d+)$/.exec(schema)?.[1] ?? 0) >= 3;

// Only what the gate reads; a later report's other fields pass through unread.
const verdictBaselineSchema = z.object({
  schema: z.string(),
  groups: z.array(
    z.object({
      key: z.string(),
      strategy: z.string(),
      phases: z.array(
        z.object({
          name: z.string(),
          survivors: statSchema.optional(),
          classes: z.object({
            premium: z.record(z.string(), statSchema).optional(),
            freemium: z.record(z.string(), statSchema).optional(),
          }),
        }),
      ),
      evidence: groupEvidenceSchema.optional(),
    }),
  ),
});

const REMEASURE =
  "re-measure the baseline with today's plan (benchmarks/baseline/README.md), or compare figures on one machine with --gate-absolute";

/**
 * The baseline groups from `path`: a plb-report/3 JSON, or a directory of runs. An older report
 * or a bare summary.json carries no verdicts: refused in one line that says what to do.
 */
export function loadVerdictBaseline(path: string, baselineStrategy = 'rr'): VerdictGroup[] {
  let isDir = false;
  try {
    isDir = statSync(path).isDirectory();
  } catch (err) {
    throw new PlbError('BAD_INPUT', `compare-to: cannot read ${path}`, { cause: err });
  }
  if (isDir) {
    const runs = loadRuns([path]);
    const groups = aggregateRuns(
      runs.map((r) => r.summary),
      { configs: new Map(runs.map((r) => [r.summary, r.config])) },
    );
    attachEvidence(groups, runs, baselineStrategy);
    return groups;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new PlbError('BAD_INPUT', `compare-to: cannot read ${path} as JSON`, { cause: err });
  }
  const obj = raw as Record<string, unknown> | null;
  if (Array.isArray(raw) || (obj && Array.isArray(obj.phases)))
    throw new PlbError('BAD_INPUT', `compare-to: ${path} is run summaries, which carry no verdicts`, {
      hint: `give plb report --json output of runs of several strategies, or their run directories; or ${REMEASURE}`,
    });
  const schema = typeof obj?.schema === 'string' ? obj.schema : '(none)';
  if (!hasVerdicts(schema))
    throw new PlbError(
      'BAD_INPUT',
      `compare-to: ${path} is ${schema}, written before reports carried verdicts: ${REMEASURE}`,
    );
  return parseOrThrow(verdictBaselineSchema, raw, path, { code: 'BAD_INPUT' }).groups;
}
