/**
 * The parts `plb bench merge` joins: run directories of `--worker-index` nodes, each with its
 * config, events and raw values (calls.jsonl). Parts of one run agree on seed, strategy, plan,
 * workload and routers; anything else is one line naming the field, before anything is written.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PlbError } from '../../core/errors.js';
import { parseOrThrow } from '../../core/zod-issue.js';
import { parseEvents } from '../../metrics/store/load-run.js';
import { RUN_FILES } from '../../metrics/store/run-writer.js';
import type { RunEvent } from '../../metrics/types.js';
import { configSchema, type RunConfig } from '../../run-format/config.js';
import { summarySchema } from '../../run-format/summary.js';
import { CALLS_FILE } from '../workers/node-log.js';
import type { RecordedCall } from '../workers/protocol.js';

export interface Part {
  dir: string;
  config: RunConfig;
  index: number;
  workers: number;
  runId: string;
  complete: boolean;
  /** Why the part is incomplete (its errors, or that it was killed). */
  reason: string | undefined;
  /** Its length on the plan's timeline (ms). */
  endMs: number;
  pid: number | null;
  events: RunEvent[];
  calls: RecordedCall[];
}

const bad = (dir: string, file: string, why: string): PlbError =>
  new PlbError('RUN_DIR_INVALID', `${join(dir, file)}: ${why}`, {
    hint: 'pass the run directories of plb bench run --worker-index nodes',
  });

function read(dir: string, file: string): string {
  const p = join(dir, file);
  if (!existsSync(p)) throw bad(dir, file, 'missing');
  return readFileSync(p, 'utf8');
}

function json(dir: string, file: string): unknown {
  try {
    return JSON.parse(read(dir, file)) as unknown;
  } catch (err) {
    if (err instanceof PlbError) throw err;
    throw bad(dir, file, 'is not valid JSON');
  }
}

/** calls.jsonl: one call a line; a last line cut off by a killed node is skipped. */
function parseCalls(text: string, where: string): RecordedCall[] {
  const lines = text.split('\n');
  const out: RecordedCall[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      if (i === lines.length - 1) return;
      throw new PlbError('RUN_DIR_INVALID', `${where}: line ${i + 1} is not valid JSON`);
    }
    if (!Array.isArray(v) || typeof v[0] !== 'number' || typeof v[1] !== 'string')
      throw new PlbError('RUN_DIR_INVALID', `${where}: line ${i + 1} is not [instance, method, ...args]`);
    out.push(v as RecordedCall);
  });
  return out;
}

/** One part, read whole (a part killed hard has no summary.json: it is incomplete). */
export function readPart(dir: string): Part {
  const config = parseOrThrow(configSchema, json(dir, RUN_FILES.config), join(dir, RUN_FILES.config));
  const r = config.routers;
  if (r?.workerIndex === undefined || r.workers === undefined)
    throw bad(
      dir,
      RUN_FILES.config,
      'routers.workerIndex: absent (not a run of plb bench run --worker-index)',
    );
  const events = parseEvents(read(dir, RUN_FILES.events));
  const calls = parseCalls(read(dir, CALLS_FILE), join(dir, CALLS_FILE));
  const hasSummary = existsSync(join(dir, RUN_FILES.summary));
  const summary = hasSummary
    ? parseOrThrow(summarySchema, json(dir, RUN_FILES.summary), join(dir, RUN_FILES.summary))
    : undefined;
  const marker = existsSync(join(dir, RUN_FILES.running))
    ? (json(dir, RUN_FILES.running) as { pid?: unknown; runId?: unknown })
    : {};
  const lastMs = calls.reduce((m, c) => Math.max(m, typeof c[2] === 'number' ? c[2] : 0), 0);
  const reason = summary
    ? summary.complete
      ? undefined
      : (summary.errors ?? []).join('; ') || 'incomplete'
    : 'killed before it finished (no summary.json)';
  const pidOf = summary?.workers?.[0]?.pid ?? (typeof marker.pid === 'number' ? marker.pid : null);
  return {
    dir,
    config,
    index: r.workerIndex,
    workers: r.workers,
    runId: summary?.runId ?? (typeof marker.runId === 'string' ? marker.runId : dir),
    complete: summary?.complete === true,
    reason,
    endMs: summary ? summary.durationS * 1000 : Math.ceil(lastMs / 1000) * 1000,
    pid: pidOf,
    events,
    calls,
  };
}

/** What parts of one run must share, by the field named in the error. */
const SHARED: [field: string, of: (c: RunConfig) => unknown][] = [
  ['seed', (c) => c.seed],
  ['strategy', (c) => c.strategy],
  ['plan', (c) => c.plan],
  ['mix', (c) => c.mix],
  ['workload', (c) => c.workload],
  ['routers.workers', (c) => c.routers?.workers],
  ['routers.count', (c) => c.routers?.count],
  ['routers.view', (c) => c.routers?.view],
  ['routers.startAt', (c) => c.routers?.startAt],
];

/** Parts of one run, or one line naming the field that tells them apart (or the index twice). */
export function checkParts(parts: readonly Part[]): void {
  const first = parts[0];
  if (first === undefined) throw new PlbError('BAD_INPUT', 'bench merge: no run directories given');
  for (const p of parts.slice(1)) {
    for (const [field, of] of SHARED) {
      const a = JSON.stringify(of(first.config));
      const b = JSON.stringify(of(p.config));
      if (a !== b)
        throw new PlbError(
          'BAD_INPUT',
          `bench merge: ${field} of ${p.dir} differs from ${first.dir}'s (${short(b)} against ${short(a)}): not parts of one run`,
        );
    }
  }
  const seen = new Map<number, string>();
  for (const p of parts) {
    if (p.index >= p.workers)
      throw new PlbError(
        'BAD_INPUT',
        `bench merge: routers.workerIndex ${p.index} of ${p.dir} is out of range for routers.workers ${p.workers}`,
      );
    const other = seen.get(p.index);
    if (other !== undefined)
      throw new PlbError(
        'BAD_INPUT',
        `bench merge: routers.workerIndex ${p.index} twice (${other} and ${p.dir})`,
      );
    seen.set(p.index, p.dir);
  }
}

const short = (s: string | undefined): string => {
  const t = s ?? 'absent';
  return t.length > 40 ? `${t.slice(0, 37)}...` : t;
};
