// The time-sliced CPU (rr-cpu.ts): backends take turns a slice at a time on the host's cores,
// under the same CFS bandwidth control as the processor-sharing model.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock/virtual.js';
import { checkCalibration, loadCalibration } from '../../src/cluster/sim/calibration.js';
import { RrCpu } from '../../src/cluster/sim/rr-cpu.js';

interface Job {
  at: number;
  ms: number;
}

async function ends(
  jobs: Job[],
  opts: { cores: number; hostCores: number; sliceMs: number },
): Promise<{ done: number[]; cpu: RrCpu }> {
  const clock = new VirtualClock();
  const cpu = new RrCpu(clock, opts.cores, opts.hostCores, 100, opts.sliceMs);
  const done = jobs.map(() => -1);
  await clock.run(async () => {
    await Promise.all(
      jobs.map(async (j, i) => {
        await clock.sleep(j.at);
        await new Promise<void>((resolve) =>
          cpu.submit(j.ms, () => {
            done[i] = clock.now();
            resolve();
          }),
        );
      }),
    );
  });
  return { done, cpu };
}

describe('RrCpu', () => {
  it('runs a lone job at a full core', async () => {
    const { done } = await ends([{ at: 0, ms: 50 }], { cores: 1, hostCores: 2, sliceMs: 4 });
    expect(done[0]).toBeCloseTo(50, 9);
  });

  it('takes turns a slice at a time on one core', async () => {
    const { done } = await ends(
      [
        { at: 0, ms: 20 },
        { at: 0, ms: 20 },
      ],
      { cores: 1, hostCores: 1, sliceMs: 10 },
    );
    expect(done[0]).toBeCloseTo(30, 9);
    expect(done[1]).toBeCloseTo(40, 9);
  });

  it('makes a short query wait for the running slice, where sharing would not', async () => {
    const { done } = await ends(
      [
        { at: 0, ms: 100 },
        { at: 1, ms: 1 },
      ],
      { cores: 1, hostCores: 1, sliceMs: 4 },
    );
    // The long job's slice ends at 4; the short one runs 4..5.
    expect(done[1]).toBeCloseTo(5, 9);
    expect(done[0]).toBeCloseTo(101, 9);
  });

  it('runs two jobs at once on two host cores', async () => {
    const { done } = await ends(
      [
        { at: 0, ms: 30 },
        { at: 0, ms: 30 },
      ],
      { cores: 2, hostCores: 2, sliceMs: 4 },
    );
    expect(done).toEqual([30, 30].map((x) => expect.closeTo(x, 9) as unknown as number));
  });

  it('throttles at the quota and resumes at the next period', async () => {
    // 0.25 cores: 25 ms a period. A 30 ms job runs 25 ms, waits for 100, ends at 105.
    const { done, cpu } = await ends([{ at: 0, ms: 30 }], { cores: 0.25, hostCores: 2, sliceMs: 4 });
    expect(done[0]).toBeCloseTo(105, 9);
    expect(cpu.cpuMs()).toBeCloseTo(30, 9);
  });

  it('never serves more than its quota a period, and serves every job in full', async () => {
    let s = 11;
    const rnd = (): number => (s = (s * 16807) % 2147483647) / 2147483647;
    const jobs = Array.from({ length: 200 }, () => ({
      at: rnd() * 2000,
      ms: rnd() < 0.1 ? 12 : 0.1 + rnd(),
    }));
    const { done, cpu } = await ends(jobs, { cores: 0.25, hostCores: 2, sliceMs: 4 });
    const total = jobs.reduce((a, j) => a + j.ms, 0);
    expect(cpu.cpuMs()).toBeCloseTo(total, 6);
    for (const [i, t] of done.entries())
      expect(t).toBeGreaterThanOrEqual((jobs[i] as Job).at + (jobs[i] as Job).ms - 1e-6);
    // Served by each finish time: at most 25 ms per period begun.
    const order = done.map((t, i) => ({ t, ms: (jobs[i] as Job).ms })).sort((a, b) => a.t - b.t);
    let served = 0;
    for (const o of order) {
      served += o.ms;
      expect(served).toBeLessThanOrEqual(25 * Math.ceil(o.t / 100) + 1e-6);
    }
  });
});

describe('calibration sliceMs', () => {
  it('is optional and checked, naming the field', () => {
    const cal = loadCalibration();
    expect(checkCalibration({ ...cal, sliceMs: 4 }, 'c.json').sliceMs).toBe(4);
    expect(() => checkCalibration({ ...cal, sliceMs: 0 }, 'c.json')).toThrow(/sliceMs/);
  });
});
