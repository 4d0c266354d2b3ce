/**
 * `plb bench run` end to end on a real Docker cluster: a short plan (r1 killed, then started
 * again) for every strategy, and the CLI with a graceful Ctrl-C. Skips when no Docker engine
 * answers, except with CI=true, where that is a failure.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDockerDriver, dockerAvailable } from '../../src/cluster/docker/index.js';
import type { ClusterDriver } from '../../src/cluster/driver.js';
import type { ClusterSpec } from '../../src/run-format/cluster-record.js';
import { DEFAULT_HEALTH } from '../../src/cluster/health.js';
import { newClusterId, writeClusterRecord } from '../../src/cluster/state.js';
import { parsePlan } from '../../src/faults/plan.js';
import { createRunWriter } from '../../src/metrics/store/run-writer.js';
import { loadRun } from '../../src/metrics/store/load-run.js';
import { createRouter } from '../../src/router/index.js';
import type { StrategyName } from '../../src/router/types.js';
import { runBench } from '../../src/bench/run.js';
import type { SessionRouter } from '../../src/router/types.js';
import { DEFAULT_WORKLOAD } from '../../src/workload/spec.js';

const NAME = 'plbtest-bench';
/** A bound on one run of the short plan (36 s of load plus setup and a rejoin), not a timing assertion. */
const RUN_TIMEOUT_MS = 180_000;
const ci = process.env.CI === 'true';
const available = await dockerAvailable(3000);
const PLAN = `
name: it-short
duration: 36s
warmup: 4s
reference: 10s
events:
  - { at: 14s, replica: r1, action: down }
  - { at: 25s, replica: r1, action: rejoin }
`;

describe.skipIf(!available && !ci)('bench run on a Docker cluster', () => {
  const work = mkdtempSync(join(tmpdir(), 'plb-bench-test-'));
  const stateDir = join(work, 'state');
  const outDir = join(work, 'runs');
  const spec: ClusterSpec = {
    name: NAME,
    replicas: 5,
    basePort: 30432,
    cpus: 0.25,
    primaryCpus: 0.5,
    memoryMb: 256,
    maxConnections: 100,
    stateDir,
    id: newClusterId(),
  };
  let driver: ClusterDriver;

  beforeAll(async () => {
    if (!available) throw new Error('CI=true and no Docker engine answers: the Docker tests must run in CI');
    driver = createDockerDriver(spec);
    await driver.down();
    await driver.up((l) => console.log(`[up] ${l}`));
    writeClusterRecord(stateDir, {
      version: 1,
      name: NAME,
      id: spec.id!,
      driver: 'docker',
      spec,
      createdAt: new Date().toISOString(),
    });
  });

  afterAll(async () => {
    if (available) await driver?.down();
    rmSync(work, { recursive: true, force: true });
  });

  // The other strategies (static, lc, wlc) run the same path on simulated replicas
  // (test/unit/sim-bench-path.test.ts); here one priority-aware and one baseline meet real servers.
  const strategies: StrategyName[] = ['plb', 'rr'];
  it.each(strategies)(
    '%s: complete run directory, expected phases, failures seen, no admission to a down replica',
    async (strategy) => {
      const plan = parsePlan(PLAN, 'it-short.yaml');
      // The router's own view decides "down": every admission is checked against it as it happens.
      const badAdmissions: string[] = [];
      const result = await runBench(
        {
          plan: { ...plan, path: 'it-short.yaml' },
          strategy,
          workload: {
            ...DEFAULT_WORKLOAD,
            clients: 16,
            datasetRows: 20_000,
            mix: { premium: 50, freemium: 50 },
          },
          seed: 11,
          health: DEFAULT_HEALTH,
          oracle: false,
          reference: { premium: 2, mixed: 1, freemium: 2 },
          partition: { premium: 3, freemium: 2 },
          slowStartMs: 5000,
          replicaCpus: spec.cpus,
        },
        {
          driver,
          createRouter: (ids, onRoleChange): SessionRouter => {
            const router = createRouter({ strategy, replicas: ids, slowStartMs: 5000, onRoleChange });
            return {
              admit: (cls, nowMs) => {
                const a = router.admit(cls, nowMs);
                const seen = router.snapshot().find((s) => s.id === a.replica);
                if (!seen?.healthy) badAdmissions.push(`${a.replica} at ${nowMs}`);
                return a;
              },
              release: (r, c, t) => router.release(r, c, t),
              markDown: (r, t) => router.markDown(r, t),
              markUp: (r, t) => router.markUp(r, t),
              snapshot: () => router.snapshot(),
            };
          },
          createWriter: (ids) =>
            createRunWriter({
              outDir,
              strategy,
              plan: plan.name,
              seed: 11,
              clients: 16,
              mix: { premium: 50, freemium: 50 },
              replicas: ids,
              refWindowS: plan.referenceWindow,
              warmupS: plan.warmup,
            }),
          log: (l) => console.log(`[${strategy}] ${l}`),
        },
      );
      expect(result.interrupted).toBe(false);
      expect(badAdmissions).toEqual([]);

      for (const f of ['config.json', 'events.jsonl', 'timeline.csv', 'summary.json']) {
        expect(existsSync(join(result.dir, f)), f).toBe(true);
      }
      const run = loadRun(result.dir);
      expect(run.summary.complete).toBe(true);
      expect(run.summary.strategy).toBe(strategy);
      expect(run.summary.phases.map((p) => [p.name, p.survivors])).toEqual([
        ['ref', 5],
        ['down-1', 4],
        ['rejoin-1', 5],
      ]);
      const [ref, down] = run.summary.phases;
      expect(ref?.classes.premium.queries).toBeGreaterThan(0);
      expect(ref?.classes.freemium.queries).toBeGreaterThan(0);
      // Sessions pinned to r1 when it was killed end as failed.
      expect(
        (down?.classes.premium.sessionsFailed ?? 0) + (down?.classes.freemium.sessionsFailed ?? 0),
      ).toBeGreaterThan(0);
      // The killed replica used no CPU while it was down.
      const r1cpu = down?.replicas.r1?.cpuMean ?? null;
      expect(r1cpu === null || r1cpu < 0.02).toBe(true);
      expect(down?.replicas.r1?.sessionsOpened).toBe(0);
      // The router learned of the fault from health checks or connection errors, not the injector.
      const d = run.summary.detection.find((x) => x.action === 'down');
      expect(d?.detectedMs).not.toBeNull();
      expect(
        run.events.some(
          (e) => e.type === 'detect' && e.replica === 'r1' && e.state === 'down' && e.via !== 'oracle',
        ),
      ).toBe(true);
      expect(existsSync(join(result.dir, 'histograms'))).toBe(true);
    },
    RUN_TIMEOUT_MS,
  );

  it(
    'the CLI stops gracefully on Ctrl-C: exit 130, partial summary kept, replica restarted',
    async () => {
      const planFile = join(work, 'cli.yaml');
      writeFileSync(planFile, PLAN.replace('duration: 36s', 'duration: 60s'));
      const child = spawn(
        process.execPath,
        [
          'bin/run.js',
          'bench',
          'run',
          '--plan',
          planFile,
          '--strategy',
          'plb',
          '--name',
          NAME,
          '--clients',
          '8',
          '--dataset-rows',
          '20000',
          '--out',
          outDir,
          '--seed',
          '5',
          '--progress',
          '0',
        ],
        { env: { ...process.env, PLB_STATE_DIR: stateDir }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      let err = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => {
        err += b.toString();
        // Interrupt once r1 has been killed, so the run has something to restore.
        if (err.includes('down r1') && !child.killed) setTimeout(() => child.kill('SIGINT'), 2000);
      });
      const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
      expect(code, err).toBe(130);
      expect(err).toMatch(/restored: start r1/);
      const dir = /run directory: (\S+) \(incomplete\)/.exec(err)?.[1];
      expect(dir, err).toBeDefined();
      const summary = JSON.parse(readFileSync(join(dir ?? '', 'summary.json'), 'utf8')) as {
        complete: boolean;
        phases: { name: string }[];
      };
      expect(summary.complete).toBe(false);
      expect(summary.phases.map((p) => p.name)).toEqual(['ref', 'down-1']);
      expect(out).toMatch(/down-1/);
      const status = await driver.status();
      expect(status.find((s) => s.id === 'r1')?.up).toBe(true);
    },
    RUN_TIMEOUT_MS,
  );
});
