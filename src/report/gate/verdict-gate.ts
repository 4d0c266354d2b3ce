// `plb report --compare-to <baseline> --gate`: the nightly's gate on what does not depend on the
// machine. For the headline cells (premium and freemium p95 and goodput in the fault phases, each
// strategy against rr in the same run) it compares tonight's in-run verdict with the baseline's.
// Absolute figures travel beside the verdicts as a trend and are never gated: the same kind of
// machine measured one scan at 11.6 and at 31.2 ms on different occasions.
import { PlbError } from '../../core/errors.js';
import { SERVICE_CLASSES, type ServiceClass } from '../../core/service-class.js';
import type { Change, Verdict } from '../../run-format/evidence.js';
import { faultPhases } from '../evidence/headline.js';
import type { VerdictGroup } from './verdict-baseline.js';

/** The headline metrics: the two a class's service is judged by. */
const HEADLINE_METRICS = ['p95', 'goodput'] as const;
type HeadlineMetric = (typeof HEADLINE_METRICS)[number];

/**
 * pass: the verdicts agree as the rules want; fail: a flip, or premium's no diff. became worse;
 * missing: the baseline has a verdict, tonight none (fails: the night did not measure it);
 * not gated: the baseline has no verdict to hold (no interval); new: only tonight has the cell.
 */
export type CellStatus = 'pass' | 'fail' | 'missing' | 'not gated' | 'new';

export interface VerdictCell {
  group: string;
  strategy: string;
  phase: string;
  cls: ServiceClass;
  metric: HeadlineMetric;
  /** The change against rr with its interval and verdict; null: no such cell on that side. */
  baseline: Change | null;
  current: Change | null;
  /** The strategy's own median of the metric (ms or queries/s): the trend, not gated. */
  baselineValue: number | null;
  currentValue: number | null;
  status: CellStatus;
  /** Why, in a few words (e.g. "flipped: better -> worse"). */
  why: string;
}

export interface VerdictGateResult {
  cells: VerdictCell[];
  /** fail and missing cells. */
  failed: VerdictCell[];
  /** Worth knowing, not failing: groups on one side only, invalid runs. */
  notes: string[];
}

/** A verdict that says something about the direction (no interval says nothing). */
type Decided = Exclude<Verdict, 'no interval'>;
const short = (v: Verdict): string => (v === 'no difference detected' ? 'no diff.' : v);

/**
 * The rule for one cell: a flip (better <-> worse) fails in every class; for premium, a
 * baseline "no diff." fails by becoming "worse" (and "better" by becoming "worse", a flip). Every
 * other move passes: losing a verdict to "no diff." is a loss of power, not a regression.
 */
export function verdictRule(
  cls: ServiceClass,
  base: Decided,
  now: Decided,
): { status: 'pass' | 'fail'; why: string } {
  const move = `${short(base)} -> ${short(now)}`;
  if ((base === 'better' && now === 'worse') || (base === 'worse' && now === 'better'))
    return { status: 'fail', why: `flipped: ${move}` };
  if (cls === 'premium' && base === 'no difference detected' && now === 'worse')
    return { status: 'fail', why: `premium got worse: ${move}` };
  return { status: 'pass', why: base === now ? 'same verdict' : move };
}

function changeOf(g: VerdictGroup | undefined, phase: string, cls: ServiceClass, m: HeadlineMetric) {
  const c = g?.evidence?.phases.find((p) => p.name === phase)?.classes[cls]?.vsBaseline?.[m];
  return c ?? null;
}

function valueOf(g: VerdictGroup | undefined, phase: string, cls: ServiceClass, m: HeadlineMetric) {
  return g?.phases.find((p) => p.name === phase)?.classes[cls]?.[m]?.median ?? null;
}

/** The groups compared against the baseline strategy within their run (their evidence says so). */
const compared = (gs: readonly VerdictGroup[]): VerdictGroup[] =>
  gs.filter((g) => g.evidence?.baselineKey !== undefined);

function cellStatus(
  cls: ServiceClass,
  b: Change | null,
  c: Change | null,
): Pick<VerdictCell, 'status' | 'why'> {
  if (b === null) return { status: 'new', why: 'not in the baseline' };
  if (b.verdict === 'no interval')
    return { status: 'not gated', why: `baseline: ${b.note ?? 'no interval'}` };
  if (c === null) return { status: 'missing', why: 'in the baseline, not measured now' };
  if (c.verdict === 'no interval')
    return { status: 'missing', why: `no verdict now: ${c.note ?? 'no interval'}` };
  return verdictRule(cls, b.verdict, c.verdict);
}

/**
 * The verdict gate: every headline cell of every strategy compared against the baseline strategy,
 * in the current groups and in the baseline's. Throws BAD_INPUT when the baseline holds no verdict
 * at all (nothing would be gated) or when nothing matches.
 */
export function runVerdictGate(
  current: readonly VerdictGroup[],
  baseline: readonly VerdictGroup[],
): VerdictGateResult {
  const notes: string[] = [];
  const base = compared(baseline);
  const now = compared(current);
  if (base.length === 0)
    throw new PlbError('BAD_INPUT', 'compare-to: the baseline has no verdicts against rr', {
      hint: 'measure the baseline with rr beside the other strategies, in runs with per-second data',
    });
  if (!now.some((g) => base.some((b) => b.key === g.key)))
    throw new PlbError(
      'BAD_INPUT',
      'compare-to: no group of the runs matches a baseline group with verdicts',
      {
        hint: `baseline has ${base.map((b) => b.key).join(', ')}; now: ${now.map((g) => g.key).join(', ') || 'no group compared with rr'}`,
      },
    );
  const cells: VerdictCell[] = [];
  const keys = [
    ...base.map((b) => b.key),
    ...now.map((g) => g.key).filter((k) => !base.some((b) => b.key === k)),
  ];
  for (const key of keys) {
    const b = base.find((x) => x.key === key);
    const g = now.find((x) => x.key === key);
    if (!b) notes.push(`${key}: not in the baseline, not gated`);
    if (!g) notes.push(`${key}: in the baseline, no runs compared with rr now`);
    const phases = [...new Set([...(b ? faultPhases(b) : []), ...(g ? faultPhases(g) : [])])];
    for (const phase of phases)
      for (const cls of SERVICE_CLASSES)
        for (const metric of HEADLINE_METRICS) {
          const bc = changeOf(b, phase, cls, metric);
          const cc = changeOf(g, phase, cls, metric);
          if (bc === null && cc === null) continue;
          cells.push({
            group: key,
            strategy: (b ?? g)?.strategy ?? '',
            phase,
            cls,
            metric,
            baseline: bc,
            current: cc,
            baselineValue: valueOf(b, phase, cls, metric),
            currentValue: valueOf(g, phase, cls, metric),
            ...cellStatus(cls, bc, cc),
          });
        }
  }
  for (const g of now)
    for (const why of g.evidence?.invalid ?? []) notes.push(`not a valid measurement: ${why}`);
  if (!cells.some((c) => c.status !== 'not gated' && c.status !== 'new'))
    throw new PlbError('BAD_INPUT', 'compare-to: no headline cell of the baseline has a verdict to hold', {
      hint: 'its fault phases had no intervals (too short, or no per-second data): re-measure the baseline',
    });
  return { cells, failed: cells.filter((c) => c.status === 'fail' || c.status === 'missing'), notes };
}
