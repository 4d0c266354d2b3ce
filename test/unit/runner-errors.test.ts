// Issue 11, item 4, in the runner: an exception during a run, and a fault that did not take, make
// the run incomplete with the reason recorded, and the run's ending (restore, summary) still runs.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { withFakeFaults } from '../helpers/fake-faults.js';
import type { ClusterDriver, ServerStatus } from '../../src/cluster/driver.js';
import { DEFAULT_HEALTH } from '../../src/cluster/health.js';
import { createRunWriter } from '../../src/metrics/store/run-writer.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { runBench } from '../../src/bench/run.js';
import type { SessionRouter } from '../../src/router/types.js';
import { DEFAULT_WORKLOAD } from '../../src/workload/spec.js';

// No PostgreSQL here: the dataset is "already loaded"; sessions and health checks fail to connect.

const root = mkdtempSync(join(tmpdir(), 'plb-runner-errors-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A cluster whose r1 shrugs off every kill (the status always says it is up). */
function stubbornDriver(calls: string[]): ClusterDriver {
  const status = (id: string, kind: 'primary' | 'replica', port: number): ServerStatus => ({
    id,
    kind,
    port,
    up: true,
    paused: false,
    replication: null,
    lagBytes: null,
    replayLagSeconds: null,
    cpus: 0.25,
  });
  const act = (name: string) => async (id: string) => {
    calls.push(`${name} ${id}`);
  };
  const d: Omit<ClusterDriver, 'faults'> = {
    kind: 'local',
    cpusEnforced: true,
    spec: {
      name: 't',
      replicas: 1,
      basePort: 1,
      cpus: 0.25,
      primaryCpus: 0.5,
      memoryMb: 64,
      maxConnections: 100,
      stateDir: root,
    },
    up: async () => undefined,
    down: async () => undefined,
    status: async () => [status('primary', 'primary', 1), status('r1', 'replica', 2)],
    endpoints: () => [
      { id: 'primary', kind: 'primary', host: '127.0.0.1', port: 1 },
      { id: 'r1', kind: 'replica', host: '127.0.0.1', port: 2 },
    ],
    credentials: async () => ({ user: 'u', password: 'p', database: 'd' }),
    kill: act('kill'),
    start: act('start'),
    stop: act('stop'),
    pause: act('pause'),
    unpause: act('unpause'),
    setCpus: async () => undefined,
    setReplayPaused: async () => undefined,
    cpuSeconds: async () => ({}),
    waitReady: async () => undefined,
    connector: () => ({
      open: () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    }),
    prepareDataset: async () => ({ loaded: false, ms: 0 }),
  };
  return withFakeFaults(d, calls);
}

function router(failSnapshotAt: number): SessionRouter {
  let n = 0;
  return {
    admit: () => ({ replica: 'r1' }),
    release: () => undefined,
    markDown: () => undefined,
    markUp: () => undefined,
    snapshot: () => {
      n += 1;
      if (n === failSnapshotAt) throw new Error('router view exploded');
      return [{ id: 'r1', healthy: true, role: 'shared', sessions: { premium: 0, freemium: 0 } }];
    },
  };
}

async function bench(id: string, failSnapshotAt: number, calls: string[]): Promise<unknown> {
  return runBench(
    {
      plan: {
        name: 'p',
        description: '',
        duration: 2.5,
        warmup: 0,
        referenceWindow: 0.5,
        replicas: 1,
        events: [{ at: 1, replica: 'r1', action: 'down', line: 0 }],
        path: 'p.yaml',
      },
      strategy: 'rr',
      workload: { ...DEFAULT_WORKLOAD, clients: 1, connectTimeoutMs: 200, queryTimeoutMs: 200 },
      seed: 1,
      health: { ...DEFAULT_HEALTH, intervalMs: 200, timeoutMs: 200 },
      oracle: false,
      reference: { premium: 0, mixed: 1, freemium: 0 },
      partition: { premium: 1, freemium: 1 },
      slowStartMs: 0,
      replicaCpus: 0.25,
    },
    {
      driver: stubbornDriver(calls),
      createRouter: () => router(failSnapshotAt),
      createWriter: (ids) =>
        createRunWriter({
          outDir: root,
          runId: id,
          strategy: 'rr',
          plan: 'p',
          seed: 1,
          clients: 1,
          mix: { premium: 1, freemium: 1 },
          replicas: ids,
          refWindowS: 0.5,
          warmupS: 0,
        }),
      log: () => undefined,
    },
  );
}

const summaryOf = (id: string): RunSummary =>
  JSON.parse(readFileSync(join(root, id, 'summary.json'), 'utf8')) as RunSummary;

describe('runBench, honestly', () => {
  it('a kill that did not take: recorded, its phase invalid, the run incomplete', async () => {
    const calls: string[] = [];
    await bench('stubborn', 0, calls);
    const s = summaryOf('stubborn');
    expect(calls).toContain('kill r1');
    expect(s.complete).toBe(false);
    expect(s.errors?.[0]).toMatch(/^down r1 at 1(\.\d+)? s failed: r1 is still up after down$/);
    expect(s.phases.find((p) => p.name === 'down-1')?.invalid).toMatch(/still up/);
    expect(s.phases.find((p) => p.name === 'ref')?.invalid).toBeUndefined();
  }, 20_000);

  it('an exception mid-run: rethrown, yet the run is finished as incomplete with the error and restored', async () => {
    const calls: string[] = [];
    await expect(bench('exploded', 3, calls)).rejects.toThrow('router view exploded');
    const s = summaryOf('exploded');
    expect(s.complete).toBe(false);
    expect(s.errors).toContain('run: router view exploded');
    const events = readFileSync(join(root, 'exploded', 'events.jsonl'), 'utf8');
    expect(events).toMatch(/"what":"error","message":"run: router view exploded"/);
    expect(events).toMatch(/"type":"run","tMs":[\d.]+,"state":"failed"/);
  }, 20_000);
});
