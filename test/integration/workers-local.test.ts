/**
 * Issue 49, --workers: two routers run in two worker processes on a real cluster (local postgres
 * processes). The run completes and its per-second counts are the sum of the workers'; the same
 * seed in one worker process gives the same sessions per class; a worker killed mid-run (SIGKILL)
 * is detected, the run marked incomplete, the other worker's values kept. With CI=true missing
 * server binaries fail the suite instead of skipping it.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as hdr from 'hdr-histogram-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { downCluster } from '../../src/cluster/select.js';
import { intervalLogEntries } from '../../src/metrics/store/seconds.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { benchFlagValues, haveServerBinaries } from '../helpers/fixtures.js';

const ci = process.env.CI === 'true';
const NAME = 'plbtest-workers';
// Ports 28400-28402 (primary and two replicas).
const BASE_PORT = 28400;
const PLAN = `name: workers-it
duration: 14s
warmup: 2s
reference: 4s
replicas: 2
events: []
`;
const CLASSES = ['premium', 'freemium'] as const;
const QUERIES = 4;
const RATE = 15;

interface Run {
  code: number;
  lines: string[];
  dir: string;
  summary: RunSummary;
}

describe.skipIf(!haveServerBinaries && !ci)('--workers on a local cluster', () => {
  let work = '';
  let saved: string | undefined;
  let plan = '';

  beforeAll(() => {
    if (!haveServerBinaries)
      throw new Error('CI=true and no postgres server binaries: this test must run in CI');
    saved = process.env.PLB_STATE_DIR;
    work = mkdtempSync(join(tmpdir(), 'plb-workers-it-'));
    chmodSync(work, 0o755); // the postgres OS user must reach the state folder inside
    process.env.PLB_STATE_DIR = join(work, 'state');
    plan = join(work, 'plan.yaml');
    writeFileSync(plan, PLAN);
  });

  afterAll(async () => {
    await downCluster(NAME, join(work, 'state'), { explicit: true }).catch(() => undefined);
    if (saved === undefined) delete process.env.PLB_STATE_DIR;
    else process.env.PLB_STATE_DIR = saved;
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** One run of the open model (its arrivals are the seed's, whoever runs them), into its own folder. */
  async function run(label: string, workers: string, onLine?: (l: string) => void): Promise<Run> {
    const out = join(work, label);
    const lines: string[] = [];
    const code = await executeBench(
      benchFlagValues(out, NAME, BASE_PORT, {
        plan,
        model: 'open',
        rate: String(RATE),
        seed: 11,
        'think-time': '30ms',
        'queries-per-session': QUERIES,
        'health-interval': '500ms',
        routers: '2',
        workers,
        'keep-cluster': true,
      }),
      {
        log: () => undefined,
        warn: (l) => {
          lines.push(l);
          onLine?.(l);
        },
      },
    );
    const dir = join(out, readdirSync(out).find((d) => !d.startsWith('.'))!);
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as RunSummary;
    return { code, lines, dir, summary };
  }

  /** Queries per second of a class in the run's per-second latency log (histograms/<class>.hlog). */
  function hlogCounts(dir: string, cls: string): number[] {
    const text = readFileSync(join(dir, 'histograms', `${cls}.hlog`), 'utf8');
    const out: number[] = [];
    for (const [s, b64] of intervalLogEntries(text))
      out[s] = hdr.decodeFromCompressedBase64(b64, 32, false).totalCount;
    return Array.from({ length: out.length }, (_, s) => out[s] ?? 0);
  }

  let two: Run;

  it('completes, and each second of the run is the sum of the workers', async () => {
    two = await run('w2', '2');
    expect(two.code, two.lines.join('\n')).toBe(0);
    expect(two.summary.complete, two.lines.join('\n')).toBe(true);
    const config = JSON.parse(readFileSync(join(two.dir, 'config.json'), 'utf8')) as { routers?: unknown };
    expect(config.routers).toMatchObject({ count: 2, view: 'local', workers: 2 });
    const workers = two.summary.workers!;
    expect(workers.map((w) => [w.worker, w.instances, w.exit])).toEqual([
      [0, [0], 'done'],
      [1, [1], 'done'],
    ]);
    for (const cls of CLASSES) {
      const run = hlogCounts(two.dir, cls);
      const sum = run.map((_, s) => workers.reduce((n, w) => n + (w.perSecond[cls][s] ?? 0), 0));
      // Every second, exactly: the parent writes a second only once every worker's values of it are in.
      expect(run, cls).toEqual(sum);
      expect(run.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    }
    // Per router: instance i's sessions are worker i's.
    for (const w of workers) {
      const r = two.summary.routers!.perRouter[w.worker]!;
      expect(r.sessions).toEqual(w.sessions);
    }
  }, 180_000);

  it('opens the same sessions per class in one worker process on the same seed', async () => {
    const one = await run('w1', '1');
    expect(one.code, one.lines.join('\n')).toBe(0);
    const sessions = (r: Run, cls: (typeof CLASSES)[number]): number =>
      r.summary.workers!.reduce((n, w) => n + w.sessions[cls], 0);
    const queries = (r: Run, cls: (typeof CLASSES)[number]): number =>
      hlogCounts(r.dir, cls).reduce((a, b) => a + b, 0);
    for (const cls of CLASSES) {
      // The arrivals are drawn from the seed in every process (each runs its own, skips the rest).
      expect(sessions(two, cls), cls).toBe(sessions(one, cls));
      // Each session runs QUERIES queries; only those still open when the plan ends are cut, and
      // that is timing: at most the sessions of the last second or so (RATE a second).
      expect(Math.abs(queries(two, cls) - queries(one, cls)), cls).toBeLessThanOrEqual(QUERIES * RATE);
    }
  }, 180_000);

  it('detects a worker killed mid-run, marks the run incomplete and keeps the other worker', async () => {
    let killed = 0;
    const r = await run('killed', '2', (l) => {
      const m = /^worker 1: pid (\d+)/.exec(l);
      if (m) {
        killed = Number(m[1]);
        // Mid-run: well after the clients started, well before the plan ends.
        setTimeout(() => process.kill(killed, 'SIGKILL'), 8000);
      }
    });
    expect(killed).toBeGreaterThan(0);
    expect(r.summary.complete).toBe(false);
    expect(r.summary.errors?.join('\n'), r.lines.join('\n')).toMatch(
      /worker 1 \(pid \d+\) ended .*signal SIGKILL/,
    );
    const [w0, w1] = r.summary.workers!;
    expect(w0!.exit).toBe('done');
    expect(w1!.exit).toBe('signal SIGKILL');
    // The survivor ran to the end: it has values in the plan's last seconds; the dead one does not.
    const last = (w: typeof w0): number =>
      Math.max(...CLASSES.map((c) => w!.perSecond[c].findLastIndex((n) => n > 0)));
    expect(last(w0)).toBeGreaterThanOrEqual(12);
    expect(last(w1)).toBeLessThan(12);
    // Nothing of the survivor lost: its every second is in the run's log.
    for (const cls of CLASSES) {
      const run = hlogCounts(r.dir, cls);
      // The run's seconds only: a query that ends in the drain after the plan's last second is
      // in a worker's tally and in no run's log, with one process as with two.
      expect(run.length).toBeGreaterThanOrEqual(12);
      run.forEach((n, s) =>
        expect(n, `${cls} second ${s}`).toBeGreaterThanOrEqual(w0!.perSecond[cls][s] ?? 0),
      );
    }
    const events = readFileSync(join(r.dir, 'events.jsonl'), 'utf8');
    expect(events).toMatch(/"what":"worker-lost"/);
  }, 180_000);
});
