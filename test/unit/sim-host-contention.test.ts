// The host-contention part of the model: a saturated replica gets the calibration's hostShare of
// its quota (what the Docker reference runs measured), and hostShare is read from such runs.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock/virtual.js';
import type { ClusterSpec } from '../../src/run-format/cluster-record.js';
import { checkCalibration, loadCalibration, type SimCalibration } from '../../src/cluster/sim/calibration.js';
import { deliveredCores, hostShareFromPhases } from '../../src/cluster/sim/host-contention.js';
import { SimDriver } from '../../src/cluster/sim/driver.js';
import { makeQuery } from '../../src/workload/statements.js';
import { Rng } from '../../src/core/rng.js';

const SCAN = makeQuery('scan', 100, new Rng(1)).text;

/** CPU fraction of its quota that r1 uses over 10 s with 8 sessions running scans back to back. */
async function saturatedFraction(hostShare: number | undefined, cpus: number): Promise<number> {
  const base = loadCalibration();
  const cal: SimCalibration = {
    ...base,
    templates: { ...base.templates, scan: { meanMs: 10, cv: 0 } },
    queryOverheadMs: 0,
    ...(hostShare !== undefined ? { hostShare } : {}),
  };
  const clock = new VirtualClock();
  const spec: ClusterSpec = {
    name: 'host',
    replicas: 1,
    basePort: 30000,
    cpus,
    primaryCpus: 1,
    memoryMb: 0,
    maxConnections: 20,
    stateDir: '/nonexistent',
  };
  const driver = new SimDriver(spec, clock, cal, 'test', 1);
  const connector = driver.connector();
  return clock.run(async () => {
    const conns = await Promise.all(
      Array.from({ length: 8 }, () =>
        connector.open('r1', { connectTimeoutMs: 5000, applicationName: 't', onError: () => undefined }),
      ),
    );
    const t0 = clock.now();
    const cpu0 = (await driver.cpuSeconds()).r1 as number;
    await Promise.all(
      conns.map(async (c) => {
        while (clock.now() - t0 < 10_000) await c.query(SCAN, []);
      }),
    );
    const cpu1 = (await driver.cpuSeconds()).r1 as number;
    return (cpu1 - cpu0) / ((clock.now() - t0) / 1000) / cpus;
  });
}

describe('host contention (calibration hostShare)', () => {
  it('a saturated replica uses its whole quota without it, and hostShare of it with it', async () => {
    expect(await saturatedFraction(undefined, 0.25)).toBeCloseTo(1, 2);
    expect(await saturatedFraction(0.35, 0.25)).toBeCloseTo(0.35, 2);
    expect(await saturatedFraction(0.5, 1)).toBeCloseTo(0.5, 2);
  });

  it('delivers quota x share; absent means the whole quota', () => {
    expect(deliveredCores(0.25, {})).toBe(0.25);
    expect(deliveredCores(0.25, { hostShare: 0.4 })).toBeCloseTo(0.1, 12);
  });

  it('is read from the saturated phases of real runs only (median CPU fraction)', () => {
    const phases = [
      { cpuMean: 0.3, p95Ms: [900, 1200] },
      { cpuMean: 0.5, p95Ms: [40, 800] },
      { cpuMean: 0.4, p95Ms: [600, 100] },
      // not saturated: says nothing of the host
      { cpuMean: 0.1, p95Ms: [20, 30] },
      { cpuMean: null, p95Ms: [2000] },
    ];
    expect(hostShareFromPhases(phases)).toBeCloseTo(0.4, 12);
    expect(hostShareFromPhases([{ cpuMean: 0.2, p95Ms: [10] }])).toBeNull();
  });

  it('is checked in a calibration file, naming the field', () => {
    const raw = { ...(JSON.parse(JSON.stringify(loadCalibration())) as Record<string, unknown>) };
    expect(checkCalibration({ ...raw, hostShare: 0.35 }, 'f').hostShare).toBe(0.35);
    expect(() => checkCalibration({ ...raw, hostShare: 1.5 }, 'f')).toThrow(/hostShare/);
    expect(() => checkCalibration({ ...raw, hostShare: 0 }, 'f')).toThrow(/hostShare/);
  });
});
