/**
 * Issue 49, several nodes: `plb bench merge` joins the --worker-index parts of one run. Merging the
 * parts gives the per-second histograms and the summary that recording every value in one run
 * gives (exactly: the same raw values through the same code); a missing or incomplete part makes
 * the merged run incomplete with the reason; parts of different runs are refused naming the field.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mergeRuns } from '../../src/bench/merge/merge-runs.js';
import { NodeLog } from '../../src/bench/workers/node-log.js';
import { loadPlan } from '../../src/faults/plan.js';
import { createRunWriter, RUN_FILES } from '../../src/metrics/store/run-writer.js';
import { intervalLogEntries } from '../../src/metrics/store/seconds.js';
import type { Recorder, RunWriter } from '../../src/metrics/types.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import BenchMerge from '../../src/commands/bench/merge.js';
import { runCommand, scratchFolder, thrownMessage } from '../helpers/fixtures.js';

const ROOT = join(import.meta.dirname, '../..');
const PLAN_PATH = join(ROOT, 'plans/demo-single.yaml');
const plan = loadPlan(PLAN_PATH);
const IDS = ['r1', 'r2', 'r3', 'r4', 'r5'];
const START_AT = '2026-12-07T12:00:00.000Z';
const ROUTERS = 4;
const WORKERS = 2;
const END_MS = 50_000;
const scratch = scratchFolder('plb-merge-');

const writerIn = (dir: string, runId: string, seed = 7): RunWriter =>
  createRunWriter({
    outDir: dir,
    runId,
    strategy: 'plb',
    plan: plan.name,
    seed,
    clients: 8,
    mix: { premium: 25, freemium: 75 },
    replicas: IDS,
    refWindowS: plan.referenceWindow,
    warmupS: plan.warmup,
    clock: () => new Date(START_AT),
  });

const configOf = (index: number | undefined, seed = 7): Record<string, unknown> => ({
  strategy: 'plb',
  seed,
  plan: { ...plan, path: PLAN_PATH },
  mix: { premium: 25, freemium: 75 },
  clients: 8,
  replicas: IDS,
  routers: {
    count: ROUTERS,
    view: 'local',
    assignment: 'round-robin',
    viewIntervalMs: 1000,
    workers: WORKERS,
    ...(index !== undefined ? { workerIndex: index, startAt: START_AT } : {}),
  },
});

/** The values of a run: instance k % 4's sessions and queries, a fault at 30 s (what node 0 injects). */
function feed(
  rec: (instance: number) => Recorder | undefined,
  event: ((e: { type: 'fault'; tMs: number; replica: string; action: string }) => void) | undefined,
): void {
  event?.({ type: 'fault', tMs: 30_000, replica: 'r1', action: 'down' });
  for (let k = 0; k * 3.7 < END_MS; k++) {
    const t = k * 3.7;
    const instance = k % ROUTERS;
    const r = rec(instance);
    if (!r) continue;
    const cls = (k >> 2) % 4 === 0 ? 'premium' : 'freemium';
    const replica = IDS[((k >> 3) % (t >= 30_000 ? 4 : 5)) + (t >= 30_000 ? 1 : 0)] as string;
    if (k % 97 === 0) r.sessionOpened(cls, replica, t, 1 + (k % 5));
    if (k % 101 === 0) r.sessionClosed(cls, replica, Math.max(0, t - 900), t, 'finished');
    if (k % 211 === 0) r.queryFailed(cls, replica, t, 'boom');
    else r.queryDone(cls, replica, t, 0.3 + ((k * 7919) % 1000) / 37);
  }
}

/** Part `index` of the run, written as a node writes it; `finish: false` leaves it as a killed node does. */
function part(index: number, opts: { seed?: number; finish?: boolean; label?: string } = {}): string {
  const base = writerIn(
    scratch.root,
    opts.label ?? `part-${index}-${Math.random().toString(36).slice(2)}`,
    opts.seed,
  );
  const node = new NodeLog(base, { index, count: WORKERS, startAtMs: Date.parse(START_AT) }, ROUTERS);
  node.writer.writeConfig(configOf(index, opts.seed));
  feed(
    (i) => (i % WORKERS === index ? node.recorder(i, base.recorder) : undefined),
    index === 0 ? (e) => node.writer.event(e) : undefined,
  );
  node.writer.tick(END_MS);
  if (opts.finish !== false) node.writer.finish(END_MS, true);
  return base.dir;
}

function hlog(dir: string, cls: string): Map<number, string> {
  return intervalLogEntries(readFileSync(join(dir, RUN_FILES.histograms, `${cls}.hlog`), 'utf8'));
}

describe('plb bench merge', () => {
  const one = writerIn(scratch.root, 'one');
  one.writeConfig(configOf(undefined));
  feed(
    () => one.recorder,
    (e) => one.event(e),
  );
  const whole: RunSummary = one.finish(END_MS, true);
  const p0 = part(0);
  const p1 = part(1);

  it('equals one run of every value: per-second histograms count for count, the same summary', () => {
    const { dir, summary } = mergeRuns([p1, p0], join(scratch.root, 'merged'));
    expect(summary.complete, (summary.errors ?? []).join('\n')).toBe(true);
    for (const cls of ['premium', 'freemium']) {
      const merged = hlog(dir, cls);
      expect(merged.size).toBeGreaterThan(40);
      expect([...merged]).toEqual([...hlog(one.dir, cls)]);
    }
    expect(summary.phases).toEqual(whole.phases);
    expect(summary.faultInterval).toEqual(whole.faultInterval);
    expect(summary.phases.map((p) => p.name)).toEqual(['ref', 'down-1']);
    // Per worker, what its part measured; together, every query of the run.
    let premium = 0;
    const counting = {
      queryDone: (cls: string) => (premium += cls === 'premium' ? 1 : 0),
    } as unknown as Recorder;
    feed(
      () => new Proxy(counting, { get: (t, k) => (k === 'queryDone' ? t.queryDone : () => undefined) }),
      undefined,
    );
    expect(summary.workers?.map((w) => [w.worker, w.instances, w.exit])).toEqual([
      [0, [0, 2], 'done'],
      [1, [1, 3], 'done'],
    ]);
    expect(summary.workers!.reduce((n, w) => n + w.queries.premium, 0)).toBe(premium);
    expect(summary.routers?.perRouter).toHaveLength(ROUTERS);
    const config = JSON.parse(readFileSync(join(dir, RUN_FILES.config), 'utf8')) as {
      routers: { workerIndex?: number };
      merged: { parts: { workerIndex: number }[]; missing: number[] };
    };
    expect(config.routers.workerIndex).toBeUndefined();
    expect(config.merged.parts.map((p) => p.workerIndex)).toEqual([0, 1]);
    expect(config.merged.missing).toEqual([]);
    const events = readFileSync(join(dir, RUN_FILES.events), 'utf8');
    expect(events.match(/"type":"fault"/g)).toHaveLength(1);
  });

  it('a missing index or an incomplete part makes the merged run incomplete, with the reason', () => {
    const alone = mergeRuns([p0], join(scratch.root, 'alone'));
    expect(alone.summary.complete).toBe(false);
    expect(alone.summary.errors).toContain(
      'worker index 1 of 2: no part given (its share is not in this run)',
    );
    const killed = part(1, { finish: false });
    const cut = mergeRuns([p0, killed], join(scratch.root, 'cut'));
    expect(cut.summary.complete).toBe(false);
    expect(cut.summary.errors?.join('\n')).toMatch(/worker index 1\): killed before it finished/);
    expect(cut.summary.workers?.[1]?.exit).toMatch(/^incomplete/);
  });

  it('refuses parts of different runs, an index twice, and a run that is not a part', () => {
    expect(thrownMessage(() => mergeRuns([p0, part(1, { seed: 8 })], join(scratch.root, 'x1')))).toMatch(
      /^bench merge: seed of .* differs/,
    );
    expect(thrownMessage(() => mergeRuns([p0, part(0)], join(scratch.root, 'x2')))).toMatch(
      /routers\.workerIndex 0 twice/,
    );
    expect(thrownMessage(() => mergeRuns([one.dir], join(scratch.root, 'x3')))).toMatch(
      /config\.json: routers\.workerIndex: absent/,
    );
    expect(thrownMessage(() => mergeRuns([p0, part(2)], join(scratch.root, 'x5')))).toMatch(
      /routers\.workerIndex 2 of .* is out of range for routers\.workers 2/,
    );
    expect(thrownMessage(() => mergeRuns([p0, p1], p0))).toMatch(/^--out: .* already exists/);
    const noCalls = part(1);
    rmSync(join(noCalls, 'calls.jsonl'));
    expect(thrownMessage(() => mergeRuns([p0, noCalls], join(scratch.root, 'x4')))).toMatch(
      /calls\.jsonl: missing/,
    );
  });

  it('plb bench merge: the merged directory (--json), bad input one line on stderr (exit 1)', async () => {
    const ok = await runCommand(BenchMerge, [p0, p1, '--out', join(scratch.root, 'cli'), '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual({ dir: join(scratch.root, 'cli'), complete: true, errors: [] });
    const dup = await runCommand(BenchMerge, [p0, p0, '--out', join(scratch.root, 'cli2')]);
    expect(dup.code).toBe(1);
    expect(dup.stderr.trim().split('\n')).toHaveLength(1);
    expect(dup.stderr).toMatch(/^Error: bench merge: routers\.workerIndex 0 twice/);
  });
});
