import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Histogram } from 'hdr-histogram-js';
import { PlbError } from '../../core/errors.js';
import { CONFIG_SCHEMA_VERSION } from '../../run-format/config.js';
import { SERVICE_CLASSES, type ServiceClass } from '../../core/service-class.js';
import { histogramLog, newLatencyHistogram } from '../hdr/histogram.js';
import { percentileMs, round } from '../math.js';
import { computePhases, livePhaseName, type FaultMark } from '../../faults/actions.js';
import { COUNTED_CAUSES, MetricsStore } from './store.js';
import { detectionCounts, detectionRecords, markInvalidPhases } from '../summary/detections.js';
import { summarizePhases } from '../summary/summary.js';
import { hangPath, storeRecords } from '../summary/hang-path.js';
import { sessionShares } from '../summary/session-share.js';
import {
  intervalLine,
  intervalLogHeader,
  intervalLogName,
  newLifetimeHistogram,
  secondLine,
} from './seconds.js';
import { timelineHeaderLine, timelineRow } from './timeline.js';
import { type ReplicaState, type RunEvent, type RunWriter } from '../types.js';
import { appendFile } from './append-file.js';
import { SUMMARY_SCHEMA_VERSION, type RunSummary } from '../../run-format/summary.js';

/** File names of a run directory (DESIGN.md, Run directory). */
export const RUN_FILES = {
  config: 'config.json',
  events: 'events.jsonl',
  timeline: 'timeline.csv',
  summary: 'summary.json',
  histograms: 'histograms',
  /** Present while the run goes; removed by finish(). Left behind by a crashed run. */
  running: 'RUNNING',
  /** Written by finish(…, false) next to a summary.json with complete: false. */
  incomplete: 'INCOMPLETE',
  /** Per second, what the summary needs beyond timeline.csv and histograms/<class>.hlog. */
  seconds: 'seconds.jsonl',
} as const;

/**
 * The RUNNING marker: who writes the run, and everything a summary needs that the run's own
 * files do not say, so the report can rebuild the summary of a run killed before finish().
 */
export interface RunningMarker {
  pid: number;
  startedAt: string;
  runId: string;
  strategy: string;
  plan: string;
  seed: number;
  clients: number;
  mix: { premium: number; freemium: number };
  classes: ServiceClass[];
  replicas: string[];
  refWindowS: number;
  warmupS: number;
}

/** Replicas a run directory takes (a simulated cluster's most; the store's index is 16-bit). */
const MAX_RUN_REPLICAS = 1000;

/** Per-second histograms kept after their timeline row was written (bounds the progress window). */
const PROGRESS_KEEP_S = 60;

export interface RunWriterOptions {
  /** Parent directory (e.g. runs/); the run directory is created inside it. */
  outDir: string;
  /** Default: makeRunId(strategy, plan, clock()). */
  runId?: string;
  strategy: string;
  /** Plan name. */
  plan: string;
  seed: number;
  clients: number;
  mix: { premium: number; freemium: number };
  /** Classes given columns in timeline.csv and files in histograms/ (default both). */
  classes?: readonly ServiceClass[];
  /** Replica ids r1..rK. */
  replicas: readonly string[];
  refWindowS: number;
  warmupS: number;
  /** Wall clock for the run id and summary.startedAt (tests pass a fixed one). */
  clock?: () => Date;
}

const pad = (n: number): string => String(n).padStart(2, '0');
const slug = (s: string): string =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');

/** `20261130-051500-plb-demo-cascade`: UTC date and time, strategy, plan. */
export function makeRunId(strategy: string, plan: string, at: Date): string {
  const d = `${at.getUTCFullYear()}${pad(at.getUTCMonth() + 1)}${pad(at.getUTCDate())}`;
  const t = `${pad(at.getUTCHours())}${pad(at.getUTCMinutes())}${pad(at.getUTCSeconds())}`;
  return [d, t, slug(strategy), slug(plan)].filter((s) => s !== '').join('-');
}

function checkOptions(o: RunWriterOptions): void {
  const bad = (field: string, why: string): never => {
    throw new PlbError('BAD_INPUT', `run writer: ${field} ${why}`);
  };
  if (!o.outDir) bad('outDir', 'is empty');
  if (o.runId !== undefined && !/^[A-Za-z0-9._-]+$/.test(o.runId))
    bad('runId', 'must be letters, digits, . _ -');
  if (o.replicas.length === 0 || o.replicas.length > MAX_RUN_REPLICAS)
    bad('replicas', `must list 1..${MAX_RUN_REPLICAS} replica ids`);
  if (new Set(o.replicas).size !== o.replicas.length) bad('replicas', 'has duplicates');
  for (const r of o.replicas) if (!/^[A-Za-z0-9.-]+$/.test(r)) bad('replicas', `has a bad id "${r}"`);
  if (!(o.refWindowS >= 0)) bad('refWindowS', 'must be >= 0');
  if (!(o.warmupS >= 0)) bad('warmupS', 'must be >= 0');
  for (const c of o.classes ?? [])
    if (!SERVICE_CLASSES.includes(c)) bad('classes', `has an unknown class "${c}"`);
}

/** A fresh directory: the given id must not exist yet; a default id gets -2, -3... on a clash. */
function createDir(outDir: string, id: string, explicit: boolean): string {
  mkdirSync(outDir, { recursive: true });
  let dir = join(outDir, id);
  for (let n = 2; existsSync(dir); n++) {
    if (explicit) {
      throw new PlbError('BAD_INPUT', `run directory ${dir} already exists`, {
        hint: 'pick another --run-id or remove it',
      });
    }
    dir = join(outDir, `${id}-${n}`);
  }
  mkdirSync(join(dir, RUN_FILES.histograms), { recursive: true });
  return dir;
}

/** Run directories whose writer has not finished (a hard exit marks them, see below). */
const openRuns = new Set<string>();

/**
 * Marks every run directory still being written as incomplete (synchronously: called right
 * before a hurried process.exit). The RUNNING marker stays: the report rebuilds the summary.
 */
export function markOpenRunsIncomplete(reason: string): string[] {
  const dirs = [...openRuns];
  for (const dir of dirs) {
    try {
      writeFileSync(join(dir, RUN_FILES.incomplete), `${reason}\n`);
    } catch {
      // Exiting anyway: a directory that cannot be written still has its RUNNING marker.
    }
  }
  return dirs;
}

/** Writes whole files atomically (rename), so a reader never sees half a summary. */
function writeAtomic(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

/**
 * Creates the run directory and returns the writer the runner feeds. Layout while running:
 * RUNNING marker, events.jsonl and timeline.csv appended as the run goes, config.json once
 * written; finish() adds histograms/<class>-<phase>.hlog and summary.json and removes RUNNING
 * (plus an INCOMPLETE marker when complete is false).
 */
export function createRunWriter(opts: RunWriterOptions): RunWriter {
  checkOptions(opts);
  const classes = opts.classes ?? SERVICE_CLASSES;
  const replicas = [...opts.replicas];
  const startedAt = (opts.clock ?? (() => new Date()))();
  const dir = createDir(
    opts.outDir,
    opts.runId ?? makeRunId(opts.strategy, opts.plan, startedAt),
    !!opts.runId,
  );
  const runId = dir.split(/[\\/]/).pop() ?? '';
  const path = (f: string): string => join(dir, f);
  const warmupMs = opts.warmupS * 1000;

  const marker: RunningMarker = {
    pid: process.pid,
    startedAt: startedAt.toISOString(),
    runId,
    strategy: opts.strategy,
    plan: opts.plan,
    seed: opts.seed,
    clients: opts.clients,
    mix: { ...opts.mix },
    classes: [...classes],
    replicas,
    refWindowS: opts.refWindowS,
    warmupS: opts.warmupS,
  };
  writeFileSync(path(RUN_FILES.running), `${JSON.stringify(marker)}\n`);
  for (const cls of classes)
    writeFileSync(
      join(path(RUN_FILES.histograms), intervalLogName(cls)),
      intervalLogHeader(cls, startedAt.getTime()),
    );
  writeFileSync(path(RUN_FILES.seconds), '');
  writeFileSync(path(RUN_FILES.events), '');
  openRuns.add(dir);
  writeFileSync(path(RUN_FILES.timeline), timelineHeaderLine(classes, replicas));
  const files = {
    intervals: new Map(
      classes.map((c) => [c, appendFile(join(path(RUN_FILES.histograms), intervalLogName(c)))]),
    ),
    seconds: appendFile(path(RUN_FILES.seconds)),
    timeline: appendFile(path(RUN_FILES.timeline)),
    events: appendFile(path(RUN_FILES.events)),
  };
  const closeFiles = (): void => {
    for (const f of [...files.intervals.values(), files.seconds, files.timeline, files.events]) f.close();
  };

  const store = new MetricsStore(replicas);
  const events: RunEvent[] = [];
  const faults: FaultMark[] = [];
  const scratch: Histogram = newLatencyHistogram();
  const empty: Histogram = newLatencyHistogram();
  const lifetimeScratch: Histogram = newLifetimeHistogram();
  let nextSecond = 0;
  let lastState: Record<string, ReplicaState> | undefined;
  let summary: RunSummary | undefined;

  const tick = (nowMs: number): void => {
    const upTo = Math.floor(nowMs / 1000);
    if (!(upTo > nextSecond)) return;
    const rows: string[] = [];
    const failureLines: string[] = [];
    const intervals = new Map(classes.map((c) => [c, [] as string[]]));
    const secondLines: string[] = [];
    for (; nextSecond < upTo; nextSecond++) {
      const agg = store.peekSecond(nextSecond);
      if (agg?.state) lastState = agg.state;
      for (const cls of classes)
        intervals.get(cls)?.push(intervalLine(agg?.classes[cls].hist ?? empty, nextSecond));
      if (agg) secondLines.push(secondLine(nextSecond, agg, classes, replicas, lifetimeScratch));
      // One 'failures' event per replica and second with any: recorded, whether or not it counted.
      if (agg) {
        replicas.forEach((replica, i) => {
          const counts = COUNTED_CAUSES.map((_, c) => agg.failures[c]?.[i] ?? 0);
          if (counts.every((n) => n === 0)) return;
          const e: RunEvent = { type: 'failures', tMs: nextSecond * 1000, replica };
          COUNTED_CAUSES.forEach((cause, c) => (e[cause] = counts[c]));
          events.push(e);
          failureLines.push(JSON.stringify(e));
        });
      }
      rows.push(
        timelineRow(
          nextSecond,
          livePhaseName(faults, nextSecond * 1000, warmupMs),
          agg,
          lastState,
          classes,
          replicas,
        ),
      );
    }
    // The per-second files first, timeline.csv last: a timeline row means its second is all on disk.
    for (const cls of classes) files.intervals.get(cls)?.write((intervals.get(cls) ?? []).join(''));
    if (secondLines.length > 0) files.seconds.write(`${secondLines.join('\n')}\n`);
    files.timeline.write(`${rows.join('\n')}\n`);
    if (failureLines.length > 0) files.events.write(`${failureLines.join('\n')}\n`);
    store.dropBefore(nextSecond - PROGRESS_KEEP_S);
  };

  return {
    dir,
    recorder: store,

    writeConfig(config) {
      const versioned = { schemaVersion: CONFIG_SCHEMA_VERSION, ...config };
      writeAtomic(path(RUN_FILES.config), `${JSON.stringify(versioned, null, 2)}\n`);
    },

    event(e) {
      events.push(e);
      if (e.type === 'fault' && e.replica !== undefined && e.action !== undefined) {
        faults.push({ tMs: e.tMs, replica: e.replica, action: e.action });
      }
      files.events.write(`${JSON.stringify(e)}\n`);
    },

    tick,

    progress(nowMs, windowS) {
      // Whole seconds only: the current second is still filling.
      const toS = Math.floor(nowMs / 1000);
      const fromS = Math.max(0, toS - Math.min(Math.max(1, Math.floor(windowS)), PROGRESS_KEEP_S));
      const span = Math.max(1, toS - fromS);
      const cls = (c: ServiceClass): { p95: number | null; goodput: number } => {
        const count = store.window(c, fromS, toS, scratch);
        return { p95: round(percentileMs(scratch, 95), 3), goodput: round(count / span, 3) ?? 0 };
      };
      return {
        phase: livePhaseName(faults, nowMs, warmupMs),
        premium: cls('premium'),
        freemium: cls('freemium'),
      };
    },

    finish(endMs, stoppedNormally, runErrors = []) {
      if (summary) return summary;
      tick(endMs);
      closeFiles();
      store.sealed = true;
      const phases = computePhases({
        faults,
        endMs,
        refWindowMs: opts.refWindowS * 1000,
        warmupMs,
        replicas,
      });
      const stats = summarizePhases(store, phases);
      for (const { cls, phase, hist } of stats.histograms) {
        if (!classes.includes(cls)) continue;
        const text = histogramLog(hist, {
          tag: `${cls}.${phase.name}`,
          startedAtMs: startedAt.getTime(),
          startS: phase.startMs / 1000,
          endS: phase.endMs / 1000,
        });
        writeFileSync(join(path(RUN_FILES.histograms), `${cls}-${phase.name}.hlog`), text);
      }
      // Honest completion: a fault that did not happen or an error anywhere makes the run incomplete.
      const errors = [
        ...(stoppedNormally ? [] : [`stopped early at ${round(endMs / 1000, 3)} s`]),
        ...markInvalidPhases(stats.phases, events),
        ...runErrors,
      ];
      // Its failed faults are those of the phases (already counted above).
      if (stats.faultInterval) markInvalidPhases([stats.faultInterval], events);
      const complete = errors.length === 0;
      summary = {
        schemaVersion: SUMMARY_SCHEMA_VERSION,
        runId,
        strategy: opts.strategy,
        plan: opts.plan,
        mix: { ...opts.mix },
        clients: opts.clients,
        seed: opts.seed,
        complete,
        startedAt: startedAt.toISOString(),
        durationS: round(endMs / 1000, 3) ?? 0,
        phases: stats.phases,
        ...(stats.faultInterval ? { faultInterval: stats.faultInterval } : {}),
        detection: detectionRecords(events),
        detectionCounts: detectionCounts(events),
        ...(stats.recoveryTail ? { recoveryTail: stats.recoveryTail } : {}),
        hangPath: hangPath(events, endMs, (ids) => storeRecords(store, ids)),
        sessionShare: sessionShares(stats.phases, events),
        ...(complete ? {} : { errors }),
      };
      writeAtomic(path(RUN_FILES.summary), `${JSON.stringify(summary, null, 2)}\n`);
      if (!complete) writeFileSync(path(RUN_FILES.incomplete), `${errors.join('\n')}\n`);
      rmSync(path(RUN_FILES.running), { force: true });
      openRuns.delete(dir);
      return summary;
    },
  };
}

/** Lists the per-phase histogram files (`<class>-<phase>.hlog`) of a run directory. */
export function histogramFiles(dir: string): string[] {
  const h = join(dir, RUN_FILES.histograms);
  const perSecond = new Set(SERVICE_CLASSES.map(intervalLogName));
  return existsSync(h)
    ? readdirSync(h)
        .filter((f) => f.endsWith('.hlog') && !perSecond.has(f))
        .sort()
    : [];
}
