// How much measuring decides every premium fault cell of a plan against rr (issue: a verdict in
// less time). Reads run directories of a series (`plb bench matrix --strategy plb,rr --repeat N`,
// one plan or several, e.g. the demo and a shorter variant), pairs each strategy's run with rr's of
// the same seed, and for k = 1..N seeds judges, by design:
//   single  one run per strategy (the demo as it is): each seed on its own, so the share of seeds
//           that decide every cell;
//   pooled  the first k seeds' runs pooled (the report's own intervals: a block bootstrap over the
//           seconds of all k runs), as `plb report` over k repeats says;
//   paired  the per-seed in-run changes (each seed's run against rr's of the same seed), their mean
//           over the first k seeds with a t interval (k >= 3), as benchmarks/lib/paired.ts does;
// and, for pooled and paired, sequential stopping: the first k at which every cell is decided.
// A cell is decided when its interval excludes 0 (better or worse) or lies inside ±bound ("no
// difference beyond ±bound"). Wall time: each run's plan duration plus the series' measured
// overhead per run (reset, warm-up, dataset), from the runs' start times.
// Stopping at the first k that decides reads the data k times; at 5 % per look the chance of a
// wrong verdict grows with the looks (a few looks: below ~15 %), said beside the table.
//
// Run: node --import tsx benchmarks/time-to-verdict.ts DIR... [--strategy plb] [--against rr]
//        [--bound 0.10] [--class premium] [--metric p95]
import { aggregateRuns } from '../src/report/aggregate.js';
import { attachEvidence, overRuns } from '../src/report/evidence/evidence.js';
import { faultPhases } from '../src/report/evidence/headline.js';
import { loadRuns } from '../src/report/run-dir.js';
import type { LoadedRun } from '../src/metrics/store/load-run.js';
import type { Estimate } from '../src/run-format/evidence.js';
import type { ServiceClass } from '../src/core/service-class.js';
import type { IntervalMetric } from '../src/metrics/intervals/intervals.js';
import { option } from './lib/args.js';

const dirs = process.argv
  .slice(2)
  .filter((a, i, all) => !a.startsWith('--') && !all[i - 1]?.startsWith('--'));
const strategy = option('strategy') ?? 'plb';
const against = option('against') ?? 'rr';
const bound = Number(option('bound') ?? '0.10');
const cls = (option('class') ?? 'premium') as ServiceClass;
const metric = (option('metric') ?? 'p95') as IntervalMetric;
if (dirs.length === 0) {
  process.stderr.write('time-to-verdict: give the run directories of a series\n');
  process.exit(2);
}

interface Judged {
  phase: string;
  est: Estimate;
  decided: boolean;
  says: string;
}

const NONE: Estimate = { value: null, lo: null, hi: null };

/** Every k-subset of 0..n-1, as index lists in lexicographic order. */
function combinations(n: number, k: number): number[][] {
  const out: number[][] = [];
  const go = (start: number, acc: number[]): void => {
    if (acc.length === k) return void out.push([...acc]);
    for (let i = start; i < n; i++) go(i + 1, [...acc, i]);
  };
  go(0, []);
  return out;
}

const pct = (x: number | null): string => (x === null ? '?' : `${x >= 0 ? '+' : ''}${(x * 100).toFixed(0)}`);

function judge(phase: string, est: Estimate): Judged {
  const { value, lo, hi } = est;
  if (lo === null || hi === null) return { phase, est, decided: false, says: 'no interval' };
  const iv = `${pct(value)} [${pct(lo)}, ${pct(hi)}] %`;
  if (lo > 0 || hi < 0) return { phase, est, decided: true, says: `${hi < 0 ? 'better' : 'worse'} ${iv}` };
  if (lo >= -bound && hi <= bound)
    return { phase, est, decided: true, says: `none beyond ±${bound * 100} % ${iv}` };
  return { phase, est, decided: false, says: `no diff. ${iv}` };
}

/** The strategy's change against `against` per fault phase, from these runs pooled. */
function pooled(runs: readonly LoadedRun[]): { phases: string[]; changes: Map<string, Estimate> } {
  const groups = aggregateRuns(
    runs.map((r) => r.summary),
    { configs: new Map(runs.map((r) => [r.summary, r.config])) },
  );
  attachEvidence(groups, runs, against);
  const g = groups.find((x) => x.strategy === strategy);
  const changes = new Map<string, Estimate>();
  if (!g) return { phases: [], changes };
  const phases = faultPhases(g);
  for (const p of phases) {
    const c = g.evidence?.phases.find((x) => x.name === p)?.classes[cls]?.vsBaseline?.[metric];
    changes.set(p, { value: c?.delta ?? null, lo: c?.lo ?? null, hi: c?.hi ?? null });
  }
  return { phases, changes };
}

const all = loadRuns(dirs);
const plans = [...new Set(all.map((r) => r.summary.plan))];
const lines: string[] = [
  `time to verdict: ${strategy} against ${against}, ${cls} ${metric}, fault phases; decided = interval excludes 0 or lies inside ±${bound * 100} %`,
];
for (const plan of plans) {
  const runs = all
    .filter((r) => r.summary.plan === plan)
    .sort((a, b) => a.summary.startedAt.localeCompare(b.summary.startedAt));
  // Overhead per run: the gap between a run's start and the next one's, less the plan's duration.
  const gaps: number[] = [];
  for (let i = 1; i < runs.length; i++) {
    const prev = runs[i - 1]!.summary;
    const gap = (Date.parse(runs[i]!.summary.startedAt) - Date.parse(prev.startedAt)) / 1000 - prev.durationS;
    if (gap > 0 && gap < 600) gaps.push(gap);
  }
  gaps.sort((a, b) => a - b);
  const overhead = gaps.length ? gaps[Math.floor(gaps.length / 2)]! : 0;
  const seeds = [...new Set(runs.map((r) => r.summary.seed))].filter(
    (s) =>
      runs.some((r) => r.summary.seed === s && r.summary.strategy === strategy) &&
      runs.some((r) => r.summary.seed === s && r.summary.strategy === against),
  );
  const pairOf = (s: number): LoadedRun[] =>
    runs.filter(
      (r) => r.summary.seed === s && (r.summary.strategy === strategy || r.summary.strategy === against),
    );
  const durationS = runs[0]!.summary.durationS;
  const pairMin = (2 * (durationS + overhead)) / 60;
  lines.push(
    '',
    `plan ${plan}: ${seeds.length} seeds with both strategies (${seeds.join(', ')}); run ${durationS} s + overhead ${overhead.toFixed(0)} s (median of ${gaps.length}); a pair ${pairMin.toFixed(1)} min`,
  );
  const single = seeds.map((s) => pooled(pairOf(s)));
  const phases = single[0]?.phases ?? [];
  lines.push(`  fault phases: ${phases.join(', ')}`);
  const row = (design: string, k: number, judged: Judged[]): boolean => {
    const ok = judged.length > 0 && judged.every((j) => j.decided);
    lines.push(
      `  ${design.padEnd(7)} k=${String(k).padEnd(2)} ${(k * pairMin).toFixed(1).padStart(5)} min  ${ok ? 'ALL DECIDED' : 'undecided  '}  ` +
        judged.map((j) => `${j.phase}: ${j.says}`).join(' | '),
    );
    return ok;
  };
  let decidedSingles = 0;
  for (const [i, s] of single.entries()) {
    lines.push(`  (seed ${seeds[i]})`);
    if (
      row(
        'single',
        1,
        phases.map((p) => judge(p, s.changes.get(p) ?? NONE)),
      )
    )
      decidedSingles++;
  }
  const firstAll: Record<string, number | undefined> = { pooled: undefined, paired: undefined };
  for (let k = 2; k <= seeds.length; k++) {
    const pool = pooled(seeds.slice(0, k).flatMap(pairOf));
    if (
      row(
        'pooled',
        k,
        phases.map((p) => judge(p, pool.changes.get(p) ?? NONE)),
      )
    )
      firstAll.pooled ??= k;
    if (k >= 3) {
      const judged = phases.map((p) =>
        judge(p, overRuns(single.slice(0, k).map((s) => s.changes.get(p)?.value ?? Number.NaN))),
      );
      if (row('paired', k, judged)) firstAll.paired ??= k;
    }
  }
  // How often a design at k decides: every k-subset of the seeds (at most 60, spread evenly).
  const rates: string[] = [];
  for (let k = 2; k <= seeds.length - 1; k++) {
    const subsets = combinations(seeds.length, k);
    const step = Math.max(1, Math.ceil(subsets.length / 60));
    const picked = subsets.filter((_, i) => i % step === 0);
    let pooledAll = 0;
    let pairedAll = 0;
    for (const idx of picked) {
      const pool = pooled(idx.flatMap((i) => pairOf(seeds[i]!)));
      if (phases.every((p) => judge(p, pool.changes.get(p) ?? NONE).decided)) pooledAll++;
      if (
        k >= 3 &&
        phases.every(
          (p) => judge(p, overRuns(idx.map((i) => single[i]!.changes.get(p)?.value ?? Number.NaN))).decided,
        )
      )
        pairedAll++;
    }
    rates.push(
      `  k=${k} (${(k * pairMin).toFixed(1)} min): pooled decides every cell in ${pooledAll} of ${picked.length} subsets` +
        (k >= 3 ? `, paired in ${pairedAll} of ${picked.length}` : ''),
    );
  }
  lines.push(
    `  single: ${decidedSingles} of ${seeds.length} seeds decide every cell in one pair (${pairMin.toFixed(1)} min)`,
    ...rates,
    ...(['pooled', 'paired'] as const).map((d) =>
      firstAll[d] === undefined
        ? `  ${d}: not every cell decided within ${seeds.length} seeds`
        : `  ${d}, sequential: every cell decided at k=${firstAll[d]} (${(firstAll[d]! * pairMin).toFixed(1)} min of runs; ${firstAll[d]! - (d === 'paired' ? 2 : 1)} look(s) at the data)`,
    ),
  );
}
process.stdout.write(`${lines.join('\n')}\n`);
