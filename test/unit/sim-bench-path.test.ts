// Issue 10, item 6: the bench path (runBench, DataSource, HealthChecker, injector) on simulated
// replicas, without Docker: detection delays bounded by the health options and the restart time,
// no session admitted to a replica the router holds down, and Ctrl-C semantics (stop, restore,
// keep what was measured, mark the run incomplete).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runBench } from '../../src/bench/run.js';
import type { BenchConfig } from '../../src/run-format/config.js';
import type { SessionRouter } from '../../src/router/types.js';
import { DEFAULT_HEALTH } from '../../src/cluster/health.js';
import { createSimCluster } from '../../src/cluster/sim/index.js';
import { loadPlan } from '../../src/faults/plan.js';
import { createRunWriter } from '../../src/metrics/store/run-writer.js';
import { createRouter, type StrategyName } from '../../src/router/index.js';
import { DEFAULT_WORKLOAD } from '../../src/workload/spec.js';

const root = mkdtempSync(join(tmpdir(), 'plb-sim-path-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const plan = loadPlan('plans/demo-cascade.yaml');

/** One simulated demo-cascade run through runBench, with a router that reports what it admits. */
async function simulate(opts: { abortAtMs?: number; strategy?: StrategyName } = {}) {
  const sim = createSimCluster({ name: 'path', replicas: 5, sessions: 32, over: {}, stateDir: root });
  sim.driver.beginRun(5);
  const down = new Set<string>();
  const admittedWhileDown: string[] = [];
  const admitted = new Map<string, number>();
  const config: BenchConfig = {
    plan: { ...plan, path: 'plans/demo-cascade.yaml' },
    strategy: opts.strategy ?? 'plb',
    workload: { ...DEFAULT_WORKLOAD, clients: 32 },
    seed: 5,
    health: DEFAULT_HEALTH,
    oracle: false,
    reference: { premium: 2, mixed: 1, freemium: 2 },
    partition: { premium: 3, freemium: 2 },
    slowStartMs: 10_000,
    replicaCpus: sim.driver.spec.cpus,
  };
  const ac = new AbortController();
  const out = mkdtempSync(join(root, 'run-'));
  const result = await sim.clock.run(async () => {
    if (opts.abortAtMs !== undefined) sim.clock.timer(opts.abortAtMs, () => ac.abort());
    return runBench(config, {
      driver: sim.driver,
      clock: sim.clock,
      signal: ac.signal,
      log: () => undefined,
      createWriter: (ids) =>
        createRunWriter({
          outDir: out,
          strategy: config.strategy,
          plan: plan.name,
          seed: config.seed,
          clients: 32,
          mix: config.workload.mix,
          replicas: ids,
          refWindowS: plan.referenceWindow,
          warmupS: plan.warmup,
          clock: () => new Date(sim.clock.now()),
        }),
      createRouter: (ids, onRoleChange) => {
        const inner = createRouter({
          strategy: config.strategy as StrategyName,
          replicas: ids,
          reference: config.reference,
          partition: config.partition,
          slowStartMs: config.slowStartMs,
          onRoleChange,
        });
        const watched: SessionRouter = {
          admit: (cls, now) => {
            const a = inner.admit(cls, now);
            if (down.has(a.replica)) admittedWhileDown.push(`${a.replica}@${now}`);
            admitted.set(a.replica, (admitted.get(a.replica) ?? 0) + 1);
            return a;
          },
          release: (r, cls, now) => inner.release(r, cls, now),
          markDown: (r, now) => {
            down.add(r);
            inner.markDown(r, now);
          },
          markUp: (r, now) => {
            down.delete(r);
            inner.markUp(r, now);
          },
          snapshot: () => inner.snapshot(),
        };
        return watched;
      },
    });
  });
  const events = readFileSync(join(result.dir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return {
    result,
    events,
    admittedWhileDown,
    admitted,
    driver: sim.driver,
    restartMs: sim.calibration.contents.restartMs,
  };
}

describe('the bench path on simulated replicas', () => {
  it('detects every kill within fall x interval and every rejoin after the restart, within rise x interval more', async () => {
    const { result } = await simulate();
    const d = result.summary.detection;
    expect(d.map((x) => `${x.action} ${x.replica}`)).toEqual([
      'down r1',
      'down r2',
      'rejoin r1',
      'rejoin r2',
    ]);
    const { fall, rise, intervalMs } = DEFAULT_HEALTH;
    for (const x of d) {
      expect(x.delayMs, `${x.action} ${x.replica}`).not.toBeNull();
      if (x.action === 'down') expect(x.delayMs as number).toBeLessThanOrEqual(fall * intervalMs);
    }
    for (const x of d.filter((y) => y.action === 'rejoin')) {
      expect(x.delayMs as number).toBeGreaterThanOrEqual(0);
      // start() resolves once the replica accepts connections; then rise answered checks.
      expect(x.delayMs as number).toBeLessThanOrEqual((rise + 1) * intervalMs);
    }
    expect(result.summary.detectionCounts).toMatchObject({ down: 2, up: 2, unexplained: 0 });
  });

  it('admits no session to a replica the router holds down, and uses every replica it holds up', async () => {
    for (const strategy of ['plb', 'rr', 'static', 'lc', 'wlc'] as const) {
      const { admittedWhileDown, admitted } = await simulate({ strategy });
      expect(admittedWhileDown, strategy).toEqual([]);
      expect([...admitted.keys()].sort(), strategy).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
      // static routes each class only inside its partition; every replica still serves one class.
    }
  });

  it('an interrupt (Ctrl-C) mid-run: stops, restores the killed replica, keeps the phases measured so far', async () => {
    // Abort 5 s into down-2: r1 and r2 are down.
    const { result, events, driver } = await simulate({ abortAtMs: 50_000 });
    expect(result.interrupted).toBe(true);
    expect(result.summary.complete).toBe(false);
    expect(result.summary.phases.map((p) => p.name)).toEqual(['ref', 'down-1', 'down-2']);
    expect(result.summary.phases[0]?.classes.premium.goodput).toBeGreaterThan(0);
    expect(events.filter((e) => e.type === 'run').map((e) => e.state)).toEqual(['started', 'interrupted']);
    expect(events.some((e) => e.type === 'fault' && e.action === 'rejoin')).toBe(false);
    // The run's ending started the replicas it had killed.
    const status = await driver.status();
    expect(status.filter((s) => s.kind === 'replica').every((s) => s.up)).toBe(true);
  });
});
