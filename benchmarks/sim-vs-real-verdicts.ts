// The interval side of sim-vs-real: each run directory's 95 % intervals and pairwise verdicts,
// read from `plb report --json` (one report per strategy as its baseline), so the ranking check can
// say what the issue asks: where the real intervals overlap (no difference detected), the
// simulator's must overlap too; where the real cluster tells two strategies apart, the simulator
// must tell them apart the same way.
import { spawnSync } from 'node:child_process';
import type { CellEvidence, Change, Estimate } from '../src/run-format/evidence.js';

interface ReportGroup {
  strategy: string;
  settingsLabel?: string;
  evidence?: { phases: { name: string; classes: Record<'premium' | 'freemium', CellEvidence> }[] };
}

/** Per strategy, phase and class: the p95 and goodput estimates with their intervals. */
export type Estimates = Map<string, Estimate>;
/** Per phase and ordered pair "A|B": A's premium p95 against B's (B the baseline). */
export type PairChanges = Map<string, Change>;

const key = (...parts: string[]): string => parts.join('|');

function report(dirs: readonly string[], baseline: string): ReportGroup[] {
  const r = spawnSync(
    'node',
    ['bin/run.js', 'report', ...dirs, '--json', '--skip-html', '--baseline', baseline],
    { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
  );
  if (r.status !== 0)
    throw new Error(`plb report ${dirs.join(' ')} --baseline ${baseline} exited ${r.status}: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { groups: ReportGroup[] }).groups;
}

/** Intervals of every cell and the premium p95 change of every ordered pair of strategies (runs pooled). */
export function readEvidence(
  dirs: readonly string[],
  strategies: readonly string[],
): { estimates: Estimates; pairs: PairChanges } {
  const estimates: Estimates = new Map();
  const pairs: PairChanges = new Map();
  for (const base of strategies) {
    const groups = report(dirs, base);
    // Runs of one strategy the report keeps apart (other settings) are not repeats: pooling them
    // here would silently keep the last group's figures.
    for (const g of groups) {
      const other = groups.find((o) => o !== g && o.strategy === g.strategy);
      if (other)
        throw new Error(
          `${dirs.join(',')}: two groups of ${g.strategy} runs ("${g.settingsLabel ?? ''}", "${other.settingsLabel ?? ''}"): pool only runs of the same settings`,
        );
    }
    for (const g of groups) {
      for (const ph of g.evidence?.phases ?? []) {
        for (const cls of ['premium', 'freemium'] as const) {
          const cell = ph.classes[cls];
          estimates.set(key(g.strategy, ph.name, cls, 'p95'), cell.metrics.p95);
          estimates.set(key(g.strategy, ph.name, cls, 'goodput'), cell.metrics.goodput);
        }
        const vs = ph.classes.premium.vsBaseline?.p95;
        if (vs && g.strategy !== base) pairs.set(key(ph.name, g.strategy, base), vs);
      }
    }
  }
  return { estimates, pairs };
}

export const estimateOf = (e: Estimates, strategy: string, phase: string, cls: string, metric: string) =>
  e.get(key(strategy, phase, cls, metric));

/** Do two estimates' intervals overlap? null when either has none. */
export function overlaps(a: Estimate | undefined, b: Estimate | undefined): boolean | null {
  if (!a || !b || a.lo === null || a.hi === null || b.lo === null || b.hi === null) return null;
  return a.lo <= b.hi && b.lo <= a.hi;
}

/** A pair's verdicts agree: the same verdict when both have intervals, else the same sign. */
export function verdictsAgree(real: Change, sim: Change): boolean {
  if (real.verdict !== 'no interval' && sim.verdict !== 'no interval') return real.verdict === sim.verdict;
  if (real.delta === null || sim.delta === null) return false;
  return Math.sign(real.delta) === Math.sign(sim.delta);
}

export const pairOf = (pairs: PairChanges, phase: string, a: string, b: string) =>
  pairs.get(key(phase, a, b));

export type Evidence = ReturnType<typeof readEvidence>;

/** How closely `other` reproduces `ref`: the counts the targets are stated in. */
export interface Agreement {
  cells: number;
  p95Within: number;
  goodputWithin: number;
  /** Down phases whose strict premium p95 order of the strategies is the same. */
  rankings: { same: number; of: number };
  /** Pairs of strategies in down phases whose premium p95 verdicts agree. */
  verdicts: { same: number; of: number };
}

/** Every strategy x phase x class cell of `ref` against `other` (p95 within ±p95Tol, goodput ±goodputTol). */
export function agreement(
  ref: Evidence,
  other: Evidence,
  strategies: readonly string[],
  phases: readonly string[],
  p95Tol: number,
  goodputTol: number,
): Agreement {
  const out: Agreement = {
    cells: 0,
    p95Within: 0,
    goodputWithin: 0,
    rankings: { same: 0, of: 0 },
    verdicts: { same: 0, of: 0 },
  };
  const v = (ev: Evidence, n: string, ph: string, cls: string, m: string): number | null =>
    estimateOf(ev.estimates, n, ph, cls, m)?.value ?? null;
  const within = (a: number | null, b: number | null, tol: number): boolean =>
    a !== null && b !== null && a !== 0 && Math.abs(b / a - 1) <= tol;
  for (const n of strategies)
    for (const ph of phases)
      for (const cls of ['premium', 'freemium']) {
        if (v(ref, n, ph, cls, 'p95') === null && v(ref, n, ph, cls, 'goodput') === null) continue;
        out.cells++;
        if (within(v(ref, n, ph, cls, 'p95'), v(other, n, ph, cls, 'p95'), p95Tol)) out.p95Within++;
        if (within(v(ref, n, ph, cls, 'goodput'), v(other, n, ph, cls, 'goodput'), goodputTol))
          out.goodputWithin++;
      }
  for (const ph of phases.filter((p) => p.startsWith('down'))) {
    const rank = (ev: Evidence): string =>
      [...strategies]
        .map((n) => ({ n, p: v(ev, n, ph, 'premium', 'p95') ?? Infinity }))
        .sort((a, b) => a.p - b.p)
        .map((x) => x.n)
        .join('<');
    out.rankings.of++;
    if (rank(ref) === rank(other)) out.rankings.same++;
    for (const [i, a] of strategies.entries())
      for (const b of strategies.slice(i + 1)) {
        const r = pairOf(ref.pairs, ph, a, b);
        const s = pairOf(other.pairs, ph, a, b);
        if (!r || !s) continue;
        out.verdicts.of++;
        if (verdictsAgree(r, s)) out.verdicts.same++;
      }
  }
  return out;
}
