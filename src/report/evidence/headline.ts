// The question answered in a few lines: in the fault phases, premium's p95 against the baseline
// strategy, and freemium's cost (p95, goodput), each with its 95 % interval and verdict; and
// whether every run was a valid measurement. Printed at the end of a bench and on top of a report.
import type { IntervalMetric } from '../../metrics/intervals/intervals.js';
import type { ServiceClass } from '../../core/service-class.js';
import type { RunGroup } from '../../run-format/report.js';
import type { CellEvidence } from '../../run-format/evidence.js';
import { changeText, verdictText } from './verdicts.js';

/** The fault phases of a group: fewer survivors than ref (all but ref when the count is unknown). */
export function faultPhases(g: {
  phases: ReadonlyArray<{ name: string; survivors?: { median: number | null } }>;
}): string[] {
  const ref = g.phases.find((p) => p.name === 'ref')?.survivors?.median ?? null;
  const down = g.phases.filter((p) => p.name !== 'ref' && ref !== null && (p.survivors?.median ?? ref) < ref);
  return (down.length > 0 ? down : g.phases.filter((p) => p.name !== 'ref')).map((p) => p.name);
}

const LINES: Array<{ cls: ServiceClass; metric: IntervalMetric; label: string }> = [
  { cls: 'premium', metric: 'p95', label: 'premium p95' },
  { cls: 'freemium', metric: 'p95', label: 'freemium p95 (cost)' },
  { cls: 'freemium', metric: 'goodput', label: 'freemium goodput (cost)' },
];

function cell(g: RunGroup, phase: string, cls: ServiceClass): CellEvidence | undefined {
  return g.evidence?.phases.find((p) => p.name === phase)?.classes[cls];
}

/** The headline of a report's groups (empty when no group has a baseline to compare with). */
export function headlineLines(groups: readonly RunGroup[], baseline = 'rr'): string[] {
  const out: string[] = [];
  const compared = groups.filter((g) => g.evidence?.baselineKey !== undefined);
  const sets = new Map<string, RunGroup[]>();
  for (const g of compared) {
    const k = `${g.plan} · ${g.mixLabel}${g.settingsLabel ? ` · ${g.settingsLabel}` : ''}`;
    sets.set(k, [...(sets.get(k) ?? []), g]);
  }
  for (const [k, set] of sets) {
    const base = groups.find((g) => g.key === set[0]?.evidence?.baselineKey);
    const runs = [...set, ...(base ? [base] : [])];
    const n = runs.map((g) => g.runIds.length);
    const each =
      Math.min(...n) === Math.max(...n) ? `${n[0]} run${n[0] === 1 ? '' : 's'} each` : `${n.join('/')} runs`;
    out.push(`Answer (${k}, ${each}): change against ${baseline}, 95 % interval, verdict`);
    for (const g of set) {
      const phases = faultPhases(g);
      for (const l of LINES) {
        const parts = phases.map((ph) => {
          const c = cell(g, ph, l.cls)?.vsBaseline?.[l.metric];
          return c === undefined ? `${ph} -` : `${ph} ${changeText(c)} ${verdictText(c)}`;
        });
        out.push(`  ${g.strategy} ${l.label}: ${parts.join(' · ')}`);
      }
    }
    const invalid = runs.flatMap((g) => g.evidence?.invalid ?? []);
    const total = runs.reduce((s, g) => s + g.runIds.length, 0);
    out.push(
      invalid.length === 0
        ? `  valid: all ${total} runs (complete, the harness and its host kept up, no false detections, every fault took effect)`
        : `  NOT all valid (${invalid.length}): ${invalid.slice(0, 4).join('; ')}${invalid.length > 4 ? '; ...' : ''}`,
    );
  }
  if (out.length > 0)
    out.push(
      '  (block bootstrap over seconds; "no diff. (±x%)": no change detected, x = the smallest this data detects)',
    );
  return out;
}
