/**
 * Issue 49, several nodes and the replica view under workers, on a real cluster (local postgres
 * processes): two --worker-index nodes (0 and 1 of W = 2) on a shared --start-at, merged by
 * `plb bench merge`, open the sessions per class that one process with --workers 2 opens on the
 * same seed, and the merged per-second histograms are the sum of the nodes'; with --router-view
 * replica and --workers 2 each worker's poller reads the replicas and the run completes. What is
 * asserted holds wherever races land (no timing). With CI=true missing binaries fail the suite.
 */
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as hdr from 'hdr-histogram-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { mergeRuns } from '../../src/bench/merge/merge-runs.js';
import { bringUp, clusterSpec, downCluster, openCluster } from '../../src/cluster/select.js';
import { claimInjector } from '../../src/bench/workers/node.js';
import { intervalLogEntries } from '../../src/metrics/store/seconds.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { benchFlagValues, haveServerBinaries } from '../helpers/fixtures.js';

const ci = process.env.CI === 'true';
const NAME = 'plbtest-nodes';
// Ports 29000-29002 (primary and two replicas).
const BASE_PORT = 29000;
const PLAN = `name: nodes-it
duration: 9s
warmup: 2s
reference: 3s
replicas: 2
events: []
`;
const CLASSES = ['premium', 'freemium'] as const;

interface Run {
  code: number;
  lines: string[];
  dir: string;
  summary: RunSummary;
}

describe.skipIf(!haveServerBinaries && !ci)(
  '--worker-index nodes and the replica view under --workers',
  () => {
    let work = '';
    let saved: string | undefined;
    let plan = '';

    beforeAll(async () => {
      if (!haveServerBinaries)
        throw new Error('CI=true and no postgres server binaries: this test must run in CI');
      saved = process.env.PLB_STATE_DIR;
      work = mkdtempSync(join(tmpdir(), 'plb-nodes-it-'));
      chmodSync(work, 0o755); // the postgres OS user must reach the state folder inside
      process.env.PLB_STATE_DIR = join(work, 'state');
      plan = join(work, 'plan.yaml');
      writeFileSync(plan, PLAN);
      // Sized for every test's runs (the replica view's pollers too), whichever runs first.
      const spec = clusterSpec({
        name: NAME,
        basePort: BASE_PORT,
        maxConnections: 460,
        stateDir: join(work, 'state'),
      });
      await bringUp({ driver: 'local', spec });
    }, 180_000);

    afterAll(async () => {
      await downCluster(NAME, join(work, 'state'), { explicit: true }).catch(() => undefined);
      if (saved === undefined) delete process.env.PLB_STATE_DIR;
      else process.env.PLB_STATE_DIR = saved;
      if (work) rmSync(work, { recursive: true, force: true });
    });

    /** One run of the open model (the seed's arrivals, whoever runs them), into its own folder. */
    async function run(label: string, over: Parameters<typeof benchFlagValues>[3]): Promise<Run> {
      const out = join(work, label);
      const lines: string[] = [];
      const code = await executeBench(
        benchFlagValues(out, NAME, BASE_PORT, {
          plan,
          model: 'open',
          rate: '15',
          seed: 11,
          'think-time': '30ms',
          'queries-per-session': 4,
          'health-interval': '500ms',
          routers: '2',
          workers: '2',
          'keep-cluster': true,
          ...over,
        }),
        { log: () => undefined, warn: (l) => lines.push(l) },
      );
      const sub = existsSync(out) ? readdirSync(out).find((d) => !d.startsWith('.')) : undefined;
      if (sub === undefined)
        throw new Error(`${label}: no run directory (exit ${code}):\n${lines.join('\n')}`);
      const dir = join(out, sub);
      const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as RunSummary;
      return { code, lines, dir, summary };
    }

    function hlogCounts(dir: string, cls: string): number[] {
      const out: number[] = [];
      const text = readFileSync(join(dir, 'histograms', `${cls}.hlog`), 'utf8');
      for (const [s, b64] of intervalLogEntries(text))
        out[s] = hdr.decodeFromCompressedBase64(b64, 32, false).totalCount;
      return Array.from({ length: out.length }, (_, s) => out[s] ?? 0);
    }

    const sessions = (s: RunSummary, cls: (typeof CLASSES)[number]): number =>
      s.workers!.reduce((n, w) => n + w.sessions[cls], 0);

    // Three runs (the first brings the cluster up): past the default 30 s test timeout.
    it(
      'two nodes merged open the sessions of one process with --workers 2 on the same seed',
      { timeout: 240_000 },
      async () => {
        const one = await run('one', {});
        expect(one.code, one.lines.join('\n')).toBe(0);
        // Both nodes start 20 s from now: time for index 0 to check the cluster and for both to be
        // ready, on a busy host too (a node not ready by then refuses to run: it is not timed here).
        const startAt = new Date(Date.now() + 20_000).toISOString();
        const [n0, n1] = await Promise.all(
          [0, 1].map((i) => run(`node${i}`, { 'worker-index': String(i), 'start-at': startAt })),
        );
        for (const n of [n0!, n1!]) {
          expect(n.code, n.lines.join('\n')).toBe(0);
          expect(n.summary.complete, n.lines.join('\n')).toBe(true);
        }
        const merged = mergeRuns([n0!.dir, n1!.dir], join(work, 'merged'));
        expect(merged.summary.complete, (merged.summary.errors ?? []).join('\n')).toBe(true);
        expect(merged.summary.workers?.map((w) => [w.worker, w.instances, w.exit])).toEqual([
          [0, [0], 'done'],
          [1, [1], 'done'],
        ]);
        for (const cls of CLASSES) {
          // The same schedule: every node draws the seed's arrivals and runs its own share.
          expect(sessions(merged.summary, cls), cls).toBe(sessions(one.summary, cls));
          expect(sessions(merged.summary, cls), cls).toBeGreaterThan(0);
          // Every second of the merged run is the sum of the nodes' seconds (HDR add of raw values).
          const a = hlogCounts(n0!.dir, cls);
          const b = hlogCounts(n1!.dir, cls);
          const sum = hlogCounts(merged.dir, cls);
          expect(sum, cls).toEqual(sum.map((_, s) => (a[s] ?? 0) + (b[s] ?? 0)));
        }
        // Only index 0 ran the plan's work on the cluster: node 1 joined it without its lock.
        expect(n1!.lines.join('\n')).not.toMatch(/dataset loaded/);
      },
    );

    it(
      'runs the replica view with --workers 2: each worker polls the replicas for its routers',
      { timeout: 120_000 },
      async () => {
        const r = await run('replica', { 'router-view': 'replica' });
        expect(r.code, r.lines.join('\n')).toBe(0);
        expect(r.summary.complete, r.lines.join('\n')).toBe(true);
        for (const w of [0, 1]) {
          const line = r.lines.find((l) => l.startsWith(`worker ${w}: replica view:`));
          expect(line, r.lines.join('\n')).toBeDefined();
          expect(Number(/(\d+) reads/.exec(line!)?.[1])).toBeGreaterThan(0);
        }
        for (const cls of CLASSES) expect(sessions(r.summary, cls), cls).toBeGreaterThan(0);
      },
    );

    it('lets one node at a time claim the faults (the advisory lock on the primary)', async () => {
      const driver = await openCluster(NAME, join(work, 'state'));
      const primary = driver.endpoints().find((e) => e.kind === 'primary')!;
      const creds = await driver.credentials();
      const release = await claimInjector(primary, creds, 5000);
      await expect(claimInjector(primary, creds, 5000)).rejects.toThrow(
        /^--worker-index 0: another node with index 0 is injecting faults into this cluster/,
      );
      await release();
      // Released with its run (or its process): the next run's index 0 claims it.
      await (
        await claimInjector(primary, creds, 5000)
      )();
    });
  },
);
