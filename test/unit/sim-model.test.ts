// The simulator's model: processor sharing on a replica's quota, and pg-shaped failures (kill,
// max_connections, pause, restart) in virtual time.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock/virtual.js';
import type { OpenOptions } from '../../src/cluster/connector.js';
import { classifyFailure } from '../../src/cluster/failure-cause.js';
import { loadCalibration, type SimCalibration } from '../../src/cluster/sim/calibration.js';
import { PsCpu, SimDriver } from '../../src/cluster/sim/index.js';
import type { ClusterSpec } from '../../src/cluster/driver.js';
import { makeQuery } from '../../src/workload/queries.js';
import { Rng } from '../../src/workload/rng.js';

/** Finish times of jobs submitted at the given times with the given demands. */
async function finishTimes(cores: number, jobs: { at: number; ms: number }[]): Promise<number[]> {
  const clock = new VirtualClock();
  const cpu = new PsCpu(clock, cores);
  const done: number[] = [];
  await clock.run(() =>
    Promise.all(
      jobs.map(
        (j, i) =>
          new Promise<void>((resolve) =>
            clock.timer(j.at, () =>
              cpu.submit(j.ms, () => {
                done[i] = clock.now();
                resolve();
              }),
            ),
          ),
      ),
    ),
  );
  return done;
}

describe('processor sharing', () => {
  it('serves one job at min(1, C) cores', async () => {
    expect(await finishTimes(1, [{ at: 0, ms: 10 }])).toEqual([10]);
    expect(await finishTimes(0.25, [{ at: 0, ms: 10 }])).toEqual([40]);
    // A backend runs on one core: two cores do not make one query faster.
    expect(await finishTimes(2, [{ at: 0, ms: 10 }])).toEqual([10]);
  });

  it('two equal jobs on one core take twice as long', async () => {
    expect(
      await finishTimes(1, [
        { at: 0, ms: 10 },
        { at: 0, ms: 10 },
      ]),
    ).toEqual([20, 20]);
    // ... and on two cores each has its own.
    expect(
      await finishTimes(2, [
        { at: 0, ms: 10 },
        { at: 0, ms: 10 },
      ]),
    ).toEqual([10, 10]);
  });

  it('shares from each arrival on', async () => {
    // Alone for 5 ms (5 served), then shared: the rest of the first (5) takes 10 ms -> 15; the
    // second has 5 left at 15, alone again -> 20.
    const [a, b] = await finishTimes(1, [
      { at: 0, ms: 10 },
      { at: 5, ms: 10 },
    ]);
    expect(a).toBeCloseTo(15, 9);
    expect(b).toBeCloseTo(20, 9);
  });

  it('counts CPU used, stops while frozen, follows a new quota', async () => {
    const clock = new VirtualClock();
    const cpu = new PsCpu(clock, 0.5);
    let doneAt = -1;
    await clock.run(async () => {
      cpu.submit(10, () => (doneAt = clock.now()));
      await clock.sleep(4); // 2 ms served
      cpu.setFrozen(true);
      await clock.sleep(100);
      expect(cpu.cpuMs()).toBeCloseTo(2, 9);
      cpu.setFrozen(false);
      cpu.setCores(1); // 8 left at 1 core
      await clock.sleep(50);
    });
    expect(doneAt).toBeCloseTo(112, 9);
    expect(cpu.cpuMs()).toBeCloseTo(10, 9);
  });

  it('serves thousands of jobs in order of their finish level', async () => {
    const jobs = Array.from({ length: 2000 }, (_, i) => ({ at: i % 7, ms: 1 + ((i * 37) % 101) }));
    const done = await finishTimes(3, jobs);
    // Same arrival, larger demand -> not earlier.
    for (let i = 7; i < jobs.length; i++) {
      const j = jobs[i]!;
      const k = jobs[i - 7]!;
      if (j.ms >= k.ms) expect(done[i]!).toBeGreaterThanOrEqual(done[i - 7]! - 1e-9);
    }
    // Work conserving: 3 cores busy until the last job leaves.
    const total = jobs.reduce((s, j) => s + j.ms, 0);
    expect(Math.max(...done)).toBeCloseTo(total / 3 + 0, -1);
  });
});

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
  it('a query costs its template demand, shared with what else runs', async () => {
    const { driver, clock } = simCluster();
    const c = driver.connector();
    await clock.run(async () => {
      const [a, b] = await Promise.all([c.open('r1', opts()), c.open('r1', opts())]);
      const t0 = clock.now();
      expect(t0).toBeCloseTo(3, 9); // 1 ms latency, then 1 ms CPU each, the two connects sharing a core
      const ends: number[] = [];
      await Promise.all([a, b].map((x) => x.query(SCAN).then(() => ends.push(clock.now() - t0))));
      expect(ends).toEqual([200, 200]);
      await a.query(POINT);
      expect(clock.now() - t0).toBeCloseTo(201, 9);
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

  it('a throttle changes capacity', async () => {
    const { driver, clock } = simCluster();
    await clock.run(async () => {
      const conn = await driver.connector().open('r2', opts());
      await driver.setCpus('r2', 0.5);
      const t0 = clock.now();
      await conn.query(SCAN);
      expect(clock.now() - t0).toBeCloseTo(200, 9);
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
