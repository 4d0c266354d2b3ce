// --sim-cpu pooled: the replicas' quotas are one budget shared by those up, so a dead or paused
// replica's CPU goes to the survivors; with per-replica quotas (the default) it does not.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock/virtual.js';
import type { ClusterSpec } from '../../src/run-format/cluster-record.js';
import { loadCalibration, type SimCalibration } from '../../src/cluster/sim/calibration.js';
import { SimDriver } from '../../src/cluster/sim/driver.js';
import { makeQuery } from '../../src/workload/statements.js';
import { Rng } from '../../src/core/rng.js';
import { checkModelSettings, parseModelFlags } from '../../src/bench/options/model-options.js';

const SCAN = makeQuery('scan', 100, new Rng(1)).text;

/** r2's CPU (fraction of its nominal quota) over 5 s of 8 sessions running scans, after `fault`. */
async function r2Fraction(pool: 'quota' | 'pooled', fault: (d: SimDriver) => Promise<void>): Promise<number> {
  const base = loadCalibration();
  const cal: SimCalibration = {
    ...base,
    templates: { ...base.templates, scan: { meanMs: 10, cv: 0 } },
    queryOverheadMs: 0,
  };
  const clock = new VirtualClock();
  const spec: ClusterSpec = {
    name: 'pool',
    replicas: 5,
    basePort: 30000,
    cpus: 0.25,
    primaryCpus: 1,
    memoryMb: 0,
    maxConnections: 20,
    stateDir: '/nonexistent',
  };
  const driver = new SimDriver(spec, clock, cal, 'test', 1, pool);
  return clock.run(async () => {
    await fault(driver);
    const conns = await Promise.all(
      Array.from({ length: 8 }, () =>
        driver
          .connector()
          .open('r2', { connectTimeoutMs: 5000, applicationName: 't', onError: () => undefined }),
      ),
    );
    const t0 = clock.now();
    const cpu0 = (await driver.cpuSeconds()).r2 as number;
    await Promise.all(
      conns.map(async (c) => {
        while (clock.now() - t0 < 5000) await c.query(SCAN, []);
      }),
    );
    const cpu1 = (await driver.cpuSeconds()).r2 as number;
    return (cpu1 - cpu0) / ((clock.now() - t0) / 1000) / 0.25;
  });
}

const none = async (): Promise<void> => undefined;

describe('--sim-cpu pooled', () => {
  it('changes nothing while every replica is up', async () => {
    expect(await r2Fraction('pooled', none)).toBeCloseTo(await r2Fraction('quota', none), 6);
  });

  it("gives a killed replica's quota to the survivors: 5 quotas over 4 replicas", async () => {
    const kill = async (d: SimDriver): Promise<void> => d.kill('r1');
    expect(await r2Fraction('quota', kill)).toBeCloseTo(1, 2);
    expect(await r2Fraction('pooled', kill)).toBeCloseTo(5 / 4, 1);
  });

  it('counts a paused replica out and a rejoined one back in', async () => {
    const pauseTwo = async (d: SimDriver): Promise<void> => {
      await d.pause('r1');
      await d.pause('r3');
    };
    expect(await r2Fraction('pooled', pauseTwo)).toBeCloseTo(5 / 3, 1);
    const back = async (d: SimDriver): Promise<void> => {
      await d.kill('r1');
      await d.start('r1');
    };
    expect(await r2Fraction('pooled', back)).toBeCloseTo(1, 2);
  });
});

describe('the model options', () => {
  it("parse to what differs from today's models only", () => {
    expect(parseModelFlags({})).toEqual({});
    expect(parseModelFlags({ 'on-failure': 'retry', 'sim-cpu': 'quota' })).toEqual({});
    expect(parseModelFlags({ 'on-failure': 'leave', 'sim-cpu': 'pooled' })).toEqual({
      onFailure: 'leave',
      simCpu: 'pooled',
    });
    expect(() => parseModelFlags({ 'on-failure': 'sulk' })).toThrow(
      '--on-failure: must be retry or leave (got "sulk")',
    );
  });

  it('refuse --on-failure with the open model and --sim-cpu without the simulator', () => {
    expect(() => checkModelSettings({ onFailure: 'leave' }, { model: 'open', sim: true })).toThrow(
      '--on-failure: closed model only',
    );
    expect(() => checkModelSettings({ simCpu: 'pooled' }, { model: 'closed', sim: false })).toThrow(
      '--sim-cpu: only with --driver sim',
    );
    expect(() =>
      checkModelSettings({ onFailure: 'leave', simCpu: 'pooled' }, { model: 'closed', sim: true }),
    ).not.toThrow();
  });
});
