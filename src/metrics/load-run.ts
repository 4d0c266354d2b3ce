import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Histogram } from 'hdr-histogram-js';
import { PlbError } from '../errors.js';
import type { ServiceClass } from '../router/types.js';
import { readHistogramLog } from './histogram.js';
import { RUN_FILES, histogramFiles } from './run-writer.js';
import { parseTimeline, type TimelineRow } from './timeline.js';
import { SUMMARY_SCHEMA_VERSION, type RunEvent, type RunSummary } from './types.js';

export interface LoadedRun {
  dir: string;
  config: Record<string, unknown>;
  summary: RunSummary;
  /** 'incomplete' when summary.complete is false or the INCOMPLETE marker is there. */
  status: 'complete' | 'incomplete';
  events: RunEvent[];
  timeline: TimelineRow[];
  /** File names inside histograms/, `<class>-<phase>.hlog`. */
  histograms: string[];
}

const invalid = (dir: string, file: string, why: string, cause?: unknown): PlbError =>
  new PlbError('RUN_DIR_INVALID', `${join(dir, file)}: ${why}`, {
    hint: 'point at a run directory written by plb bench run (runs/<id>/)',
    cause,
  });

function readText(dir: string, file: string, extra = ''): string {
  const p = join(dir, file);
  if (!existsSync(p)) throw invalid(dir, file, `missing${extra}`);
  try {
    return readFileSync(p, 'utf8');
  } catch (err) {
    throw invalid(dir, file, 'unreadable', err);
  }
}

function readJsonObject(dir: string, file: string, extra = ''): Record<string, unknown> {
  const text = readText(dir, file, extra);
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw invalid(dir, file, 'is not valid JSON', err);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw invalid(dir, file, 'is not a JSON object');
  return v as Record<string, unknown>;
}

/**
 * Reads a run directory back for `plb report`. Needs config.json, summary.json, events.jsonl and
 * timeline.csv; throws RUN_DIR_INVALID naming the first missing or malformed file. A run that is
 * still going (or was killed hard) has a RUNNING marker and no summary.json.
 */
export function loadRun(dir: string): LoadedRun {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new PlbError('RUN_DIR_INVALID', `${dir} is not a directory`, { hint: 'pass runs/<id>/' });
  }
  const config = readJsonObject(dir, RUN_FILES.config);
  const running = existsSync(join(dir, RUN_FILES.running));
  const summary = readJsonObject(
    dir,
    RUN_FILES.summary,
    running ? ' (RUNNING marker present: the run is still going or was killed)' : '',
  );
  if (summary['schemaVersion'] !== SUMMARY_SCHEMA_VERSION) {
    throw invalid(
      dir,
      RUN_FILES.summary,
      `schemaVersion ${String(summary['schemaVersion'])}, expected ${SUMMARY_SCHEMA_VERSION}`,
    );
  }
  if (!Array.isArray(summary['phases'])) throw invalid(dir, RUN_FILES.summary, 'phases is not an array');
  if (!Array.isArray(summary['detection']))
    throw invalid(dir, RUN_FILES.summary, 'detection is not an array');
  if (typeof summary['complete'] !== 'boolean')
    throw invalid(dir, RUN_FILES.summary, 'complete is not a boolean');

  const events: RunEvent[] = [];
  readText(dir, RUN_FILES.events)
    .split('\n')
    .forEach((line, i) => {
      if (line.trim() === '') return;
      let e: unknown;
      try {
        e = JSON.parse(line);
      } catch (err) {
        throw invalid(dir, RUN_FILES.events, `line ${i + 1} is not valid JSON`, err);
      }
      const ev = e as Partial<RunEvent> | null;
      if (
        typeof ev !== 'object' ||
        ev === null ||
        typeof ev.type !== 'string' ||
        typeof ev.tMs !== 'number'
      ) {
        throw invalid(dir, RUN_FILES.events, `line ${i + 1} needs type and tMs`);
      }
      events.push(ev as RunEvent);
    });

  let timeline: TimelineRow[];
  try {
    timeline = parseTimeline(readText(dir, RUN_FILES.timeline));
  } catch (err) {
    if (err instanceof PlbError) throw err;
    throw invalid(dir, RUN_FILES.timeline, err instanceof Error ? err.message : String(err), err);
  }

  const s = summary as unknown as RunSummary;
  const marked = existsSync(join(dir, RUN_FILES.incomplete));
  return {
    dir,
    config,
    summary: s,
    status: s.complete && !marked ? 'complete' : 'incomplete',
    events,
    timeline,
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
