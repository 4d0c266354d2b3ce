// The postmaster stage (postmaster.ts): connections are forked one at a time on the server's CPU,
// several within one time slice while they wait, and the backends start after their fork.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock/virtual.js';
import type { OpenOptions } from '../../src/cluster/connector.js';
import { checkCalibration, loadCalibration, type SimCalibration } from '../../src/cluster/sim/calibration.js';
import { CfsCpu } from '../../src/cluster/sim/cfs-cpu.js';
import { DemandModel } from '../../src/cluster/sim/demand.js';
import { Postmaster } from '../../src/cluster/sim/postmaster.js';
import { RrCpu } from '../../src/cluster/sim/rr-cpu.js';
import { SimServer, SimWorld } from '../../src/cluster/sim/server.js';

const base = loadCalibration();

function calibration(postmasterCpuMs?: number): SimCalibration {
  return {
    ...base,
    hostCores: 1,
    sliceMs: 4,
    connect: { cpuMs: 2.5, latencyMs: 0, ...(postmasterCpuMs !== undefined ? { postmasterCpuMs } : {}) },
  };
}

function server(cal: SimCalibration, maxConnections = 10): { clock: VirtualClock; server: SimServer } {
  const clock = new VirtualClock();
  const world = new SimWorld(clock, cal, new DemandModel(cal, 1));
  return { clock, server: new SimServer(world, 'r1', 'replica', 1, 1, maxConnections) };
}

const opts = (connectTimeoutMs = 10_000): OpenOptions => ({
  connectTimeoutMs,
  applicationName: 't',
  onError: () => undefined,
});

/** When each of `n` connects opened at t=0 was open (ms), or its error's message. */
async function openTimes(cal: SimCalibration, n: number): Promise<(number | string)[]> {
  const { clock, server: s } = server(cal);
  return clock.run(() =>
    Promise.all(
      Array.from({ length: n }, () =>
        s.open(opts()).then(
          () => clock.now(),
          (e: Error) => e.message,
        ),
      ),
    ),
  );
}

describe('Postmaster', () => {
  it('forks one connection after another within its slice, then yields the core', async () => {
    const clock = new VirtualClock();
    const cpu = new RrCpu(clock, 1, 1, 100, 4);
    const forked: number[] = [];
    const pm = new Postmaster<number>(cpu, 0.5, () => forked.push(clock.now()));
    await clock.run(async () => {
      // A backend with 40 ms to run holds the one core first; 12 connections wait for the fork.
      cpu.submit(40, () => undefined);
      for (let i = 0; i < 12; i++) pm.fork(i, 0);
      await clock.sleep(100);
    });
    // Its first slice forks 8 (0.5 ms each), the backend has its turn, the next slice the last 4.
    const want = [4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8, 12.5, 13, 13.5, 14];
    expect(forked).toHaveLength(want.length);
    forked.forEach((t, i) => expect(t).toBeCloseTo(want[i] as number, 9));
    expect(pm.waiting).toBe(0);
  });

  it('goes on with its queue under processor sharing too', async () => {
    const clock = new VirtualClock();
    const cpu = new CfsCpu(clock, 1, 1, 100);
    const forked: [number, number][] = [];
    const pm = new Postmaster<number>(cpu, 0.5, (i) => forked.push([i, clock.now()]));
    await clock.run(async () => {
      for (let i = 0; i < 3; i++) pm.fork(i, 0);
      await clock.sleep(10);
      pm.fork(3, 0);
      await clock.sleep(10);
    });
    expect(forked.map(([i]) => i)).toEqual([0, 1, 2, 3]);
    [0.5, 1, 1.5, 10.5].forEach((t, i) => expect(forked[i]?.[1]).toBeCloseTo(t, 9));
  });
});

describe('a simulated server with a postmaster', () => {
  it('starts each backend after its fork, the rest of the connect on the CPU', async () => {
    // Forks at 0.5, 1, 1.5; then the backends' 2 ms each (2.5 less the fork) in turn on one core.
    const opened = await openTimes(calibration(0.5), 3);
    [3.5, 5.5, 7.5].forEach((t, i) => expect(opened[i]).toBeCloseTo(t, 9));
    // Without the field a connect is one backend's 2.5 ms, as before.
    const before = await openTimes(calibration(), 3);
    [2.5, 5, 7.5].forEach((t, i) => expect(before[i]).toBeCloseTo(t, 9));
  });

  it('forks for a client that gave up, but gives it no slot', async () => {
    const { clock, server: s } = server(calibration(0.5), 1);
    const outcome = await clock.run(async () => {
      // A 40 ms backend holds the core: the first client's 1 ms connect timeout passes in the queue.
      s.cpu.submit(40, () => undefined);
      const gaveUp = s.open(opts(1)).then(
        () => 'open',
        (e: Error) => e.message,
      );
      const next = s.open(opts()).then(
        () => clock.now(),
        (e: Error) => e.message,
      );
      return Promise.all([gaveUp, next]);
    });
    expect(outcome[0]).toMatch(/timeout/i);
    // The one slot went to the second: both forks in the postmaster's first slice, then its backend.
    expect(typeof outcome[1]).toBe('number');
    expect(s.backends).toBe(1);
  });

  it('drops the connections waiting for a fork when the server dies, and forks again after', async () => {
    const { clock, server: s } = server(calibration(0.5));
    const result = await clock.run(async () => {
      s.cpu.submit(40, () => undefined);
      const waiting = Array.from({ length: 3 }, () =>
        s.open(opts()).then(
          () => 'open',
          (e: Error) => e.message,
        ),
      );
      await clock.sleep(1);
      s.die(() => new Error('server killed'));
      const lost = await Promise.all(waiting);
      s.state = 'up';
      const t0 = clock.now();
      await s.open(opts());
      return { lost, after: clock.now() - t0 };
    });
    expect(result.lost).toEqual(['server killed', 'server killed', 'server killed']);
    // An idle server after the restart: its fork (0.5) and the backend's 2 ms.
    expect(result.after).toBeCloseTo(2.5, 9);
  });
});

describe('calibration connect.postmasterCpuMs', () => {
  it('is optional and checked, naming the field', () => {
    const raw = { ...base, connect: { ...base.connect, postmasterCpuMs: 0.7 } };
    expect(checkCalibration(raw, 'c.json').connect.postmasterCpuMs).toBe(0.7);
    const { postmasterCpuMs: _shipped, ...without } = base.connect;
    expect(checkCalibration({ ...base, connect: without }, 'c.json').connect.postmasterCpuMs).toBeUndefined();
    const bad = { ...base, connect: { ...base.connect, postmasterCpuMs: 0 } };
    expect(() => checkCalibration(bad, 'c.json')).toThrow(/connect\.postmasterCpuMs/);
  });
});
