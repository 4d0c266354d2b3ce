import { describe, expect, it } from 'vitest';
import {
  parseSessionLifetime,
  parseWeights,
  resolveBalance,
  weightedReplicas,
} from '../../src/bench/options/balance.js';
import { checkBenchValue } from '../../src/bench/options/checks.js';
import { lagWeighting } from '../../src/bench/write-load.js';
import { ReplicaWeights } from '../../src/router/lag-weight.js';
import { parsePlan } from '../../src/faults/plan.js';
import type { RunWriter } from '../../src/metrics/types.js';
import { maxLagFactor } from '../../src/router/max-lag.js';

const plan = (extra = '') => parsePlan(`name: p\nduration: 60\n${extra}`, 'p.yaml');
const ZONES = 'zones: {r1: a, r2: a, r3: b, r4: b, r5: b}\n';

describe('balance flags', () => {
  it('parses --weights and --max-session-lifetime, one line naming the flag when wrong', () => {
    expect(parseWeights('r1=2, r3=0.5')).toEqual({ r1: 2, r3: 0.5 });
    expect(() => parseWeights('r1:2')).toThrow(/^--weights: expected replica=weight/);
    expect(() => parseWeights('r1=0')).toThrow('--weights: weight of r1 must be > 0 (got 0)');
    expect(parseSessionLifetime('10s')).toBe(10_000);
    expect(() => parseSessionLifetime('0s')).toThrow(/^--max-session-lifetime: /);
    // Checked where the command line is read, by the same functions.
    expect(() => checkBenchValue('max-lag', 'soon')).toThrow(/^--max-lag: /);
    expect(() => checkBenchValue('zone-spill', '0.5')).toThrow(
      '--zone-spill: must be a number >= 1 (got "0.5")',
    );
    expect(() => checkBenchValue('client-zones', 'a')).toThrow(/^--client-zones: /);
  });

  it('--weights overrides the plan, replica by replica', () => {
    const b = resolveBalance({ weights: 'r2=3' }, plan('weights: {r1: 2, r2: 1}\n'), 0);
    expect(b.weights).toEqual({ r1: 2, r2: 3 });
    expect(weightedReplicas(['r1', 'r2', 'r3'], b.weights)).toEqual([
      { id: 'r1', weight: 2 },
      { id: 'r2', weight: 3 },
      { id: 'r3', weight: 1 },
    ]);
    expect(() => resolveBalance({ weights: 'r9=1' }, plan(), 0)).toThrow(/--weights: r9 is not a replica/);
  });

  it('nothing configured: nothing set (runs as before)', () => {
    expect(resolveBalance({}, plan(), 0)).toEqual({});
  });

  it('--max-lag needs writes and excludes --lag-weights', () => {
    expect(resolveBalance({ 'max-lag': '1s' }, plan(), 100).maxLagMs).toBe(1000);
    expect(() => resolveBalance({ 'max-lag': '1s' }, plan(), 0)).toThrow(/^--max-lag: needs --write-rate/);
    expect(() => resolveBalance({ 'max-lag': '1s', 'lag-weights': '200ms:800ms:10%' }, plan(), 100)).toThrow(
      '--max-lag: not with --lag-weights (eviction or weighting, pick one)',
    );
  });

  it('--client-zones needs the plan zones and known zone names', () => {
    expect(() => resolveBalance({ 'client-zones': 'a:1' }, plan(), 0)).toThrow(/has no zones: mapping/);
    expect(() => resolveBalance({ 'client-zones': 'c:1' }, plan(ZONES), 0)).toThrow(/zone c has no replica/);
    expect(resolveBalance({ 'client-zones': 'a:1,b:3', 'zone-spill': '3' }, plan(ZONES), 0)).toMatchObject({
      clientZones: { a: 0.25, b: 0.75 },
      zoneSpill: 3,
    });
  });
});

describe('replica weights', () => {
  const writer = (events: unknown[]): RunWriter =>
    ({ event: (e: unknown) => events.push(e) }) as unknown as RunWriter;

  it('static weight x lag factor; a throttle weight keeps the lag factor', () => {
    const set: string[] = [];
    const w = new ReplicaWeights({ setWeight: (r, x) => set.push(`${r} ${x}`) }, { r1: 2 });
    expect(w.weightOf('r1')).toBe(2);
    w.setFactor('r1', 0.5);
    w.setBase('r1', 4);
    w.setFactor('r2', 0);
    expect(set).toEqual(['r1 1', 'r1 2', 'r2 0.001']);
    expect(w.setFactor('r1', 0.5)).toBe(false);
  });

  it('--max-lag evicts a replica over the budget and takes it back under it', () => {
    const set: string[] = [];
    const events: unknown[] = [];
    const router = { setWeight: (r: string, x: number) => set.push(`${r} ${x}`) };
    const onLag = lagWeighting(
      router,
      writer(events),
      (lag) => maxLagFactor(lag, 1000),
      new ReplicaWeights(router, { r1: 2 }),
    );
    const l = (lagMs: number) => ({ lagMs, replayLagMs: null, lagBytes: 0 });
    onLag(1000, { r1: l(500), r2: l(500) });
    onLag(2000, { r1: l(1500), r2: l(900) });
    onLag(3000, { r1: l(100), r2: l(100) });
    expect(set).toEqual(['r1 0.001', 'r1 2']);
    expect(events).toHaveLength(2);
  });
});
