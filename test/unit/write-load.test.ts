import { describe, expect, it } from 'vitest';
import { checkBenchValue } from '../../src/bench/options/checks.js';
import { lagWeighting } from '../../src/bench/write-load.js';
import { DRAINED_WEIGHT } from '../../src/router/lag-weight.js';
import { VirtualClock } from '../../src/clock/virtual.js';
import { replicaOfSlot } from '../../src/cluster/lag-probe.js';
import { isPlbError } from '../../src/core/errors.js';
import type { FaultPlan } from '../../src/run-format/plan.js';
import type { RunWriter } from '../../src/metrics/types.js';
import { DEFAULT_LAG_WEIGHTS } from '../../src/router/lag-weight.js';
import { Rng } from '../../src/core/rng.js';
import {
  batchKeys,
  parseWriteRate,
  refuseLagWithSim,
  rowsDue,
  WRITE_KEYS,
  Writer,
  type WriteConnection,
} from '../../src/workload/writer.js';

const plan = (actions: FaultPlan['events'][number]['action'][]): FaultPlan => ({
  name: 'p',
  description: '',
  duration: 60,
  warmup: 10,
  referenceWindow: 10,
  replicas: 2,
  events: actions.map((action, i) => ({ at: 20 + i, replica: 'r1', action, line: 7 + i })),
});

describe('--write-rate', () => {
  it('takes 0 (read-only) up to the limit and names the flag otherwise', () => {
    expect(parseWriteRate(0)).toBe(0);
    expect(parseWriteRate(200)).toBe(200);
    for (const bad of [-1, Number.NaN, 1e9]) expect(() => parseWriteRate(bad)).toThrow(/^--write-rate: /);
  });

  it('is refused with the simulated cluster, as are replay faults; a read-only plain plan is fine', () => {
    expect(() => refuseLagWithSim(200, plan([]))).toThrow(/--write-rate: not with --driver sim/);
    let caught: unknown;
    try {
      refuseLagWithSim(0, plan(['down', 'pause-replay']));
    } catch (err) {
      caught = err;
    }
    expect(isPlbError(caught, 'BAD_INPUT')).toBe(true);
    expect((caught as Error).message).toMatch(/line 8: pause-replay is not possible with --driver sim/);
    expect(() => refuseLagWithSim(0, plan(['down', 'rejoin']))).not.toThrow();
  });
});

describe('writer pacing and keys', () => {
  it('owes the rows due by now at the rate, at most a second of them at once', () => {
    expect(rowsDue(200, 100, 0)).toBe(20);
    expect(rowsDue(200, 1000, 180)).toBe(20);
    expect(rowsDue(200, 1000, 200)).toBe(0);
    expect(rowsDue(200, 60_000, 0)).toBe(200);
    expect(rowsDue(3, 100, 0)).toBe(0);
  });

  it('draws distinct keys in range from the seeded stream, the same for the same seed', () => {
    const a = batchKeys(new Rng(5), 50);
    expect(new Set(a).size).toBe(50);
    expect(a.every((k) => k >= 1 && k <= WRITE_KEYS)).toBe(true);
    expect(batchKeys(new Rng(5), 50)).toEqual(a);
  });

  it('writes at the rate in virtual time, survives a failed batch by reopening, and stops', async () => {
    const clock = new VirtualClock();
    const batches: number[] = [];
    let opened = 0;
    let closed = 0;
    const errors: unknown[] = [];
    const open = async (): Promise<WriteConnection> => {
      opened++;
      return {
        query: async (_sql, params) => {
          const keys = params[0] as number[];
          // The third batch fails: the rows are skipped, the connection replaced.
          if (batches.length === 2 && opened === 1) throw new Error('connection lost');
          batches.push(keys.length);
        },
        close: async () => {
          closed++;
        },
      };
    };
    const writer = new Writer({ rate: 200, clock, rng: new Rng(1), open, onError: (e) => errors.push(e) });
    const stats = await clock.run(async () => {
      writer.start();
      await clock.sleep(2050);
      return writer.close();
    });
    expect(errors).toHaveLength(1);
    expect(opened).toBe(2);
    expect(closed).toBe(2);
    expect(stats.errors).toBe(1);
    expect(batches.every((n) => n === 20)).toBe(true);
    // 20 ticks of 20 rows in 2.05 s, one of them lost.
    expect(stats.rows).toBe(19 * 20);
    expect(stats.batches).toBe(19);
  });
});

describe('lag probe', () => {
  it('maps both drivers slot names to replica ids', () => {
    expect(replicaOfSlot('r3')).toBe('r3');
    expect(replicaOfSlot('plb_r3')).toBe('r3');
  });
});

describe('lag-derived weights in a run', () => {
  it('tells the router a weight only when it changes, drained as a tiny weight, and records each change', () => {
    const set: string[] = [];
    const events: unknown[] = [];
    const writer = { event: (e: unknown) => events.push(e) } as unknown as RunWriter;
    const onLag = lagWeighting({ setWeight: (r, w) => set.push(`${r} ${w}`) }, writer, DEFAULT_LAG_WEIGHTS);
    const l = (lagMs: number | null, replayLagMs: number | null = null) => ({
      lagMs,
      replayLagMs,
      lagBytes: 0,
    });
    onLag(1000, { r1: l(0), r2: l(0) });
    onLag(2000, { r1: l(500), r2: l(0) });
    onLag(3000, { r1: l(501), r2: l(null, 5000) });
    onLag(4000, { r1: l(0), r2: l(0) });
    expect(set).toEqual(['r1 0.5', `r2 ${DRAINED_WEIGHT}`, 'r1 1', 'r2 1']);
    expect(events).toHaveLength(4);
    expect(events[0]).toMatchObject({
      type: 'note',
      what: 'lag-weight',
      replica: 'r1',
      weight: 0.5,
      tMs: 2000,
    });
  });

  it('checks --lag-weights and --write-rate where the command line is read', () => {
    expect(() => checkBenchValue('lag-weights', '800ms:200ms:10%')).toThrow(/^--lag-weights: /);
    expect(checkBenchValue('lag-weights', 'off')).toBeUndefined();
    expect(() => checkBenchValue('write-rate', -5)).toThrow(/^--write-rate: /);
  });
});
