// The intervals and verdicts of a report: per group (the repeats of one strategy+plan+mix), per
// phase x class, a 95 % interval of p50/p95/p99, goodput and session lifetime from the runs'
// per-second histograms (pooled over the repeats, and per run), and the change of each against
// `ref` and against the baseline strategy with its interval and verdict. Attached to the groups
// (`group.evidence`), so every format shows the same numbers.
import { SERVICE_CLASSES, type ServiceClass } from '../../core/service-class.js';
import type { RunSummary } from '../../run-format/summary.js';
import {
  blockLength,
  bootstrapCell,
  INTERVAL_METRICS,
  percentileInterval,
  pointValues,
  prepareCell,
  runOf,
  t975,
  relativeChange,
  sessionP95S,
  tooFewSeconds,
  type CellBootstrap,
  type IntervalMetric,
  type SecondSample,
} from '../../metrics/intervals/intervals.js';
import { hostShortfall } from '../../metrics/summary/measurement-warnings.js';
import { readRunSeconds, type RunSeconds } from '../../metrics/intervals/phase-seconds.js';
import type { RunGroup } from '../../run-format/report.js';
import { compareStrategies } from '../compare.js';
import { changeOf } from './verdicts.js';
import type { CellEvidence, Change, Estimate } from '../../run-format/evidence.js';

const METHOD =
  'circular block bootstrap over seconds (1000 resamples, blocks >= the sessions p95 lifetime), 95 % percentile intervals';

const NULL_EST: Estimate = { value: null, lo: null, hi: null };
const num = (v: number): number | null => (Number.isFinite(v) ? v : null);

/** Mean of the runs' values with its t interval (at least 3 runs, else no value). */
export function overRuns(values: number[]): Estimate {
  const xs = values.filter((v) => Number.isFinite(v));
  if (xs.length < 3) return NULL_EST;
  const m = xs.reduce((s, v) => s + v, 0) / xs.length;
  const sd = Math.sqrt(xs.reduce((s, v) => s + (v - m) ** 2, 0) / (xs.length - 1));
  const h = (t975(xs.length - 1) * sd) / Math.sqrt(xs.length);
  return { value: m, lo: m - h, hi: m + h };
}

interface Cell {
  boot: CellBootstrap | null;
  evidence: CellEvidence;
}

function estimates(
  boot: CellBootstrap | null,
  point: Record<IntervalMetric, number>,
): Record<IntervalMetric, Estimate> {
  return Object.fromEntries(
    INTERVAL_METRICS.map((m) => {
      const iv = boot === null ? null : percentileInterval(boot.replicates[m], 0.95, boot.blocks, 0);
      return [m, { value: num(point[m]), lo: iv?.lo ?? null, hi: iv?.hi ?? null }];
    }),
  ) as Record<IntervalMetric, Estimate>;
}

// The report's run pages and its groups of one run bootstrap the same cells: computed once.
const cache = new Map<string, Cell>();
const CACHE_MAX = 2000;

function cellOf(
  key: string,
  runIds: readonly string[],
  dirs: readonly string[],
  samples: SecondSample[][],
): Cell {
  const k = `${key}|${dirs.join('|')}`;
  const hit = cache.get(k);
  if (hit) return { boot: hit.boot, evidence: structuredClone(hit.evidence) };
  const cell = computeCell(key, runIds, samples);
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(k, { boot: cell.boot, evidence: structuredClone(cell.evidence) });
  return cell;
}

function computeCell(key: string, runIds: readonly string[], samples: SecondSample[][]): Cell {
  const seconds = samples.reduce((s, r) => s + r.length, 0);
  // Decoded, merged and cut into blocks once for every estimate of the cell.
  const prep = prepareCell(samples);
  const point = pointValues(prep);
  if (samples.length === 0 || seconds === 0)
    return {
      boot: null,
      evidence: { seconds, block: null, metrics: estimates(null, point), note: 'no per-second data' },
    };
  const block = blockLength(Math.min(...samples.map((r) => r.length)), sessionP95S(prep));
  const short = samples.map((r) => tooFewSeconds(r.length, block)).find((w) => w !== null) ?? null;
  const boot = short === null ? bootstrapCell(prep, { key, block }) : null;
  const evidence: CellEvidence = {
    seconds,
    block,
    metrics: estimates(boot, point),
    ...(short !== null ? { note: short } : {}),
  };
  if (samples.length > 1) {
    // Each run's own figures, with its bootstrap when there are seconds enough: the repeats'
    // spread gives the interval across runs even where the phases are too short for one within.
    const per = samples.map((_, i) => {
      const one = runOf(prep, i);
      const b = boot === null ? null : bootstrapCell(one, { key: `${key}/${runIds[i] ?? i}`, block });
      return { runId: runIds[i] ?? String(i), ...estimates(b, pointValues(one)) };
    });
    evidence.perRun = per;
    if (samples.length >= 3)
      evidence.overRuns = Object.fromEntries(
        INTERVAL_METRICS.map((m) => [m, overRuns(per.map((p) => p[m].value ?? NaN))]),
      ) as Record<IntervalMetric, Estimate>;
  }
  return { boot, evidence };
}

function changes(a: Cell, b: Cell): Record<IntervalMetric, Change> {
  return Object.fromEntries(
    INTERVAL_METRICS.map((m) => {
      const va = a.evidence.metrics[m].value;
      const vb = b.evidence.metrics[m].value;
      const delta = va === null || vb === null || vb === 0 ? null : (va - vb) / vb;
      const note = a.evidence.note ?? b.evidence.note;
      if (a.boot === null || b.boot === null) return [m, changeOf(m, delta, null, note ?? 'no interval')];
      const blocks = Math.min(a.boot.blocks, b.boot.blocks);
      const iv = percentileInterval(
        relativeChange(a.boot.replicates[m], b.boot.replicates[m]),
        0.95,
        blocks,
        -1,
      );
      return [m, changeOf(m, delta, iv, iv === null ? 'too few resamples with data' : undefined)];
    }),
  ) as Record<IntervalMetric, Change>;
}

// The report's groups and then each run's page read the same files: decoded once (a few runs).
const secondsCache = new Map<string, { summary: RunSummary; seconds: RunSeconds }>();
const SECONDS_CACHE_MAX = 64;

function runSecondsOf(dir: string, summary: RunSummary): RunSeconds {
  const hit = secondsCache.get(dir);
  if (hit && hit.summary === summary) return hit.seconds;
  const seconds = readRunSeconds(dir, summary.phases);
  if (secondsCache.size >= SECONDS_CACHE_MAX) secondsCache.clear();
  secondsCache.set(dir, { summary, seconds });
  return seconds;
}

/** Why a run is not a clean measurement, one line each (empty when it is). */
export function runProblems(s: RunSummary): string[] {
  const out: string[] = [];
  if (!s.complete) out.push(`${s.runId}: incomplete`);
  for (const p of s.phases) {
    if (p.invalid) out.push(`${s.runId}: phase ${p.name} invalid (${p.invalid})`);
    if (p.harness?.saturated)
      out.push(
        `${s.runId}: phase ${p.name}: the harness fell behind (event-loop p99 ${p.harness.loopP99Ms} ms)`,
      );
    const host = hostShortfall(p.harness);
    if (host) out.push(`${s.runId}: phase ${p.name}: ${host}`);
  }
  const d = s.detectionCounts;
  if (d && d.unexplained > 0) out.push(`${s.runId}: ${d.unexplained} false detections (flapping)`);
  return out;
}

/**
 * Computes and attaches `evidence` to every group. `runs`: each run's summary and directory
 * (the per-second files); a run missing from it counts as one without per-second data.
 */
export function attachEvidence(
  groups: RunGroup[],
  runs: ReadonlyArray<{ summary: RunSummary; dir: string }>,
  baseline = 'rr',
): void {
  const byId = new Map(runs.map((r) => [r.summary.runId, r]));
  const seconds = new Map<string, RunSeconds>();
  for (const r of runs) seconds.set(r.summary.runId, runSecondsOf(r.dir, r.summary));
  const cells = new Map<RunGroup, Map<string, Record<ServiceClass, Cell>>>();
  for (const g of groups) {
    const notes = new Set<string>();
    const perPhase = new Map<string, Record<ServiceClass, Cell>>();
    for (const p of g.phases) {
      const perClass = {} as Record<ServiceClass, Cell>;
      for (const cls of SERVICE_CLASSES) {
        const ids: string[] = [];
        const dirs: string[] = [];
        const samples: SecondSample[][] = [];
        for (const id of g.runIds) {
          const rs = seconds.get(id);
          if (rs?.note) notes.add(`${id}: ${rs.note}`);
          const c = rs?.cells.get(p.name)?.[cls];
          if (c && c.length > 0 && rs?.note === null) {
            ids.push(id);
            dirs.push(byId.get(id)?.dir ?? id);
            samples.push(c);
          } else if (!rs) notes.add(`${id}: no run directory, no intervals`);
        }
        // The generator's seed comes from the runs and the cell alone: same data, same interval.
        perClass[cls] = cellOf(`${ids.join(',')}/${p.name}/${cls}`, ids, dirs, samples);
      }
      perPhase.set(p.name, perClass);
    }
    cells.set(g, perPhase);
    const ref = perPhase.get('ref');
    for (const [name, perClass] of perPhase)
      if (ref && name !== 'ref')
        for (const cls of SERVICE_CLASSES) perClass[cls].evidence.vsRef = changes(perClass[cls], ref[cls]);
    g.evidence = {
      method: METHOD,
      phases: [...perPhase].map(([name, pc]) => ({
        name,
        classes: Object.fromEntries(SERVICE_CLASSES.map((c) => [c, pc[c].evidence])) as Record<
          ServiceClass,
          CellEvidence
        >,
      })),
      invalid: g.runIds.flatMap((id) => {
        const r = byId.get(id);
        return r ? runProblems(r.summary) : [];
      }),
      notes: [...notes],
    };
  }
  const cmp = compareStrategies(groups, baseline);
  for (const e of cmp.entries) {
    const same = (g: RunGroup, strategy: string): boolean =>
      g.plan === e.plan &&
      g.mixLabel === e.mixLabel &&
      g.settingsLabel === e.settingsLabel &&
      g.strategy === strategy;
    const g = groups.find((x) => same(x, e.strategy));
    const b = groups.find((x) => same(x, e.baseline));
    if (!g || !b || !g.evidence) continue;
    g.evidence.baselineKey = b.key;
    const gc = cells.get(g);
    const bc = cells.get(b);
    for (const [name, perClass] of gc ?? []) {
      const base = bc?.get(name);
      if (base)
        for (const cls of SERVICE_CLASSES)
          perClass[cls].evidence.vsBaseline = changes(perClass[cls], base[cls]);
    }
  }
}
