// The simulator's pg-shaped failures (kill, max_connections, pause, restart) in virtual time
// (its CFS bandwidth control: sim-cfs-cpu.test.ts).
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock/virtual.js';
import type { OpenOptions } from '../../src/cluster/connector.js';
import { classifyFailure } from '../../src/core/failure-cause.js';
import { loadCalibration, type SimCalibration } from '../../src/cluster/sim/calibration.js';
import type { ClusterSpec } from '../../src/run-format/cluster-record.js';
import { makeQuery } from '../../src/workload/statements.js';
import { Rng } from '../../src/core/rng.js';
import { SimDriver } from '../../src/cluster/sim/driver.js';

const cal: SimCalibration = {
  ...loadCalibration(),
  templates: {
    point: { meanMs: 1, cv: 0 },
    range: { meanMs: 10, cv: 0 },
    scan: { meanMs: 100, cv: 0 },
  },
  queryOverheadMs: 0,
  connect: { cpuMs: 1, latencyMs: 1 },
  healthCpuMs: 0.1,
  restartMs: 1000,
  catchUpMs: 500,
};

function simCluster(over: Partial<ClusterSpec> = {}): { driver: SimDriver; clock: VirtualClock } {
  const clock = new VirtualClock();
  const spec: ClusterSpec = {
    name: 'sim-test',
    replicas: 2,
    basePort: 30000,
    cpus: 1,
    primaryCpus: 1,
    memoryMb: 0,
    maxConnections: 4,
    stateDir: '/nonexistent',
    ...over,
  };
  return { driver: new SimDriver(spec, clock, cal, 'test', 1), clock };
}

const SCAN = makeQuery('scan', 100, new Rng(1)).text;
const POINT = makeQuery('point', 100, new Rng(1)).text;

function opts(errors: Error[] = [], queryTimeoutMs?: number): OpenOptions {
  return {
    connectTimeoutMs: 5000,
    applicationName: 't',
    onError: (e) => errors.push(e),
    ...(queryTimeoutMs !== undefined ? { queryTimeoutMs } : {}),
  };
}

async function failure(p: Promise<unknown>): Promise<Error & { code?: string; severity?: string }> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

describe('simulated replicas', () => {
  it('a query costs its template demand, within the quota of its period', async () => {
    const { driver, clock } = simCluster();
    const c = driver.connector();
    await clock.run(async () => {
      const [a, b] = await Promise.all([c.open('r1', opts()), c.open('r1', opts())]);
      const t0 = clock.now();
      expect(t0).toBeCloseTo(2, 9); // 1 ms latency, then 1 ms CPU each, on a host core each
      const ends: number[] = [];
      await Promise.all([a, b].map((x) => x.query(SCAN).then(() => ends.push(clock.now() - t0))));
      // 1 core of quota = 100 ms per 100 ms period, drained at 2 cores by the two scans: 98 left
      // of period 0 (out at 51, 49 each served), 100 in period 1 (out at 150, 99 each), the last
      // 1 each at 200 -> 201.
      expect(ends.map((e) => Math.round(e * 1e6) / 1e6)).toEqual([199, 199]);
      await a.query(POINT);
      expect(clock.now() - t0).toBeCloseTo(200, 9);
    });
    const cpu = await driver.cpuSeconds();
    expect(cpu.r1).toBeCloseTo(0.203, 9);
    expect(cpu.r2).toBe(0);
  });

  it('a kill fails in-flight queries (ECONNRESET) and idle connections, and refuses new ones', async () => {
    const { driver, clock } = simCluster();
    const c = driver.connector();
    const idleErrors: Error[] = [];
    await clock.run(async () => {
      const busy = await c.open('r1', opts());
      await c.open('r1', opts(idleErrors));
      const q = busy.query(SCAN);
      await clock.sleep(10);
      await driver.kill('r1');
      const err = await failure(q);
      expect(err.code).toBe('ECONNRESET');
      expect(classifyFailure(err)).toBe('unreachable');
      await clock.sleep(0);
      expect(idleErrors.map((e) => (e as { code?: string }).code)).toEqual(['ECONNRESET']);
      expect(classifyFailure(await failure(busy.query(POINT)))).toBe('unreachable');
      const refused = await failure(c.open('r1', opts()));
      expect(refused.code).toBe('ECONNREFUSED');
      expect(classifyFailure(refused)).toBe('unreachable');
      // r2 never noticed.
      await (await c.open('r2', opts())).query(POINT);
    });
    expect((await driver.status()).find((s) => s.id === 'r1')?.up).toBe(false);
  });

  it('a stop tells backends 57P01', async () => {
    const { driver, clock } = simCluster();
    await clock.run(async () => {
      const conn = await driver.connector().open('r1', opts());
      const q = conn.query(SCAN);
      await driver.stop('r1');
      const err = await failure(q);
      expect(err).toMatchObject({ code: '57P01', severity: 'FATAL' });
      expect(classifyFailure(err)).toBe('unreachable');
    });
  });

  it('refuses past max_connections with 53300, and takes one again after a close', async () => {
    const { driver, clock } = simCluster({ maxConnections: 2 });
    const c = driver.connector();
    await clock.run(async () => {
      const a = await c.open('r1', opts());
      await c.open('r1', opts());
      const err = await failure(c.open('r1', opts()));
      expect(err).toMatchObject({
        code: '53300',
        severity: 'FATAL',
        message: 'sorry, too many clients already',
      });
      expect(classifyFailure(err)).toBe('overloaded');
      await a.end(0);
      await c.open('r1', opts());
    });
  });

  it('a paused replica answers nothing: queries and connects time out in virtual time', async () => {
    const { driver, clock } = simCluster();
    const c = driver.connector();
    await clock.run(async () => {
      const conn = await c.open('r1', opts([], 3000));
      await driver.pause('r1');
      const t0 = clock.now();
      const err = await failure(conn.query(POINT));
      expect(clock.now() - t0).toBe(3000);
      expect(classifyFailure(err)).toBe('slow');
      const t1 = clock.now();
      const cerr = await failure(c.open('r1', { ...opts(), connectTimeoutMs: 700 }));
      expect(clock.now() - t1).toBe(700);
      expect(classifyFailure(cerr)).toBe('slow');
      expect((await driver.status()).find((s) => s.id === 'r1')?.paused).toBe(true);
      const before = (await driver.cpuSeconds()).r1;
      await clock.sleep(1000);
      expect((await driver.cpuSeconds()).r1).toBe(before);
      await driver.unpause('r1');
      const fresh = await c.open('r1', opts([], 3000));
      await fresh.query(POINT);
    });
  });

  it("a statement's timeout is its own: one served in time leaves the next its whole timeout", async () => {
    const { driver, clock } = simCluster();
    const c = driver.connector();
    await clock.run(async () => {
      const conn = await c.open('r1', opts([], 3000));
      await conn.query(POINT);
      await clock.sleep(2000);
      await driver.pause('r1');
      // The first statement's deadline passes 1 s into this one: it must not time this one out.
      const t0 = clock.now();
      const err = await failure(conn.query(POINT));
      expect(clock.now() - t0).toBe(3000);
      expect(classifyFailure(err)).toBe('slow');
    });
  });

  it("tells a statement's waiter once, after the call returns, with no promise", async () => {
    const { driver, clock } = simCluster();
    const c = driver.connector();
    await clock.run(async () => {
      const conn = await c.open('r1', opts());
      const told: (Error | undefined)[] = [];
      await new Promise<void>((resolve) => {
        conn.run?.(POINT, undefined, {
          statementDone: (err) => {
            told.push(err);
            resolve();
          },
        });
        expect(told).toEqual([]);
      });
      await clock.sleep(100);
      expect(told).toEqual([undefined]);
      await conn.end(0);
      const closed = await new Promise<Error | undefined>((resolve) =>
        conn.run?.(POINT, undefined, { statementDone: resolve }),
      );
      expect(closed?.message).toMatch(/closed|not queryable/i);
    });
  });

  it('a throttle changes capacity', async () => {
    const { driver, clock } = simCluster();
    await clock.run(async () => {
      const conn = await driver.connector().open('r2', opts());
      await driver.setCpus('r2', 0.5);
      const t0 = clock.now();
      await conn.query(SCAN);
      // From t0=2 a fresh 50 ms budget: out at 52, the other 50 from the boundary at 100 -> 150.
      expect(clock.now() - t0).toBeCloseTo(148, 9);
    });
  });

  it('a restart refuses until restartMs, then catches up before it streams', async () => {
    const { driver, clock } = simCluster();
    const c = driver.connector();
    const replication = async (): Promise<string | null | undefined> =>
      (await driver.status()).find((s) => s.id === 'r1')?.replication;
    await clock.run(async () => {
      await driver.kill('r1');
      expect(await replication()).toBeNull();
      const started = driver.start('r1');
      await clock.sleep(500);
      expect((await failure(c.open('r1', opts()))).code).toBe('ECONNREFUSED');
      await started;
      expect(clock.now()).toBe(1000);
      expect(await replication()).toBe('catchup');
      await (await c.open('r1', opts())).query(POINT);
      await clock.sleep(500);
      expect(await replication()).toBe('streaming');
    });
  });

  it('draws the same demands for the same seed', async () => {
    const draw = async (seed: number): Promise<number[]> => {
      const clock = new VirtualClock();
      const spec = simCluster().driver.spec;
      const driver = new SimDriver(spec, clock, loadCalibration(), 'default', 0);
      driver.beginRun(seed);
      const ends: number[] = [];
      await clock.run(async () => {
        const conn = await driver.connector().open('r1', opts());
        for (let i = 0; i < 20; i++) {
          const t = clock.now();
          await conn.query(SCAN);
          ends.push(clock.now() - t);
        }
      });
      return ends;
    };
    const a = await draw(7);
    expect(await draw(7)).toEqual(a);
    expect(await draw(8)).not.toEqual(a);
    expect(new Set(a).size).toBeGreaterThan(1);
  });
});
