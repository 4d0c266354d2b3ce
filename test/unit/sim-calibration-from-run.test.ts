import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chargedCosts, loadCalibration } from '../../src/cluster/sim/calibration.js';
import { calibrationFromRun, isRunCalibration } from '../../src/cluster/sim/calibration-from-run.js';
import { createSimCluster } from '../../src/cluster/sim/index.js';

const cls = (point: number, range: number, scan: number) => ({
  queriesPerSession: 10,
  thinkTimeMs: 8786,
  queryWeights: { point, range, scan },
});

function runDir(config: Record<string, unknown>): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'plb-calrun-')), 'run');
  mkdirSync(dir);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  return dir;
}

const workload = (premium = cls(0.5, 0.3, 0.2), freemium = cls(0.5, 0.3, 0.2)) => ({
  model: 'closed',
  clients: 1000,
  rate: 20,
  mix: { premium: 25, freemium: 75 },
  rampUpS: null,
  datasetRows: 100000,
  queryTimeoutMs: 15000,
  connectTimeoutMs: 10000,
  maxOpenSessions: 400,
  classes: { premium, freemium },
});

const measured = { thinkTimeMs: 8786, cpuPerQueryMs: 6.079, cpuPerConnectMs: 9.14 };

describe('a calibration from a real run', () => {
  const base = loadCalibration();

  it("prices a query of the run's mix and a connect at what the run measured", () => {
    const dir = runDir({ driver: 'docker', calibration: measured, workload: workload() });
    expect(isRunCalibration(dir)).toBe(true);
    const charged = chargedCosts(calibrationFromRun(dir, base));
    const t = charged.templates;
    expect(0.5 * t.point.meanMs + 0.3 * t.range.meanMs + 0.2 * t.scan.meanMs).toBeCloseTo(6.079, 9);
    expect(charged.connect.cpuMs).toBeCloseTo(9.14, 9);
    // Every CPU cost by the same factor: the templates keep their proportions, the fork its share.
    const b = chargedCosts(base);
    expect(t.scan.meanMs / t.point.meanMs).toBeCloseTo(b.templates.scan.meanMs / b.templates.point.meanMs, 9);
    expect(charged.connect.postmasterCpuMs! / charged.connect.cpuMs).toBeCloseTo(
      b.connect.postmasterCpuMs! / b.connect.cpuMs,
      9,
    );
    // Times that are not CPU stay.
    expect(charged.connect.latencyMs).toBe(base.connect.latencyMs);
    expect(charged.restartMs).toBe(base.restartMs);
  });

  it('weighs the classes by their share of the queries, as the measurement dealt them', () => {
    const dir = runDir({
      driver: 'docker',
      calibration: measured,
      workload: workload(cls(1, 0, 0), cls(0, 0, 1)),
    });
    const t = chargedCosts(calibrationFromRun(dir, base)).templates;
    expect(0.25 * t.point.meanMs + 0.75 * t.scan.meanMs).toBeCloseTo(6.079, 9);
  });

  it('is what a simulated cluster given the run directory runs on, and records', () => {
    const dir = runDir({ driver: 'docker', calibration: measured, workload: workload() });
    const sim = createSimCluster({
      name: 't',
      replicas: 5,
      sessions: 10,
      over: {},
      stateDir: dir,
      calibrationPath: dir,
    });
    expect(sim.calibration.path).toBe(dir);
    expect(sim.calibration.contents.measured.notes).toContain('scaled to the run');
  });

  it('refuses a run that measured nothing, a simulated run and a run of another workload, by name', () => {
    const none = runDir({ driver: 'docker', calibration: { thinkTimeMs: 250 }, workload: workload() });
    expect(() => calibrationFromRun(none, base)).toThrow(/measured no costs/);
    const sim = runDir({ driver: 'sim', calibration: measured, workload: workload() });
    expect(() => calibrationFromRun(sim, base)).toThrow(/a simulated run/);
    const file = runDir({
      driver: 'docker',
      calibration: measured,
      workload: workload(),
      workloadFile: 'w.yaml',
    });
    expect(() => calibrationFromRun(file, base)).toThrow(/--workload w.yaml/);
    expect(() => calibrationFromRun(join(tmpdir(), 'plb-no-such-run'), base)).toThrow(/not a run directory/);
  });
});
