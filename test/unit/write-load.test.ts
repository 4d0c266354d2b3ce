import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock/virtual.js';
import { replicaOfSlot } from '../../src/cluster/lag-probe.js';
import { isPlbError } from '../../src/errors.js';
import type { FaultPlan } from '../../src/faults/types.js';
import { Rng } from '../../src/workload/rng.js';
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
