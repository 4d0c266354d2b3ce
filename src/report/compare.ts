// Strategy against baseline. Every change plb prints has one sign: (value - base) / base, so a
// negative p95 change is lower latency and a positive goodput change more goodput (the same sign
// as p95 inflation against ref and as --tolerance's moved lines).
import { SERVICE_CLASSES } from '../core/service-class.js';
import type { RunGroup } from '../run-format/report.js';
import type { Comparison, ComparisonRow, StrategyComparison } from '../run-format/report.js';

/** (p95 - base) / base: negative = lower latency than the baseline. Null when either is missing or base is 0. */
export function p95Change(p95: number | null, base: number | null): number | null {
  if (p95 === null || base === null || base === 0) return null;
  return (p95 - base) / base;
}

/** (g - base) / base: positive = more goodput than the baseline. Null when either is missing or base is 0. */
export function goodputChange(goodput: number | null, base: number | null): number | null {
  if (goodput === null || base === null || base === 0) return null;
  return (goodput - base) / base;
}

/**
 * For every plan+mix with several strategies: each strategy against the baseline strategy, per
 * phase (the baseline's phases, matched by name) and class, on the medians of the repeats.
 */
export function compareStrategies(groups: readonly RunGroup[], baseline = 'rr'): Comparison {
  const sets = new Map<string, RunGroup[]>();
  for (const g of groups) {
    // Strategies compare only under the same settings.
    const k = `${g.plan} ${g.mixLabel}${g.settingsLabel ? ` ${g.settingsLabel}` : ''}\n${g.settingsKey}`;
    const list = sets.get(k);
    if (list) list.push(g);
    else sets.set(k, [g]);
  }
  const entries: StrategyComparison[] = [];
  const missingBaseline: string[] = [];
  for (const [k, set] of sets) {
    if (set.length < 2) continue;
    const base = set.find((g) => g.strategy === baseline);
    if (!base) {
      missingBaseline.push(k.split('\n')[0] ?? k);
      continue;
    }
    for (const g of set) {
      if (g === base) continue;
      const rows: ComparisonRow[] = [];
      for (const bp of base.phases) {
        const p = g.phases.find((x) => x.name === bp.name);
        if (!p) continue;
        for (const cls of SERVICE_CLASSES) {
          const p95 = p.classes[cls].p95.median;
          const baseP95 = bp.classes[cls].p95.median;
          const goodput = p.classes[cls].goodput.median;
          const baseGoodput = bp.classes[cls].goodput.median;
          rows.push({
            phase: bp.name,
            cls,
            p95,
            baseP95,
            p95Change: p95Change(p95, baseP95),
            goodput,
            baseGoodput,
            goodputChange: goodputChange(goodput, baseGoodput),
          });
        }
      }
      entries.push({
        plan: g.plan,
        mixLabel: g.mixLabel,
        settingsLabel: g.settingsLabel,
        strategy: g.strategy,
        baseline,
        runs: g.runIds.length,
        baselineRuns: base.runIds.length,
        rows,
      });
    }
  }
  return { baseline, entries, missingBaseline };
}
