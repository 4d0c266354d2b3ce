// Reads a run directory (DESIGN.md "Run directory"). The metrics writer owns the format; this is
// the report's own reader so the report does not depend on the writer's internals.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PlbError } from '../errors.js';
import { SERVICE_CLASSES, type ServiceClass } from '../router/types.js';
import type { RunEvent, RunSummary } from '../metrics/types.js';

export interface TimelineClass {
  count: number;
  goodput: number;
  p50Ms: number | null;
  p95Ms: number | null;
  errors: number;
  sessionsOpened: number;
  sessionsFailed: number;
  admissionFailures: number;
}

export interface TimelineReplica {
  cpu: number | null;
  premium: number;
  freemium: number;
  role: string;
  /** Null when the row has no router view of the replica. */
  healthy: boolean | null;
}

export interface TimelineRow {
  tS: number;
  phase: string;
  classes: Record<ServiceClass, TimelineClass>;
  replicas: Record<string, TimelineReplica>;
}

export interface LoadedRun {
  dir: string;
  config: Record<string, unknown>;
  summary: RunSummary;
  events: RunEvent[];
  timeline: TimelineRow[];
  /** Replica ids in timeline column order. */
  replicaIds: string[];
}

/** Expands each path to the run directories under it (a dir with summary.json, searched 3 levels deep). */
export function findRunDirs(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const p of paths) {
    const abs = resolve(p);
    if (!existsSync(abs) || !statSync(abs).isDirectory()) {
      throw new PlbError('RUN_DIR_INVALID', `run-dir: ${p} is not a directory`);
    }
    const found = walk(abs, 3);
    if (found.length === 0) {
      const interrupted = existsSync(join(abs, 'timeline.csv'));
      throw new PlbError('RUN_DIR_INVALID', `run-dir: no summary.json in ${p}`, {
        hint: interrupted
          ? 'the run stopped before it wrote its summary'
          : 'pass a directory made by plb bench run',
      });
    }
    for (const d of found) if (!out.includes(d)) out.push(d);
  }
  return out;
}

function walk(dir: string, depth: number): string[] {
  if (existsSync(join(dir, 'summary.json'))) return [dir];
  if (depth === 0) return [];
  const subdirs = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith('.') && e.name !== 'histograms')
    .map((e) => e.name)
    .sort();
  return subdirs.flatMap((name) => walk(join(dir, name), depth - 1));
}

export function loadRun(dir: string): LoadedRun {
  const summary = readSummaryFile(join(dir, 'summary.json'));
  const configPath = join(dir, 'config.json');
  const config = existsSync(configPath) ? (readJson(configPath) as Record<string, unknown>) : {};
  const eventsPath = join(dir, 'events.jsonl');
  const events = existsSync(eventsPath) ? parseEvents(readFileSync(eventsPath, 'utf8')) : [];
  const timelinePath = join(dir, 'timeline.csv');
  const { rows, replicaIds } = existsSync(timelinePath)
    ? parseTimeline(readFileSync(timelinePath, 'utf8'), timelinePath)
    : { rows: [], replicaIds: [] };
  return { dir, config, summary, events, timeline: rows, replicaIds };
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new PlbError('RUN_DIR_INVALID', `${path}: not valid JSON`, { cause: err });
  }
}

export function readSummaryFile(path: string): RunSummary {
  if (!existsSync(path)) throw new PlbError('RUN_DIR_INVALID', `${path}: file not found`);
  return validateSummary(readJson(path), path);
}

/** Checks the fields the report uses; the error names the first bad field. */
export function validateSummary(raw: unknown, where: string): RunSummary {
  const bad = (field: string, want: string): never => {
    throw new PlbError('RUN_DIR_INVALID', `${where}: ${field} must be ${want}`);
  };
  if (typeof raw !== 'object' || raw === null) return bad('summary', 'an object');
  const s = raw as Record<string, unknown>;
  for (const f of ['runId', 'strategy', 'plan'] as const) if (typeof s[f] !== 'string') bad(f, 'a string');
  const mix = s.mix as Record<string, unknown> | undefined;
  if (typeof mix !== 'object' || mix === null) return bad('mix', 'an object');
  if (typeof mix.premium !== 'number' || typeof mix.freemium !== 'number') bad('mix', '{premium, freemium}');
  if (!Array.isArray(s.phases)) return bad('phases', 'an array');
  s.phases.forEach((p: unknown, i: number) => {
    const ph = p as Record<string, unknown> | null;
    if (typeof ph !== 'object' || ph === null || typeof ph.name !== 'string')
      bad(`phases[${i}].name`, 'a string');
    const classes = (ph as Record<string, unknown>).classes as Record<string, unknown> | undefined;
    for (const c of SERVICE_CLASSES) {
      if (typeof classes?.[c] !== 'object' || classes[c] === null)
        bad(`phases[${i}].classes.${c}`, 'an object');
    }
  });
  return raw as RunSummary;
}

/** One event per line; a line that does not parse (e.g. cut off by an interrupted run) is skipped. */
export function parseEvents(text: string): RunEvent[] {
  const out: RunEvent[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const e = JSON.parse(line) as RunEvent;
      if (typeof e === 'object' && e !== null && typeof e.type === 'string' && typeof e.tMs === 'number')
        out.push(e);
    } catch {
      // skipped on purpose, see above
    }
  }
  return out;
}

const CLASS_COLS = [
  'count',
  'goodput',
  'p50_ms',
  'p95_ms',
  'errors',
  'sessions_opened',
  'sessions_failed',
  'admission_failures',
] as const;

export function parseTimeline(
  text: string,
  where = 'timeline.csv',
): { rows: TimelineRow[]; replicaIds: string[] } {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const header = lines[0]?.split(',').map((h) => h.trim());
  if (!header) return { rows: [], replicaIds: [] };
  const col = new Map(header.map((h, i) => [h, i]));
  for (const need of ['t_s', 'phase']) {
    if (!col.has(need)) throw new PlbError('RUN_DIR_INVALID', `${where}: header has no column ${need}`);
  }
  const replicaIds = header.filter((h) => h.endsWith('_cpu')).map((h) => h.slice(0, -4));
  const rows: TimelineRow[] = [];
  for (const line of lines.slice(1)) {
    const cells = line.split(',');
    // A last line cut off by an interrupted run is shorter than the header: skip it.
    if (cells.length < header.length) continue;
    const get = (name: string): string | undefined => {
      const i = col.get(name);
      return i === undefined ? undefined : cells[i]?.trim();
    };
    const num = (name: string): number | null => {
      const v = get(name);
      if (v === undefined || v === '' || v === 'null' || v === 'NaN') return null;
      const n = Number(v);
      return Number.isFinite(n) ? n : null;
    };
    const classes = {} as Record<ServiceClass, TimelineClass>;
    for (const c of SERVICE_CLASSES) {
      const v = Object.fromEntries(CLASS_COLS.map((k) => [k, num(`${c}_${k}`)])) as Record<
        (typeof CLASS_COLS)[number],
        number | null
      >;
      classes[c] = {
        count: v.count ?? 0,
        goodput: v.goodput ?? 0,
        p50Ms: v.p50_ms,
        p95Ms: v.p95_ms,
        errors: v.errors ?? 0,
        sessionsOpened: v.sessions_opened ?? 0,
        sessionsFailed: v.sessions_failed ?? 0,
        admissionFailures: v.admission_failures ?? 0,
      };
    }
    const replicas: Record<string, TimelineReplica> = {};
    for (const id of replicaIds) {
      const h = get(`${id}_healthy`);
      replicas[id] = {
        cpu: num(`${id}_cpu`),
        premium: num(`${id}_premium`) ?? 0,
        freemium: num(`${id}_freemium`) ?? 0,
        role: get(`${id}_role`) ?? '',
        healthy: h === 'true' || h === '1' ? true : h === 'false' || h === '0' ? false : null,
      };
    }
    const tS = num('t_s');
    if (tS === null) continue;
    rows.push({ tS, phase: get('phase') ?? '', classes, replicas });
  }
  return { rows, replicaIds };
}
