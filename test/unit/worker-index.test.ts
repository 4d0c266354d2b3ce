/**
 * Issue 49, several nodes and the replica view under workers: --worker-index and --start-at are
 * checked before anything starts (one line naming the flag); the replica view runs with --workers
 * and sizing counts one poller per process; the per-worker table shows what summary.json has.
 */
import { describe, expect, it } from 'vitest';
import { resolveBenchFlags } from '../../src/bench/options/resolve.js';
import { fleetConnections } from '../../src/bench/router-fleet.js';
import { nodeShare } from '../../src/bench/workers/node-log.js';
import type { RoutersConfig } from '../../src/run-format/config.js';
import type { RunGroup } from '../../src/run-format/report.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { aggregateWorkers, workersTable } from '../../src/report/tables/workers-table.js';
import { benchFlagValues, scratchFolder } from '../helpers/fixtures.js';

const { root } = scratchFolder('plb-worker-index-');
const soon = (): string => new Date(Date.now() + 60_000).toISOString();
const resolve = (over: Parameters<typeof benchFlagValues>[3]) =>
  resolveBenchFlags(benchFlagValues(root, 'nodes', 20452, over));
const fails = (over: Parameters<typeof benchFlagValues>[3]) => () => resolve(over);

describe('--worker-index and --start-at: bad input, one line naming the flag', () => {
  it('refuses an index without --workers, out of range, or without --start-at', () => {
    expect(fails({ routers: '2', 'worker-index': '0', 'start-at': soon() })).toThrow(
      /^--worker-index: needs --workers W/,
    );
    expect(fails({ routers: '2', workers: '2', 'worker-index': '2', 'start-at': soon() })).toThrow(
      /^--worker-index: 2 is out of range for --workers 2 \(0\.\.1\)/,
    );
    for (const i of ['-1', '1.5', 'x'])
      expect(fails({ routers: '2', workers: '2', 'worker-index': i, 'start-at': soon() })).toThrow(
        /^--worker-index: must be an integer/,
      );
    expect(fails({ routers: '2', workers: '2', 'worker-index': '1' })).toThrow(
      /^--worker-index: needs --start-at/,
    );
  });

  it('refuses a start time that passed, one that is not a time, and --start-at alone', () => {
    const node = { routers: '2', workers: '2', 'worker-index': '1' };
    expect(fails({ ...node, 'start-at': '2020-01-01T00:00:00Z' })).toThrow(
      /^--start-at: 2020-01-01T00:00:00.000Z has passed/,
    );
    expect(fails({ ...node, 'start-at': 'noon' })).toThrow(
      /^--start-at: must be epoch milliseconds or an ISO time/,
    );
    expect(fails({ routers: '2', 'start-at': soon() })).toThrow(/^--start-at: only with --worker-index/);
  });

  it('refuses a series on a node (one run per node)', () => {
    const node = { routers: '2', workers: '2', 'worker-index': '0', 'start-at': soon() };
    expect(fails({ ...node, strategies: 'plb,rr' })).toThrow(/^--worker-index: one run per node \(got 2/);
  });

  it('records the index and the shared start (epoch ms given: as an ISO time)', () => {
    const at = Date.now() + 120_000;
    const bench = resolve({ routers: '4', workers: '2', 'worker-index': '1', 'start-at': String(at) });
    expect(bench.config.routers).toMatchObject({
      count: 4,
      workers: 2,
      workerIndex: 1,
      startAt: new Date(at).toISOString(),
    });
    expect(nodeShare(bench.config.routers)).toEqual({ index: 1, count: 2, startAtMs: at });
  });
});

describe('the replica view under --workers', () => {
  it('is taken (the global view is not), and sizing counts a poller per process', () => {
    expect(resolve({ routers: '4', workers: '2', 'router-view': 'replica' }).config.routers).toMatchObject({
      view: 'replica',
      workers: 2,
    });
    const r = (workers?: number): RoutersConfig => ({
      count: 4,
      view: 'replica',
      assignment: 'round-robin',
      viewIntervalMs: 1000,
      ...(workers !== undefined ? { workers } : {}),
    });
    // Three checkers past the reserve's one, and one poller per process.
    expect(fleetConnections(r())).toBe(4);
    expect(fleetConnections(r(2))).toBe(5);
    expect(fleetConnections(r(4))).toBe(7);
  });
});

describe('the per-worker table', () => {
  it("shows each worker's pid, instances, queries, errors, sessions, p95, q/s and ending", () => {
    const worker = (w: number, exit: string): NonNullable<RunSummary['workers']>[number] => ({
      worker: w,
      pid: 100 + w,
      instances: [w, w + 2],
      queries: { premium: 50, freemium: 150 },
      errors: { premium: 0, freemium: 2 },
      sessions: { premium: 5, freemium: 15 },
      p95Ms: { premium: 3.25, freemium: null },
      seconds: 20,
      perSecond: { premium: [], freemium: [] },
      exit,
    });
    const summary = {
      runId: 'run-a',
      workers: [worker(0, 'done'), worker(1, 'signal SIGKILL')],
    } as RunSummary;
    const workers = aggregateWorkers([summary]);
    const table = workersTable({ runIds: ['run-a'], workers } as RunGroup, () => 'g');
    expect(table?.head).toEqual([
      'Worker',
      'PID',
      'Instances',
      'Queries',
      'Errors',
      'Sessions',
      'p95 ms',
      'q/s',
      'Ended',
    ]);
    expect(table?.rows).toEqual([
      ['0', '100', '0, 2', '50 / 150', '0 / 2', '5 / 15', '3.3 / -', '10.0', 'done'],
      ['1', '101', '1, 3', '50 / 150', '0 / 2', '5 / 15', '3.3 / -', '10.0', 'signal SIGKILL'],
    ]);
    expect(aggregateWorkers([{ runId: 'x' } as RunSummary])).toBeUndefined();
  });
});
