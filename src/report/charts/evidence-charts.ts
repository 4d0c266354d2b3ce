// What the bar charts draw as error bars: the 95 % interval of a bar (pooled over the group's
// runs) or of a change, from the groups' evidence; null when there is none.
import type { IntervalMetric } from '../../metrics/intervals/intervals.js';
import type { ServiceClass } from '../../core/service-class.js';
import type { RunGroup } from '../../run-format/report.js';

export interface Bar {
  value: number;
  lo: number;
  hi: number;
}

/** A bar's 95 % interval, with the value it belongs to (the pooled estimate). */
export function barInterval(
  g: RunGroup,
  phase: string,
  cls: ServiceClass,
  metric: IntervalMetric,
): Bar | null {
  const e = g.evidence?.phases.find((p) => p.name === phase)?.classes[cls].metrics[metric];
  return e && e.value !== null && e.lo !== null && e.hi !== null
    ? { value: e.value, lo: e.lo, hi: e.hi }
    : null;
}

/** The 95 % interval of a change against the baseline strategy (Δ, a fraction). */
export function changeInterval(
  groups: readonly RunGroup[],
  find: { plan: string; mixLabel: string; settingsLabel: string; strategy: string },
  phase: string,
  cls: ServiceClass,
  metric: IntervalMetric,
): { lo: number; hi: number } | null {
  const g = groups.find(
    (x) =>
      x.plan === find.plan &&
      x.mixLabel === find.mixLabel &&
      x.settingsLabel === find.settingsLabel &&
      x.strategy === find.strategy,
  );
  const c = g?.evidence?.phases.find((p) => p.name === phase)?.classes[cls].vsBaseline?.[metric];
  return c && c.lo !== null && c.hi !== null ? { lo: c.lo, hi: c.hi } : null;
}

/**
 * The note under a bar chart naming its bars drawn without a 95 % interval (`why` says what they
 * show instead); null when every bar has one.
 */
export function missingIntervalNote(
  bars: ReadonlyArray<{ label: string; ci: boolean }>,
  why: string,
): string | null {
  const missing = [...new Set(bars.filter((b) => !b.ci).map((b) => b.label))];
  if (missing.length === 0) return null;
  const shown = missing.length > 12 ? [...missing.slice(0, 12), `and ${missing.length - 12} more`] : missing;
  return `No 95 % interval for ${shown.join(', ')}: ${why}.`;
}

/** Why a bar has no interval, in general terms (the report's notes say which run and why). */
export const NO_INTERVAL_WHY =
  'no per-second data or too few seconds (see the notes), or the fault interval, which spans several phases';
