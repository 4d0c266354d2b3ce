// The guide's network-fault plans end to end on the simulator (bench run --driver sim): a
// partition is detected by the checker's hang timeout and opens down-N/rejoin-N; a reset is
// detected from the sessions' errors at once; a slow replica is never taken for dead and the
// load-aware strategies send it fewer new sessions than rr does.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { type BenchFlagValues } from '../../src/bench/options/flags.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { benchFlagValues } from '../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'plb-sim-net-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Every run's summary, by strategy. */
async function run(sub: string, over: Partial<BenchFlagValues>): Promise<Map<string, RunSummary>> {
  const out = join(root, sub);
  const lines: string[] = [];
  const code = await executeBench(
    benchFlagValues(out, 'plb-sim-net', 25432, {
      clients: 32,
      seed: 5,
      'dataset-rows': 100_000,
      'queries-per-session': 10,
      'think-time': '250ms',
      driver: 'sim',
      json: true,
      ...over,
    }),
    { log: () => undefined, warn: (l) => lines.push(l) },
  );
  expect(code, lines.join('\n')).toBe(0);
  const out2 = new Map<string, RunSummary>();
  for (const d of readdirSync(out)) {
    const f = join(out, d, 'summary.json');
    if (!existsSync(f)) continue;
    const s = JSON.parse(readFileSync(f, 'utf8')) as RunSummary;
    out2.set(s.strategy, s);
  }
  return out2;
}

/** The replica's share of the new sessions of a phase. */
function share(s: RunSummary, phase: string, replica: string): number {
  const p = s.phases.find((x) => x.name === phase);
  const all = Object.values(p?.replicas ?? {}).reduce((n, r) => n + r.sessionsOpened, 0);
  return (p?.replicas[replica]?.sessionsOpened ?? 0) / all;
}

describe('bench run --driver sim: network faults', () => {
  it('a partitioned replica is found down after the hang timeout, and back after the heal', async () => {
    const s = (await run('partition', { plan: 'plans/guide/partitioned-replica.yaml' })).get('plb')!;
    expect(s.phases.map((p) => [p.name, p.survivors])).toEqual([
      ['ref', 5],
      ['down-1', 4],
      ['rejoin-1', 5],
    ]);
    const cut = s.detection.find((d) => d.action === 'partition');
    // hangMs (5 s) of silence, then fall 2: a check interval (1 s) more, and the tick's phase.
    expect(cut?.delayMs).toBeGreaterThanOrEqual(5000);
    expect(cut?.delayMs).toBeLessThanOrEqual(7000);
    expect(s.detection.find((d) => d.action === 'heal')?.delayMs).not.toBeNull();
    expect(s.detectionCounts?.unexplained).toBe(0);
    expect(share(s, 'down-1', 'r2')).toBe(0);
  });

  it('a reset replica is found down from its sessions at once', async () => {
    const plan = join(root, 'reset.yaml');
    const text = readFileSync('plans/guide/partitioned-replica.yaml', 'utf8').replace(
      'action: partition }',
      'action: reset }',
    );
    writeFileSync(plan, text);
    const s = (await run('reset', { plan })).get('plb')!;
    const cut = s.detection.find((d) => d.action === 'reset');
    expect(cut?.delayMs).toBeLessThan(1000);
    expect(s.phases.find((p) => p.name === 'down-1')?.classes.freemium.errors).toBeGreaterThan(0);
  });

  it('a slow replica is never taken for dead; lc sends it fewer new sessions, rr its share', async () => {
    const runs = await run('slow', { plan: 'plans/guide/slow-replica.yaml', strategies: 'lc,rr' });
    for (const s of runs.values()) {
      expect(s.detection).toEqual([]);
      expect(s.detectionCounts?.unexplained ?? 0).toBe(0);
      expect(s.phases.map((p) => p.survivors)).toEqual([5, 5, 5]);
    }
    const lc = runs.get('lc')!;
    const rr = runs.get('rr')!;
    expect(share(lc, 'delay-1', 'r3')).toBeLessThan(share(lc, 'ref', 'r3') - 0.02);
    expect(share(lc, 'delay-1', 'r3')).toBeLessThan(0.2);
    expect(Math.abs(share(rr, 'delay-1', 'r3') - 0.2)).toBeLessThan(0.01);
    // Every round trip on r3 takes 80-120 ms more: with a share above 5 %, the p95 shows it.
    expect(rr.phases.find((p) => p.name === 'delay-1')?.classes.premium.p95).toBeGreaterThan(80);
  });
});
