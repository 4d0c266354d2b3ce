// The balancing guide's options end to end on the simulator: zones (cross-zone share per phase),
// static weights and per-replica CPU quotas reaching the router, the driver and config.json.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { type BenchFlagValues } from '../../src/bench/options/flags.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { benchFlagValues } from '../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'plb-sim-guide-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function run(
  sub: string,
  over: Partial<BenchFlagValues>,
): Promise<{ summary: RunSummary; config: Record<string, unknown> }> {
  const out = join(root, sub);
  const lines: string[] = [];
  const code = await executeBench(
    benchFlagValues(out, 'plb-sim-guide', 25432, {
      clients: 32,
      seed: 5,
      'dataset-rows': 100_000,
      'queries-per-session': 10,
      'think-time': '250ms',
      driver: 'sim',
      json: true,
      strategies: 'wlc',
      ...over,
    }),
    { log: () => undefined, warn: (l) => lines.push(l) },
  );
  expect(code, lines.join('\n')).toBe(0);
  const dir = readdirSync(out)
    .map((d) => join(out, d))
    .find((d) => existsSync(join(d, 'summary.json')));
  return {
    summary: JSON.parse(readFileSync(join(dir!, 'summary.json'), 'utf8')) as RunSummary,
    config: JSON.parse(readFileSync(join(dir!, 'config.json'), 'utf8')) as Record<string, unknown>,
  };
}

describe('bench run --driver sim: the guide', () => {
  it('keeps sessions in their zone while it has room, and spills after a zone-down', async () => {
    const { summary, config } = await run('zones', {
      plan: 'plans/guide/zone-loss.yaml',
      'client-zones': 'a:40,b:60',
    });
    const share = Object.fromEntries(summary.phases.map((p) => [p.name, p.crossZone?.share]));
    expect(share.ref).toBe(0);
    // Zone a (r1, r2) is down whole: its clients' sessions all go to zone b.
    const down = summary.phases.find((p) => p.survivors === 3);
    expect(down?.crossZone?.share).toBeGreaterThan(0.2);
    expect(config.balance).toMatchObject({
      zones: { r1: 'a', r3: 'b' },
      clientZones: { a: 0.4, b: 0.6 },
      zoneSpill: 2,
    });
  });

  it('without zones records no cross-zone figures; weights and quotas reach router and driver', async () => {
    const { summary, config } = await run('weights', {
      plan: 'plans/guide/weights-unrealised.yaml',
      weights: 'r1=2',
    });
    for (const p of summary.phases) expect(p.crossZone).toBeUndefined();
    const ref = summary.phases[0]!;
    expect(ref.replicas.r1?.weight).toBe(2);
    expect(ref.replicas.r5?.weight).toBe(0.33);
    // r5 has a third of the CPU and a third of the weight: it gets the fewest sessions.
    const opened = Object.values(ref.replicas).map((r) => r.sessionsOpened);
    expect(ref.replicas.r5?.sessionsOpened).toBe(Math.min(...opened));
    expect(config.balance).toEqual({ weights: { r5: 0.33, r1: 2 }, cpus: { r5: 0.08 } });
  });

  it('--max-session-lifetime ends long sessions, so a rejoined replica fills up again', async () => {
    const share = (summary: RunSummary): number => {
      const p = summary.phases.find((x) => x.name === 'rejoin-1')!;
      const q = Object.values(p.replicas).map((r) => r.queries);
      return (p.replicas.r3?.queries ?? 0) / (q.reduce((a, b) => a + b, 0) / q.length);
    };
    const pinned = await run('pinned', { plan: 'plans/guide/pinning.yaml', 'queries-per-session': 400 });
    const aged = await run('aged', {
      plan: 'plans/guide/pinning.yaml',
      'queries-per-session': 400,
      'max-session-lifetime': '10s',
    });
    expect(share(aged.summary)).toBeGreaterThan(share(pinned.summary));
    expect((aged.config.workload as { maxSessionLifetimeMs?: number }).maxSessionLifetimeMs).toBe(10_000);
  });
});
