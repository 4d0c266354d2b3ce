// `plb bench run --driver sim`: the demo cascade end to end through executeBench in virtual time,
// a complete run directory, detections of every injected fault, and a seed that repeats exactly.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { type BenchFlagValues } from '../../src/bench/options/flags.js';
import { bringUp, chooseDriverKind, clusterSpec, parseDriverChoice } from '../../src/cluster/select.js';
import { loadPlan } from '../../src/faults/plan.js';
import { benchFlagValues } from '../helpers/fixtures.js';
import type { RunSummary } from '../../src/run-format/summary.js';

const root = mkdtempSync(join(tmpdir(), 'plb-sim-bench-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The demo cascade at its defaults (32 clients, 100k rows) on the simulator. */
function flags(out: string, over: Partial<BenchFlagValues> = {}): BenchFlagValues {
  return benchFlagValues(out, 'plb-sim-test', 25432, {
    plan: 'plans/demo-cascade.yaml',
    clients: 32,
    seed: 11,
    'dataset-rows': 100_000,
    'queries-per-session': 10,
    'think-time': '250ms',
    driver: 'sim',
    json: true,
    ...over,
  });
}

async function bench(
  out: string,
  over: Partial<BenchFlagValues> = {},
): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const code = await executeBench(flags(out, over), { log: () => undefined, warn: (l) => lines.push(l) });
  return { code, lines };
}

function runDirs(out: string): string[] {
  return readdirSync(out)
    .filter((d) => existsSync(join(out, d, 'summary.json')))
    .map((d) => join(out, d));
}

describe('bench run --driver sim', () => {
  it('runs the demo cascade end to end: phases, detections, a complete run directory', async () => {
    const out = join(root, 'a');
    const { code, lines } = await bench(out);
    expect(code, lines.join('\n')).toBe(0);
    const [dir] = runDirs(out);
    expect(dir).toBeDefined();
    for (const f of ['config.json', 'events.jsonl', 'timeline.csv', 'summary.json', 'report.html'])
      expect(existsSync(join(dir!, f)), f).toBe(true);
    expect(existsSync(join(dir!, 'RUNNING'))).toBe(false);
    const summary = JSON.parse(readFileSync(join(dir!, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.complete).toBe(true);
    expect(summary.phases.map((p) => p.name)).toEqual(['ref', 'down-1', 'down-2', 'rejoin-1', 'rejoin-2']);
    // Every injected fault detected by health checks or sessions, none falsely.
    const detected = summary.detection.map((d) => `${d.action} ${d.replica}`);
    expect(detected).toEqual(['down r1', 'down r2', 'rejoin r1', 'rejoin r2']);
    for (const d of summary.detection) expect(d.detectedMs).not.toBeNull();
    expect(summary.detectionCounts).toMatchObject({ down: 2, up: 2, unexplained: 0 });
    // Load was served in every phase, and the replica CPU fractions come from the model.
    for (const p of summary.phases) {
      for (const c of Object.values(p.classes)) expect(c.goodput).toBeGreaterThan(0);
      expect(p.cpuMean).toBeGreaterThan(0.2);
      expect(p.cpuMean).toBeLessThan(1.01);
    }
    const config = JSON.parse(readFileSync(join(dir!, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(config.driver).toBe('sim');
    expect(config.simCalibration).toMatchObject({ contents: { version: 1 } });
    const timeline = readFileSync(join(dir!, 'timeline.csv'), 'utf8').split('\n');
    expect(timeline.length).toBeGreaterThan(90);
  });

  it('gives a byte-identical summary.json for the same seed', async () => {
    const { code: c1 } = await bench(join(root, 'b1'), { strategies: 'rr' });
    const { code: c2 } = await bench(join(root, 'b2'), { strategies: 'rr' });
    expect([c1, c2]).toEqual([0, 0]);
    const read = (out: string): string => readFileSync(join(runDirs(out)[0]!, 'summary.json'), 'utf8');
    expect(read(join(root, 'b2'))).toBe(read(join(root, 'b1')));
    const events = (out: string): string => readFileSync(join(runDirs(out)[0]!, 'events.jsonl'), 'utf8');
    expect(events(join(root, 'b2'))).toBe(events(join(root, 'b1')));
  });

  it('computes --think-time auto from the calibration', async () => {
    const out = join(root, 'c');
    const plan = join(root, 'short.yaml');
    writeFileSync(plan, 'name: short\nduration: 20s\nwarmup: 5s\nreference: 10s\nreplicas: 3\nevents: []\n');
    const { code, lines } = await bench(out, { plan, 'think-time': 'auto' });
    expect(code, lines.join('\n')).toBe(0);
    expect(lines.some((l) => l.startsWith('think time auto (simulated):'))).toBe(true);
    const config = JSON.parse(readFileSync(join(runDirs(out)[0]!, 'config.json'), 'utf8')) as {
      calibration: { thinkTimeMs: number };
      workload: { classes: { premium: { thinkTimeMs: number } } };
    };
    expect(config.workload.classes.premium.thinkTimeMs).toBe(config.calibration.thinkTimeMs);
  });

  it('takes a 1000-replica plan for sim only, and refuses sim where a cluster is brought up', async () => {
    const plan = join(root, 'k1000.yaml');
    writeFileSync(plan, 'name: big\nduration: 40s\nreplicas: 1000\nevents: []\n');
    expect(loadPlan(plan, { maxReplicas: 1000 }).replicas).toBe(1000);
    const { code, lines } = await bench(join(root, 'd'), { plan, driver: 'local' });
    expect(code).toBe(1);
    expect(lines).toEqual([
      `Error: ${plan}:3: replicas: must be an integer from 1 to 64 (got 1000) (hint: up to 1000 with --driver sim)`,
    ]);
    expect(parseDriverChoice('sim')).toBe('sim');
    expect(() => chooseDriverKind('sim', true)).toThrow(/only inside its bench/);
    await expect(
      bringUp({ driver: 'sim', spec: clusterSpec({ name: 'simup', stateDir: join(root, 'state') }) }),
    ).rejects.toThrow(/only inside its bench/);
    expect(existsSync(join(root, 'state'))).toBe(false);
  });
});
