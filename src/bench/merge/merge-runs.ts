/**
 * `plb bench merge`: the run directories of the `--worker-index` nodes of one run, joined into one
 * run directory. Every node's raw values (calls.jsonl) are replayed, in time order, into one run
 * writer, so the per-second histograms are the HDR merge of the nodes' values count for count and
 * the summary is made by the code that makes every summary (never from the parts' percentiles).
 * A missing index or an incomplete part makes the merged run incomplete, with the reason.
 */
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { PlbError } from '../../core/errors.js';
import { basename, dirname, join, resolve } from 'node:path';
import { RouterBook } from '../../metrics/routers/router-book.js';
import { createRunWriter, RUN_FILES } from '../../metrics/store/run-writer.js';
import type { Recorder, ReplicaState, RunEvent } from '../../metrics/types.js';
import { WorkerFigures } from '../../metrics/workers/worker-book.js';
import type { RunSummary } from '../../run-format/summary.js';
import { isFlip } from '../router-fleet.js';
import type { RecordedCall } from '../workers/protocol.js';
import { bookFigures, callTimeMs, CLIENT_CALLS, replayInto } from '../workers/replay.js';
import { checkParts, readPart, type Part } from './read-part.js';

/** Calls every node makes of its own harness (kept from all of them). */
const HARNESS_CALLS = new Set(['harnessCpu', 'hostCpu', 'loopDelay']);
/** The cluster's own samples: one node's (the lowest index present), not one per node. */
const CLUSTER_CALLS = new Set(['cpu', 'lag']);
/** The parts' own bookkeeping, written again by the merged run. */
const OWN_EVENTS = new Set(['run', 'failures']);

export interface MergeResult {
  dir: string;
  summary: RunSummary;
}

export function mergeRuns(dirs: readonly string[], out: string): MergeResult {
  const parts = dirs.map((d) => readPart(d)).sort((a, b) => a.index - b.index);
  checkParts(parts);
  if (existsSync(out))
    throw new PlbError('BAD_INPUT', `--out: ${out} already exists (the merged run is a new directory)`);
  const ref = parts[0] as Part;
  const { config } = ref;
  const count = ref.workers;
  const routers = config.routers;
  const missing = Array.from({ length: count }, (_, i) => i).filter((i) => !parts.some((p) => p.index === i));
  const plan = config.plan;
  const writer = createRunWriter({
    outDir: dirname(resolve(out)),
    runId: basename(resolve(out)),
    strategy: config.strategy ?? 'unknown',
    plan: plan?.name ?? 'unknown',
    seed: config.seed ?? 0,
    clients: config.workload?.clients ?? config.clients ?? 0,
    mix: config.mix ?? config.workload?.mix ?? { premium: 0, freemium: 0 },
    replicas: config.replicas ?? [],
    refWindowS: plan?.referenceWindow ?? 30,
    warmupS: plan?.warmup ?? 0,
    ...(routers?.startAt ? { clock: () => new Date(routers.startAt as string) } : {}),
  });
  const { workerIndex: _, ...merged } = routers ?? { count: 1, view: 'local' as const };
  writer.writeConfig({
    ...config,
    routers: merged,
    merged: {
      parts: parts.map((p) => ({ workerIndex: p.index, dir: p.dir, runId: p.runId, complete: p.complete })),
      missing,
    },
  });

  const book =
    (routers?.count ?? 1) > 1 ? new RouterBook(routers?.count ?? 1, routers?.view ?? 'local') : undefined;
  writer.event({ type: 'run', tMs: 0, state: 'started' });
  for (const e of mergedEvents(parts)) {
    writer.event(e);
    if (e.type === 'role' && isFlip(String(e['reason'])))
      book?.flip(typeof e['router'] === 'number' ? e['router'] : 0, e.tMs);
  }
  const figures = parts.map((p) => {
    const f = new WorkerFigures(p.index, instancesOf(p.index, count, routers?.count ?? 1), p.pid);
    f.exit = p.complete ? 'done' : `incomplete: ${p.reason ?? '?'}`;
    return f;
  });
  const recorders = new Map<number, Recorder>();
  const recorderOf = (instance: number): Recorder => {
    if (instance < 0 || book === undefined) return writer.recorder;
    let r = recorders.get(instance);
    if (r === undefined) recorders.set(instance, (r = book.recorderFor(instance, writer.recorder)));
    return r;
  };
  for (const { part, call } of mergedCalls(parts)) {
    if (CLIENT_CALLS.has(call[1])) bookFigures(figures[part] as WorkerFigures, call);
    replayInto(recorderOf(call[0]), call);
  }

  const endMs = Math.max(...parts.map((p) => p.endMs));
  const errors = [
    ...missing.map((i) => `worker index ${i} of ${count}: no part given (its share is not in this run)`),
    ...parts
      .filter((p) => !p.complete)
      .map((p) => `part ${p.dir} (worker index ${p.index}): ${p.reason ?? 'incomplete'}`),
  ];
  writer.event({ type: 'run', tMs: endMs, state: errors.length > 0 ? 'failed' : 'finished' });
  const summary = writer.finish(endMs, true, errors);
  summary.workers = figures.map((f) => f.summary());
  if (book)
    summary.routers = book.summarize([
      ...summary.phases,
      ...(summary.faultInterval ? [summary.faultInterval] : []),
    ]);
  const path = join(writer.dir, RUN_FILES.summary);
  writeFileSync(`${path}.tmp`, `${JSON.stringify(summary, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
  return { dir: writer.dir, summary };
}

const instancesOf = (w: number, count: number, n: number): number[] =>
  Array.from({ length: n }, (_, i) => i).filter((i) => i % count === w);

/** Every part's events but its own run bookkeeping, in time order (by index where equal). */
function mergedEvents(parts: readonly Part[]): RunEvent[] {
  return parts.flatMap((p) => p.events.filter((e) => !OWN_EVENTS.has(e.type))).sort((a, b) => a.tMs - b.tMs);
}

/**
 * The calls to replay, in time order: every node's sessions and harness; the cluster's samples of
 * the first part; its replica states with every other node's sessions on each replica added.
 */
function mergedCalls(parts: readonly Part[]): { part: number; call: RecordedCall }[] {
  const out: { part: number; call: RecordedCall; t: number }[] = [];
  const states = parts.map((p) => p.calls.filter((c) => c[1] === 'replicaState'));
  parts.forEach((p, part) => {
    for (const call of p.calls) {
      const m = call[1];
      const keep = CLIENT_CALLS.has(m) || HARNESS_CALLS.has(m) || (part === 0 && CLUSTER_CALLS.has(m));
      if (keep) out.push({ part, call, t: callTimeMs(call) });
    }
  });
  for (const call of states[0] ?? []) {
    const t = callTimeMs(call);
    out.push({ part: 0, call: [call[0], call[1], t, summedState(call, states.slice(1), t)], t });
  }
  return out.sort((a, b) => a.t - b.t);
}

/** The first part's replica states, each replica's sessions the sum over every part's latest state at `t`. */
function summedState(
  call: RecordedCall,
  others: readonly RecordedCall[][],
  t: number,
): Record<string, ReplicaState> {
  const own = call[3] as Record<string, ReplicaState>;
  const sum: Record<string, ReplicaState> = {};
  for (const [id, s] of Object.entries(own)) sum[id] = { ...s };
  for (const list of others) {
    let latest: RecordedCall | undefined;
    for (const c of list) if (callTimeMs(c) <= t) latest = c;
    const theirs = (latest?.[3] ?? {}) as Record<string, ReplicaState>;
    for (const [id, s] of Object.entries(theirs)) {
      const into = sum[id];
      if (!into) continue;
      into.premium += s.premium;
      into.freemium += s.freemium;
    }
  }
  return sum;
}
