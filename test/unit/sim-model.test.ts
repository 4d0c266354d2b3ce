// The simulator's model: CFS bandwidth control on a replica's quota, and pg-shaped failures
// (kill, max_connections, pause, restart) in virtual time.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock/virtual.js';
import type { OpenOptions } from '../../src/cluster/connector.js';
import { classifyFailure } from '../../src/core/failure-cause.js';
import { checkCalibration, loadCalibration, type SimCalibration } from '../../src/cluster/sim/calibration.js';
import { CfsCpu, SimDriver } from '../../src/cluster/sim/index.js';
import type { ClusterSpec } from '../../src/run-format/cluster-record.js';
import { makeQuery } from '../../src/workload/statements.js';
import { Rng } from '../../src/core/rng.js';

/** Finish times of jobs submitted at the given times with the given demands (period 100 ms). */
async function finishTimes(
  cores: number,
  jobs: { at: number; ms: number }[],
  hostCores = 2,
): Promise<{ done: number[]; cpu: CfsCpu }> {
  const clock = new VirtualClock();
  const cpu = new CfsCpu(clock, cores, hostCores, 100);
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
  return { done, cpu };
}

const ends = async (cores: number, jobs: { at: number; ms: number }[], hostCores = 2): Promise<number[]> =>
  (await finishTimes(cores, jobs, hostCores)).done;

describe('CFS bandwidth control', () => {
  it('runs a lone short job at full core speed, whatever the quota', async () => {
    // 12.4 ms within a 25 ms budget: its demand, not 4x (processor sharing at 0.25 core gave 49.6).
    expect(await ends(0.25, [{ at: 0, ms: 12.4 }])).toEqual([12.4]);
    expect(await ends(1, [{ at: 0, ms: 10 }])).toEqual([10]);
    // A backend runs on one core: two cores do not make one query faster.
    expect(await ends(2, [{ at: 0, ms: 10 }])).toEqual([10]);
  });

  it('makes a burst past the quota wait for the next period, with no carry-over', async () => {
    // 25 ms of budget per 100 ms: 25 served by t=25, throttled to 100, 5 more -> 105.
    expect(await ends(0.25, [{ at: 0, ms: 30 }])).toEqual([105]);
    // Two jobs on two cores drain 2/ms: budget out at 12.5 (each 12.5 served), again at 112.5
    // (25 each), the last 5 each from 200 -> 205.
    const [a, b] = await ends(0.25, [
      { at: 0, ms: 30 },
      { at: 0, ms: 30 },
    ]);
    expect(a).toBeCloseTo(205, 9);
    expect(b).toBeCloseTo(205, 9);
    // An idle period's budget is not saved up: 30 ms arriving at 250 use 25 of that period's
    // budget and wait for 300.
    expect(await ends(0.25, [{ at: 250, ms: 30 }])).toEqual([305]);
  });

  it('refills lazily: a long idle stretch costs no timers', async () => {
    const clock = new VirtualClock();
    const cpu = new CfsCpu(clock, 0.25, 2, 100);
    let doneAt = -1;
    await clock.run(async () => {
      cpu.submit(20, () => undefined);
      await clock.sleep(1e6);
      const fired = clock.fired;
      cpu.submit(20, () => (doneAt = clock.now()));
      await clock.sleep(100);
      expect(clock.fired - fired).toBe(2); // the departure and the sleep
    });
    expect(doneAt).toBeCloseTo(1e6 + 20, 9);
  });

  it('never serves more than C cores in the long run', async () => {
    // 64 jobs of 50 ms at once on a 0.25-core quota and 2 host cores: 3200 ms of CPU at 25 ms per
    // 100 ms is 128 periods; the last finishes in the 128th.
    const jobs = Array.from({ length: 64 }, () => ({ at: 0, ms: 50 }));
    const { done, cpu } = await finishTimes(0.25, jobs);
    const last = Math.max(...done);
    expect(last).toBeGreaterThan(12700);
    expect(last).toBeLessThanOrEqual(12800 + 1e-6);
    expect(cpu.cpuMs()).toBeCloseTo(3200, 6);
    // By any time, at most 25 ms per period begun.
    for (let i = 0; i < done.length; i++) {
      const served = done.filter((t) => t <= done[i]!).length * 50;
      expect(served).toBeLessThanOrEqual(25 * Math.ceil(done[i]! / 100) + 1e-6);
    }
  });

  it('runs two jobs on two host cores in parallel, and shares one core', async () => {
    expect(
      await ends(1, [
        { at: 0, ms: 10 },
        { at: 0, ms: 10 },
      ]),
    ).toEqual([10, 10]);
    expect(
      await ends(
        1,
        [
          { at: 0, ms: 10 },
          { at: 0, ms: 10 },
        ],
        1,
      ),
    ).toEqual([20, 20]);
    // Three on two cores: each at 2/3 core.
    const three = await ends(1, [
      { at: 0, ms: 10 },
      { at: 0, ms: 10 },
      { at: 0, ms: 10 },
    ]);
    for (const t of three) expect(t).toBeCloseTo(15, 9);
  });

  it('shares from each arrival on', async () => {
    // One host core: alone for 5 ms (5 served), then shared: the rest of the first (5) takes
    // 10 ms -> 15; the second has 5 left at 15, alone again -> 20.
    const [a, b] = await ends(
      1,
      [
        { at: 0, ms: 10 },
        { at: 5, ms: 10 },
      ],
      1,
    );
    expect(a).toBeCloseTo(15, 9);
    expect(b).toBeCloseTo(20, 9);
  });

  it('stops while frozen and counts only the CPU used', async () => {
    const clock = new VirtualClock();
    const cpu = new CfsCpu(clock, 0.5, 2, 100);
    let doneAt = -1;
    await clock.run(async () => {
      cpu.submit(10, () => (doneAt = clock.now()));
      await clock.sleep(4); // 4 ms served at full speed
      cpu.setFrozen(true);
      await clock.sleep(1000);
      expect(cpu.cpuMs()).toBeCloseTo(4, 9);
      cpu.setFrozen(false); // t=1004, a fresh period's budget
      await clock.sleep(50);
    });
    expect(doneAt).toBeCloseTo(1010, 9);
    expect(cpu.cpuMs()).toBeCloseTo(10, 9);
  });

  it('a throttle refills the budget to the new quota at once', async () => {
    const clock = new VirtualClock();
    const cpu = new CfsCpu(clock, 0.25, 2, 100);
    let doneAt = -1;
    await clock.run(async () => {
      cpu.submit(100, () => (doneAt = clock.now()));
      await clock.sleep(40); // 25 served, throttled since 25
      cpu.setCores(0.5); // 50 more from 40: 75 served at 90, throttled
      await clock.sleep(55);
      expect(doneAt).toBe(-1);
      expect(cpu.cpuMs()).toBeCloseTo(75, 9);
      await clock.sleep(50);
    });
    // Period 1's 50 ms budget: the last 25 by 125 (at 0.25 it would have been 325).
    expect(doneAt).toBeCloseTo(125, 9);
    expect(cpu.cpuMs()).toBeCloseTo(100, 9);
  });

  it('accounts CPU equal to the demand served', async () => {
    const jobs = Array.from({ length: 500 }, (_, i) => ({
      at: (i * 13) % 997,
      ms: 0.1 + ((i * 37) % 101) / 10,
    }));
    const { done, cpu } = await finishTimes(0.25, jobs);
    const total = jobs.reduce((s, j) => s + j.ms, 0);
    expect(cpu.cpuMs()).toBeCloseTo(total, 6);
    // Nobody leaves before its demand at full speed.
    for (let i = 0; i < jobs.length; i++)
      expect(done[i]!).toBeGreaterThanOrEqual(jobs[i]!.at + jobs[i]!.ms - 1e-9);
  });

  it('serves thousands of jobs in order of their finish level', async () => {
    const jobs = Array.from({ length: 2000 }, (_, i) => ({ at: i % 7, ms: 1 + ((i * 37) % 101) }));
    const done = await ends(3, jobs, 4);
    // Same arrival, larger demand -> not earlier.
    for (let i = 7; i < jobs.length; i++) {
      const j = jobs[i]!;
      const k = jobs[i - 7]!;
      if (j.ms >= k.ms) expect(done[i]!).toBeGreaterThanOrEqual(done[i - 7]! - 1e-9);
    }
    // Work conserving under a 3-core quota (300 ms per 100 ms period) on 4 host cores: the last
    // job leaves in the period whose budget serves the last of the total.
    const total = jobs.reduce((s, j) => s + j.ms, 0);
    const last = Math.max(...done);
    expect(Math.ceil(last / 100)).toBe(Math.ceil(total / 300));
  });

  it('takes hostCores and cfsPeriodMs from the calibration, checked', () => {
    const raw = JSON.parse(JSON.stringify(loadCalibration())) as Record<string, unknown>;
    expect(loadCalibration()).toMatchObject({ hostCores: 2, cfsPeriodMs: 100 });
    delete raw.hostCores;
    delete raw.cfsPeriodMs;
    const bare = checkCalibration(raw, 'x');
    expect(bare.hostCores).toBeUndefined();
    expect(bare.cfsPeriodMs).toBeUndefined();
    expect(() => checkCalibration({ ...raw, hostCores: 0 }, 'x')).toThrow(/hostCores/);
    expect(() => checkCalibration({ ...raw, hostCores: 1.5 }, 'x')).toThrow(/hostCores/);
    expect(() => checkCalibration({ ...raw, cfsPeriodMs: 0.5 }, 'x')).toThrow(/cfsPeriodMs/);
    expect(() => checkCalibration({ ...raw, cfsPeriodMs: 2000 }, 'x')).toThrow(/cfsPeriodMs/);
    expect(checkCalibration({ ...raw, hostCores: 4, cfsPeriodMs: 50 }, 'x')).toMatchObject({
      hostCores: 4,
      cfsPeriodMs: 50,
    });
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
