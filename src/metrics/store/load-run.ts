import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { Histogram } from 'hdr-histogram-js';
import { PlbError } from '../../core/errors.js';
import type { ServiceClass } from '../../core/service-class.js';
import { readHistogramLog } from '../hdr/histogram.js';
import { pidAlive, rebuildFaultInterval, rebuildSummary, runFacts } from './rebuild.js';
import { RUN_FILES, histogramFiles } from './run-writer.js';
import { parseTimeline, type TimelineRow } from './timeline.js';
import type { RunEvent } from '../types.js';
import type { RunSummary } from '../../run-format/summary.js';
import { configSchema, type RunConfig } from '../../run-format/config.js';
import { runEventSchema } from '../../run-format/events.js';
import { firstIssue, parseOrThrow } from '../../core/zod-issue.js';
import { summarySchema } from '../../run-format/summary.js';

export interface LoadedRun {
  dir: string;
  config: RunConfig;
  summary: RunSummary;
  /** 'incomplete' when summary.complete is false or the INCOMPLETE marker is there. */
  status: 'complete' | 'incomplete';
  events: RunEvent[];
  timeline: TimelineRow[];
  /** Replica ids in timeline column order (empty when timeline.csv has no rows). */
  replicaIds: string[];
  /** File names inside histograms/, `<class>-<phase>.hlog`. */
  histograms: string[];
}

const RUN_HINT = 'point at a run directory written by plb bench run (runs/<id>/)';

const invalid = (dir: string, file: string, why: string, cause?: unknown): PlbError =>
  new PlbError('RUN_DIR_INVALID', `${join(dir, file)}: ${why}`, { hint: RUN_HINT, cause });

function readText(dir: string, file: string, extra = ''): string {
  const p = join(dir, file);
  if (!existsSync(p)) throw invalid(dir, file, `missing${extra}`);
  try {
    return readFileSync(p, 'utf8');
  } catch (err) {
    throw invalid(dir, file, 'unreadable', err);
  }
}

function readJson(dir: string, file: string, extra = ''): unknown {
  const text = readText(dir, file, extra);
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw invalid(dir, file, 'is not valid JSON', err);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Checks summary.json against its schema (also used for a report baseline file); throws
 * RUN_DIR_INVALID `<where>: <field> ...` naming the first bad field.
 */
export function validateSummary(raw: unknown, where: string, hint?: string): RunSummary {
  return parseOrThrow(summarySchema, raw, where, hint !== undefined ? { hint } : {});
}

/**
 * Parses events.jsonl, each line against the schema of its `type`; throws Error `line N: ...` on
 * a bad line (loadRun wraps it). A last line without its newline that does not parse was cut off
 * by an interrupted run: it is skipped.
 */
export function parseEvents(text: string): RunEvent[] {
  const lines = text.split('\n');
  const events: RunEvent[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let e: unknown;
    try {
      e = JSON.parse(line);
    } catch (err) {
      if (i === lines.length - 1) return;
      throw new Error(`line ${i + 1} is not valid JSON`, { cause: err });
    }
    const r = runEventSchema.safeParse(e);
    if (!r.success) throw new Error(`line ${i + 1}: ${firstIssue(r.error, e)}`, { cause: r.error });
    events.push(r.data);
  });
  return events;
}

/** Runs a parser of one file, turning its Error into RUN_DIR_INVALID naming the file. */
function parseFile<T>(dir: string, file: string, parse: (text: string) => T): T {
  const text = readText(dir, file);
  try {
    return parse(text);
  } catch (err) {
    if (err instanceof PlbError) throw err;
    throw invalid(dir, file, err instanceof Error ? err.message : String(err), err);
  }
}

/**
 * Reads a run directory back (the single reader, used by `plb report` too). Needs config.json,
 * summary.json, events.jsonl and timeline.csv; throws RUN_DIR_INVALID naming the first missing or
 * malformed file. A run killed hard (RUNNING marker, no summary.json) gets its summary rebuilt
 * from the per-second files, marked incomplete. A run that finished with complete: false loads
 * with status 'incomplete'.
 */
export function loadRun(dir: string): LoadedRun {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new PlbError('RUN_DIR_INVALID', `${dir} is not a directory`, { hint: 'pass runs/<id>/' });
  }
  const running = existsSync(join(dir, RUN_FILES.running));
  const hasSummary = existsSync(join(dir, RUN_FILES.summary));
  // A run killed before finish() (RUNNING marker, no summary): rebuilt from its per-second files.
  if (!hasSummary && running) return loadCrashedRun(dir);
  const config = parseOrThrow(configSchema, readJson(dir, RUN_FILES.config), join(dir, RUN_FILES.config), {
    hint: RUN_HINT,
  });
  const summary = validateSummary(readJson(dir, RUN_FILES.summary), join(dir, RUN_FILES.summary), RUN_HINT);
  const events = parseFile(dir, RUN_FILES.events, parseEvents);
  const timeline = parseFile(dir, RUN_FILES.timeline, parseTimeline);
  const marked = existsSync(join(dir, RUN_FILES.incomplete));
  // A summary written before the fault-interval entry existed gets it from the per-second files.
  if (summary.faultInterval === undefined) {
    const fault = rebuildFaultInterval(dir, summary, timeline, events);
    if (fault) summary.faultInterval = fault;
  }
  return {
    dir,
    config,
    summary,
    status: summary.complete && !marked ? 'complete' : 'incomplete',
    events,
    timeline,
    replicaIds: Object.keys(timeline[0]?.replicas ?? {}),
    histograms: histogramFiles(dir),
  };
}

function loadCrashedRun(dir: string): LoadedRun {
  const optionalJson = (file: string): Record<string, unknown> => {
    if (!existsSync(join(dir, file))) return {};
    try {
      const v = JSON.parse(readFileSync(join(dir, file), 'utf8')) as unknown;
      return isObject(v) ? v : {};
    } catch {
      return {};
    }
  };
  // A run killed hard is summarised from what can be read: a bad config is left out, not fatal.
  const parsed = configSchema.safeParse(optionalJson(RUN_FILES.config));
  const config: RunConfig = parsed.success ? parsed.data : {};
  const marker = optionalJson(RUN_FILES.running);
  const events = parseFile(dir, RUN_FILES.events, parseEvents);
  const timeline = parseFile(dir, RUN_FILES.timeline, parseTimeline);
  const facts = runFacts(marker, config, basename(resolve(dir)));
  const upTo = `up to ${timeline.length} s`;
  const alive = facts.pid > 0 && pidAlive(facts.pid);
  const reason = alive
    ? `still running or hung (pid ${facts.pid}): summary rebuilt from its per-second files ${upTo}`
    : `killed before it finished${facts.pid > 0 ? ` (pid ${facts.pid} is gone)` : ''}: summary rebuilt from its per-second files ${upTo}`;
  const summary = rebuildSummary({ dir, facts, events, timeline, reason });
  const marked = existsSync(join(dir, RUN_FILES.incomplete));
  if (marked) {
    const note = readFileSync(join(dir, RUN_FILES.incomplete), 'utf8').trim();
    if (note !== '') summary.errors = [...(summary.errors ?? []), note];
  }
  return {
    dir,
    config,
    summary,
    status: 'incomplete',
    events,
    timeline,
    replicaIds: Object.keys(timeline[0]?.replicas ?? {}),
    histograms: histogramFiles(dir),
  };
}

/** The latency histogram (microseconds) of one class in one phase, from histograms/. */
export function readPhaseHistogram(dir: string, cls: ServiceClass, phase: string): Histogram {
  const file = join(RUN_FILES.histograms, `${cls}-${phase}.hlog`);
  const text = readText(dir, file);
  try {
    return readHistogramLog(text);
  } catch (err) {
    throw invalid(dir, file, 'is not an HdrHistogram log', err);
  }
}
