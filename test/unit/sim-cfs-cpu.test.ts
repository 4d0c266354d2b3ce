// The simulator's CFS bandwidth control (cfs-cpu.ts): a replica's quota per period, on up to
// hostCores cores, processor sharing among its jobs; and the calibration fields it reads.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock/virtual.js';
import { checkCalibration, loadCalibration } from '../../src/cluster/sim/calibration.js';
import { CfsCpu } from '../../src/cluster/sim/cfs-cpu.js';

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
