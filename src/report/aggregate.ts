// Groups runs of one strategy+plan+mix and settings (repeats) and reduces every metric to median and IQR.
import { SERVICE_CLASSES, type ServiceClass } from '../core/service-class.js';
import type { PhaseSummary, RunSummary } from '../run-format/summary.js';
import { aggregateTemplates } from './tables/templates-table.js';
import { aggregateRouters } from './routers-aggregate.js';
import { aggregateWorkers } from './tables/workers-table.js';
import { aggregateHang } from './hang-aggregate.js';
import { FAULT_INTERVAL } from '../metrics/summary/fault-interval.js';
import { compareReplicaIds } from '../core/replica-ids.js';
import { strategyEntry } from '../router/strategy-registry.js';
import type { RunConfig } from '../run-format/config.js';
import { stat } from '../metrics/math.js';
import { type Stat } from '../run-format/report.js';
import {
  runSettings,
  SETTING_NAMES,
  settingsKeyOf,
  shortHash,
  UNSAID_SHARED,
  type SettingName,
  type SettingsDiff,
  type SettingValue,
} from './settings.js';
import {
  CLASS_METRICS,
  type AggregatedPhase,
  type AggregatedReplica,
  type ClassMetric,
  type RunGroup,
} from '../run-format/report.js';

interface AggregatedSignals {
  queryShareSpread: Stat;
  cpuShareSpread: Stat;
  weightDeviation: Stat;
  /** Replicas silent in at least one run, and in how many runs some replica was. */
  silent: string[];
  silentRuns: number;
}

export function mixLabel(mix: { premium: number; freemium: number }): string {
  // Mixes may be written as fractions (0.25) or percents (25).
  const scale = mix.premium + mix.freemium <= 1.0001 ? 100 : 1;
  const fmt = (v: number): string => String(Math.round(v * scale * 100) / 100);
  return `${fmt(mix.premium)}:${fmt(mix.freemium)}`;
}

function groupKey(s: Pick<RunSummary, 'plan' | 'strategy' | 'mix'>): string {
  return `${s.plan}|${s.strategy}|${mixLabel(s.mix)}`;
}

/** The mix as shares of 100: 1:1, 50:50 and 0.5:0.5 are one mix. */
function normalMix(mix: { premium: number; freemium: number }): string {
  const sum = mix.premium + mix.freemium || 1;
  return `${Math.round((mix.premium / sum) * 1e4) / 100}:${Math.round((mix.freemium / sum) * 1e4) / 100}`;
}

/** The registry's report rank (plb, rr, static, lc, wlc); the others after them, by name. */
function strategyRank(s: string): number {
  return strategyEntry(s)?.reportRank ?? Number.MAX_SAFE_INTEGER;
}

/**
 * Groups the runs by strategy+plan+mix and reduces each metric over the repeats to median and
 * interquartile range (type 7 quantiles; nulls are left out, `n` says how many values remain).
 * Retention and inflation are the medians of the per-run values, not recomputed from medians.
 * Phases are matched by name. Groups come sorted by plan, mix, then strategy (plb, rr, static, ...).
 */
export function aggregateRuns(
  summaries: readonly RunSummary[],
  opts: {
    includeIncomplete?: boolean;
    /** Each run's config.json: runs are repeats only when all their settings match. */
    configs?: ReadonlyMap<RunSummary, RunConfig>;
  } = {},
): RunGroup[] {
  const byKey = new Map<string, { runs: RunSummary[]; settings: Record<SettingName, SettingValue> }>();
  for (const s of [...summaries].sort((a, b) => a.runId.localeCompare(b.runId))) {
    const settings = runSettings(opts.configs?.get(s), s.plan);
    const k = `${s.plan}|${s.strategy}|${normalMix(s.mix)}\n${settingsKeyOf(settings)}`;
    const entry = byKey.get(k);
    if (entry) entry.runs.push(s);
    else byKey.set(k, { runs: [s], settings });
  }
  const entries = [...byKey.values()];
  const labels = settingLabels(entries.map((e) => e.settings));
  const groups = entries.map(({ runs, settings }, i) => {
    // An incomplete run never moves a median of complete ones unless asked; alone it still shows.
    const complete = runs.filter((r) => r.complete);
    const keep = opts.includeIncomplete || complete.length === 0 ? runs : complete;
    const excluded = runs.filter((r) => !keep.includes(r)).map((r) => r.runId);
    return {
      ...aggregateGroup(keep),
      settings: labels[i] as Record<string, string>,
      settingsKey: settingsKeyOf(settings),
      problems: runs.flatMap(problemsOf),
      excluded,
    };
  });
  const diff = settingsDiff(groups);
  const differing = new Set(diff.differ.map((d) => d.name));
  for (const g of groups)
    g.settingsLabel = SETTING_NAMES.filter((n) => differing.has(n))
      .map((n) => `${n} ${g.settings[n]}`)
      .join(' · ');
  // Groups that share plan, strategy and mix are told apart by their settings.
  const keyCount = new Map<string, number>();
  for (const g of groups) keyCount.set(g.key, (keyCount.get(g.key) ?? 0) + 1);
  for (const g of groups) if ((keyCount.get(g.key) ?? 0) > 1) g.key = `${g.key}|${g.settingsLabel}`;
  return groups.sort(
    (a, b) =>
      a.plan.localeCompare(b.plan) ||
      b.mix.premium / (b.mix.premium + b.mix.freemium || 1) -
        a.mix.premium / (a.mix.premium + a.mix.freemium || 1) ||
      a.settingsLabel.localeCompare(b.settingsLabel) ||
      strategyRank(a.strategy) - strategyRank(b.strategy) ||
      a.strategy.localeCompare(b.strategy),
  );
}

/**
 * Each group's readable settings; where two groups show the same text for values that differ
 * (a plan of the same name with other events), the text gets a short hash of the value.
 */
function settingLabels(all: readonly Record<SettingName, SettingValue>[]): Record<SettingName, string>[] {
  const out = all.map(() => ({}) as Record<SettingName, string>);
  for (const name of SETTING_NAMES) {
    const canonicalOf = new Map<string, Set<string>>();
    for (const s of all) {
      const v = s[name];
      const set = canonicalOf.get(v.label) ?? new Set<string>();
      set.add(v.canonical);
      canonicalOf.set(v.label, set);
    }
    const clash = [...canonicalOf.values()].some((set) => set.size > 1);
    all.forEach((s, i) => {
      const v = s[name];
      out[i]![name] = clash ? `${v.label} #${shortHash(v.canonical)}` : v.label;
    });
  }
  return out;
}

/**
 * What the groups of a report differ in and share. Plan names (and mixes, and strategies) are in
 * every title already: a plan counts only when groups of one plan name ran other events.
 */
export function settingsDiff(groups: readonly Pick<RunGroup, 'plan' | 'settings'>[]): SettingsDiff {
  const diff: SettingsDiff = { differ: [], shared: [] };
  if (groups.length === 0) return diff;
  for (const name of SETTING_NAMES) {
    const values = [...new Set(groups.map((g) => g.settings[name] ?? 'unknown'))];
    const differs =
      name === 'plan'
        ? groups.some((a) => groups.some((b) => a.plan === b.plan && a.settings.plan !== b.settings.plan))
        : values.length > 1;
    if (differs)
      diff.differ.push({ name, values: name === 'plan' ? values.filter((v) => v.includes(' #')) : values });
    else if (values.length === 1 && values[0] !== 'unknown' && values[0] !== UNSAID_SHARED[name])
      diff.shared.push({ name, value: values[0]! });
  }
  return diff;
}

function aggregateGroup(runs: RunSummary[]): RunGroup {
  const first = runs[0] as RunSummary;
  const phaseNames: string[] = [];
  for (const r of runs) for (const p of r.phases) if (!phaseNames.includes(p.name)) phaseNames.push(p.name);

  const phases = phaseNames.map((name) =>
    aggregatePhase(
      name,
      runs.map((r) => ({ runId: r.runId, phases: r.phases.filter((p) => p.name === name) })),
    ),
  );
  const faults = runs.map((r) => ({ runId: r.runId, phases: r.faultInterval ? [r.faultInterval] : [] }));
  const faultInterval = faults.some((f) => f.phases.length > 0)
    ? aggregatePhase(FAULT_INTERVAL, faults)
    : undefined;
  const detKeys: { replica: string; action: string; occurrence: number }[] = [];
  const delays = new Map<string, (number | null)[]>();
  for (const r of runs) {
    const seen = new Map<string, number>();
    for (const d of r.detection ?? []) {
      const base = `${d.replica}|${d.action}`;
      const occurrence = (seen.get(base) ?? 0) + 1;
      seen.set(base, occurrence);
      const k = `${base}|${occurrence}`;
      if (!delays.has(k)) {
        delays.set(k, []);
        detKeys.push({ replica: d.replica, action: d.action, occurrence });
      }
      delays.get(k)?.push(d.delayMs);
    }
  }
  const detection = detKeys.map((d) => {
    const vals = delays.get(`${d.replica}|${d.action}|${d.occurrence}`) ?? [];
    return { ...d, delayMs: stat(vals), missed: vals.filter((v) => v === null).length };
  });

  const templates = aggregateTemplates(runs);
  const routers = aggregateRouters(runs);
  const workers = aggregateWorkers(runs);
  return {
    ...(templates ? { templates } : {}),
    ...(routers ? { routers } : {}),
    ...(workers ? { workers } : {}),
    key: groupKey(first),
    settings: {},
    settingsKey: '',
    settingsLabel: '',
    plan: first.plan,
    strategy: first.strategy,
    mix: { premium: first.mix.premium, freemium: first.mix.freemium },
    mixLabel: mixLabel(first.mix),
    runIds: runs.map((r) => r.runId),
    complete: runs.every((r) => r.complete),
    problems: [],
    excluded: [],
    phases,
    ...(faultInterval ? { faultInterval } : {}),
    detection,
    detections: {
      down: stat(runs.map((r) => r.detectionCounts?.down ?? null)),
      up: stat(runs.map((r) => r.detectionCounts?.up ?? null)),
      unexplained: stat(runs.map((r) => r.detectionCounts?.unexplained ?? null)),
    },
    ...aggregateHang(runs),
  };
}

/** One phase (matched by name, or the fault interval) over the runs that have it. */
function aggregatePhase(name: string, perRun: { runId: string; phases: PhaseSummary[] }[]): AggregatedPhase {
  const ps = perRun.flatMap((r) => r.phases);
  const classes = {} as Record<ServiceClass, Record<ClassMetric, Stat>>;
  for (const c of SERVICE_CLASSES) {
    classes[c] = Object.fromEntries(
      CLASS_METRICS.map((m) => [m, stat(ps.map((p) => p.classes[c]?.[m] ?? null))]),
    ) as Record<ClassMetric, Stat>;
  }
  const replicaIds = [...new Set(ps.flatMap((p) => Object.keys(p.replicas ?? {})))].sort(compareReplicaIds);
  const replicas: Record<string, AggregatedReplica> = {};
  for (const id of replicaIds) {
    const of = (m: 'cpuMean' | 'unreachable' | 'overloaded' | 'slow') =>
      stat(ps.map((p) => p.replicas?.[id]?.[m] ?? null));
    const p95 = ps.map((p) => p.replicas?.[id]?.p95Ms);
    replicas[id] = {
      cpuMean: of('cpuMean'),
      ...(p95.some((x) => typeof x === 'number') ? { p95Ms: stat(p95) } : {}),
      unreachable: of('unreachable'),
      overloaded: of('overloaded'),
      slow: of('slow'),
    };
  }
  return {
    name,
    runs: ps.length,
    startS: stat(ps.map((p) => p.startS)),
    endS: stat(ps.map((p) => p.endS)),
    survivors: stat(ps.map((p) => p.survivors)),
    classes,
    replicas,
    cpuMean: stat(ps.map((p) => p.cpuMean)),
    cpuCv: stat(ps.map((p) => p.cpuCv)),
    harnessCpu: stat(ps.map((p) => p.harness?.cpuMean ?? null)),
    harnessLoopP99Ms: stat(ps.map((p) => p.harness?.loopP99Ms ?? null)),
    ...(ps.some((p) => p.harness?.host)
      ? { hostBusy: stat(ps.map((p) => p.harness?.host?.busyMean ?? null)) }
      : {}),
    invalid: perRun.flatMap((r) => r.phases.filter((p) => p.invalid).map((p) => `${r.runId}: ${p.invalid}`)),
    ...aggregateSignals(ps),
  };
}

function aggregateSignals(ps: readonly PhaseSummary[]): { signals?: AggregatedSignals } {
  const sig = ps.flatMap((p) => (p.signals ? [p.signals] : []));
  if (sig.length === 0) return {};
  return {
    signals: {
      queryShareSpread: stat(sig.map((s) => s.queryShareSpread)),
      cpuShareSpread: stat(sig.map((s) => s.cpuShareSpread)),
      weightDeviation: stat(sig.map((s) => s.weightDeviation)),
      silent: [...new Set(sig.flatMap((s) => s.silent))].sort(compareReplicaIds),
      silentRuns: sig.filter((s) => s.silent.length > 0).length,
    },
  };
}

/** Why a run is not complete, one line each (older summaries have no reasons: one generic line). */
function problemsOf(r: RunSummary): string[] {
  if (r.complete) return [];
  const why = r.errors && r.errors.length > 0 ? r.errors : ['did not finish'];
  return why.map((e) => `${r.runId}: ${e}`);
}

// render.ts imports the order from here; its one home is cluster/driver.ts.
export { compareReplicaIds };
