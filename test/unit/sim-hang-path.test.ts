// The hang path through the bench on simulated replicas (any driver records it alike): a paused
// replica is marked down by the checker; off, the sessions on it wait for their query timeout;
// with --shutdown-sessions they end when it is marked down. The flag is recorded in config.json.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runBench } from '../../src/bench/run.js';
import { resolveBenchFlags } from '../../src/bench/options/resolve.js';
import { DEFAULT_HEALTH } from '../../src/cluster/health.js';
import { createSimCluster } from '../../src/cluster/sim/index.js';
import { loadPlan } from '../../src/faults/plan.js';
import { createRunWriter } from '../../src/metrics/store/run-writer.js';
import type { BenchConfig } from '../../src/run-format/config.js';
import { DEFAULT_WORKLOAD } from '../../src/workload/spec.js';
import { benchFlagValues } from '../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'plb-sim-hang-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const planFile = join(root, 'pause.yaml');
writeFileSync(
  planFile,
  'name: hang\nduration: 40s\nwarmup: 2s\nreference: 8s\nreplicas: 4\nevents:\n' +
    '  - { at: 10s, replica: r2, action: pause }\n  - { at: 30s, replica: r2, action: unpause }\n',
);
const plan = loadPlan(planFile);

async function simulate(shutdownSessions: boolean) {
  const sim = createSimCluster({ name: 'hang', replicas: 4, sessions: 24, over: {}, stateDir: root });
  sim.driver.beginRun(4);
  const config: BenchConfig = {
    plan: { ...plan, path: planFile },
    strategy: 'rr',
    workload: { ...DEFAULT_WORKLOAD, clients: 24 },
    seed: 11,
    health: DEFAULT_HEALTH,
    oracle: false,
    shutdownSessions,
    reference: { premium: 2, mixed: 1, freemium: 2 },
    partition: { premium: 3, freemium: 2 },
    slowStartMs: 10_000,
    replicaCpus: sim.driver.spec.cpus,
  };
  const out = mkdtempSync(join(root, 'run-'));
  return sim.clock.run(() =>
    runBench(config, {
      driver: sim.driver,
      clock: sim.clock,
      log: () => undefined,
      createWriter: (ids) =>
        createRunWriter({
          outDir: out,
          strategy: 'rr',
          plan: plan.name,
          seed: 11,
          clients: 24,
          mix: config.workload.mix,
          replicas: ids,
          refWindowS: plan.referenceWindow,
          warmupS: plan.warmup,
          clock: () => new Date(sim.clock.now()),
        }),
    }),
  );
}

describe('the hang path of a bench run', () => {
  it('off: the sessions on the paused replica wait for their query timeout', async () => {
    const { summary } = await simulate(false);
    const f = summary.hangPath?.faults[0];
    expect(f?.replica).toBe('r2');
    expect(f?.action).toBe('pause');
    expect(f?.downVia).toBe('health');
    expect(f?.sessions).toBeGreaterThan(0);
    expect(f?.shutdown).toBe(0);
    expect(f?.queryTimeouts).toBeGreaterThan(0);
    expect(f?.waitMaxMs).toBeGreaterThan(f?.downMs ?? Infinity);
    expect(summary.hangPath?.falseDowns).toBe(0);
    expect(summary.sessionShare?.map((s) => s.phase)).toEqual(['ref', 'pause-1', 'unpause-1']);
  });

  it('on: they end when it is marked down, and no query waits for its timeout', async () => {
    const { summary, dir } = await simulate(true);
    const f = summary.hangPath?.faults[0];
    expect(f?.shutdown).toBeGreaterThan(0);
    expect(f?.shutdown).toBe(f?.sessions);
    expect(f?.queryTimeouts).toBe(0);
    // A session thinking when it was shut hears of it at its next query: never a timeout later.
    expect(f?.waitMaxMs).toBeLessThan(DEFAULT_WORKLOAD.queryTimeoutMs);
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(config['shutdownSessions']).toBe(true);
  });

  it('the flag: off by default, on when given', () => {
    const flags = benchFlagValues(root, 'hang', 20432, { plan: planFile });
    expect(resolveBenchFlags(flags).config.shutdownSessions).toBe(false);
    expect(resolveBenchFlags({ ...flags, 'shutdown-sessions': true }).config.shutdownSessions).toBe(true);
  });
});
