/**
 * `plb calibrate` end to end on the Docker driver with few samples: it brings its own cluster up,
 * measures r1 (kill + start included), writes a file the simulator reads, and leaves no container
 * behind. Skips when no Docker engine answers, except with CI=true, where that is a failure.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { executeCalibrate } from '../../src/bench/calibrate/calibrate-sim.js';
import { dockerAvailable, LABEL_CLUSTER } from '../../src/cluster/docker/index.js';
import { loadCalibration } from '../../src/cluster/sim/calibration.js';

const NAME = 'plbtest-calibrate';
const BASE_PORT = 24532;
const ci = process.env.CI === 'true';
const available = await dockerAvailable(3000);

describe.skipIf(!available && !ci)('plb calibrate on a Docker cluster', () => {
  const work = mkdtempSync(join(tmpdir(), 'plb-calibrate-test-'));
  const stateBefore = process.env.PLB_STATE_DIR;

  afterAll(() => {
    if (stateBefore === undefined) delete process.env.PLB_STATE_DIR;
    else process.env.PLB_STATE_DIR = stateBefore;
    rmSync(work, { recursive: true, force: true });
  });

  it('measures r1, writes a calibration that loads, and removes the cluster it brought up', async () => {
    if (!available) throw new Error('CI=true and no Docker engine answers: the Docker tests must run in CI');
    process.env.PLB_STATE_DIR = join(work, 'state');
    const out = join(work, 'cal.json');
    const lines: string[] = [];
    const { code } = await executeCalibrate(
      { out, name: NAME, samples: 20, restarts: 1, driver: 'docker', 'base-port': BASE_PORT },
      { log: (l) => lines.push(l), warn: (l) => lines.push(l), stdout: () => undefined },
    );
    expect(code, lines.join('\n')).toBe(0);
    const cal = loadCalibration(out);
    expect(cal.measured.replicaCpus).toBe(0.25);
    expect(cal.measured.postgres).toMatch(/^1\d/);
    expect(cal.measured.notes).toMatch(/per-query CPU/);
    // Orders of magnitude, not timings: the scan reads the whole table, the point one row.
    expect(cal.templates.point.meanMs).toBeGreaterThan(0);
    expect(cal.templates.scan.meanMs).toBeGreaterThan(5 * cal.templates.point.meanMs);
    expect(cal.connect.cpuMs).toBeGreaterThan(cal.healthCpuMs);
    expect(cal.restartMs).toBeGreaterThan(0);
    // At load r1 was measured with the cluster's other four replicas loaded alike.
    expect(cal.atLoad?.companions).toBe(4);
    expect(cal.atLoad?.queryCpuMs).toBeGreaterThan(0);
    expect(lines.join('\n')).toMatch(/restart 1\/1: accepts after \d+ ms, streams after \d+ ms/);
    const left = await new Docker().listContainers({
      all: true,
      filters: { label: [`${LABEL_CLUSTER}=${NAME}`] },
    });
    expect(left.map((c) => c.Names)).toEqual([]);
  }, 300_000);
});
