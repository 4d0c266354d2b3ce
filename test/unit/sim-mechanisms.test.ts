// The options that test Fig. 6's candidate mechanisms, end to end on the simulator: the placebo
// plan (marks, no fault), clients that leave after a failure, and the pooled host CPU.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { type BenchFlagValues } from '../../src/bench/options/flags.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { benchFlagValues } from '../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'plb-sim-mech-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function run(
  sub: string,
  over: Partial<BenchFlagValues>,
): Promise<{ summary: RunSummary; config: Record<string, unknown>; events: string }> {
  const out = join(root, sub);
  const lines: string[] = [];
  const code = await executeBench(
    benchFlagValues(out, 'plb-sim-mech', 25432, {
      clients: 40,
      seed: 3,
      'dataset-rows': 100_000,
      'queries-per-session': 10,
      'think-time': '200ms',
      driver: 'sim',
      json: true,
      plan: 'plans/paper/quick/rq3.yaml',
      ...over,
    }),
    { log: () => undefined, warn: (l) => lines.push(l) },
  );
  expect(code, lines.join('\n')).toBe(0);
  const dir = readdirSync(out)
    .map((d) => join(out, d))
    .find((d) => existsSync(join(d, 'summary.json')))!;
  const read = (f: string): string => readFileSync(join(dir, f), 'utf8');
  return {
    summary: JSON.parse(read('summary.json')) as RunSummary,
    config: JSON.parse(read('config.json')) as Record<string, unknown>,
    events: read('events.jsonl'),
  };
}

const opened = (s: RunSummary, phase: string): number => {
  const p = s.phases.find((x) => x.name === phase)!;
  return p.classes.premium.sessionsOpened + p.classes.freemium.sessionsOpened;
};

describe('the placebo plan', () => {
  it("cuts a run without faults into RQ3's phases: ref, then mark-1..mark-4, all at K+=5", async () => {
    const { summary } = await run('placebo', { plan: 'plans/paper/quick/placebo.yaml' });
    expect(summary.phases.map((p) => [p.name, p.survivors])).toEqual([
      ['ref', 5],
      ['mark-1', 5],
      ['mark-2', 5],
      ['mark-3', 5],
      ['mark-4', 5],
    ]);
    expect(summary.phases.map((p) => [p.startS, p.endS])).toEqual([
      [20, 30],
      [30, 45],
      [45, 60],
      [60, 75],
      [75, 90],
    ]);
    // Nothing happened to any replica: no detection, no failed session.
    expect(summary.detectionCounts).toMatchObject({ unexplained: 0 });
    expect(summary.detection).toEqual([]);
    for (const p of summary.phases) {
      expect(p.classes.premium.sessionsFailed + p.classes.freemium.sessionsFailed, p.name).toBe(0);
    }
    expect(summary.faultInterval).toBeUndefined();
  });
});

describe('--on-failure', () => {
  it('leave: the clients whose sessions a kill failed do not come back', async () => {
    const retry = await run('retry', {});
    const leave = await run('leave', { 'on-failure': 'leave' });
    expect(retry.config.workload).not.toHaveProperty('onFailure');
    expect(leave.config.workload).toMatchObject({ onFailure: 'leave' });
    // Before the first fault the two runs are the same run.
    expect(opened(leave.summary, 'ref')).toBe(opened(retry.summary, 'ref'));
    // After the two kills, fewer clients are left to open sessions; with retries all are.
    expect(opened(leave.summary, 'rejoin-2')).toBeLessThan(opened(retry.summary, 'rejoin-2'));
  });
});

describe('--sim-cpu pooled', () => {
  it("is recorded, and a down replica's quota goes to the survivors", async () => {
    const quota = await run('quota', {});
    const pooled = await run('pooled', { 'sim-cpu': 'pooled' });
    expect(quota.config).not.toHaveProperty('simCpu');
    expect(pooled.config).toMatchObject({ simCpu: 'pooled' });
    const ref = (s: RunSummary) => s.phases.find((p) => p.name === 'ref')!;
    const down2 = (s: RunSummary) => s.phases.find((p) => p.name === 'down-2')!;
    // Identical until the first fault; then the three survivors may use 5/3 of their quotas.
    expect(ref(pooled.summary).classes).toEqual(ref(quota.summary).classes);
    expect(down2(pooled.summary).classes.freemium.p95).toBeLessThan(
      down2(quota.summary).classes.freemium.p95 ?? 0,
    );
  });
});
