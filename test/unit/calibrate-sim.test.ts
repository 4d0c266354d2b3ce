import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { executeCalibrate } from '../../src/bench/calibrate/calibrate-sim.js';
import {
  counterIsFine,
  renderCalibration,
  summariseCalibration,
  type SimMeasurement,
  type TemplateSamples,
} from '../../src/bench/calibrate/calibrate-summary.js';
import { checkCalibration, loadCalibration } from '../../src/cluster/sim/calibration.js';
import { writeFileSafe } from '../../src/core/safe-write.js';

/** n queries whose per-query CPU alternates lo/hi (mean (lo+hi)/2, cv (hi-lo)/(hi+lo)), latency = cpu + overhead. */
function template(n: number, lo: number, hi: number, overhead: number): TemplateSamples {
  const cpuMs = Array.from({ length: n }, (_, i) => (i % 2 === 0 ? lo : hi));
  const latencyMs = cpuMs.map((c) => c + overhead);
  const totalMs = cpuMs.reduce((a, b) => a + b, 0);
  return { rounds: [{ cpuS: totalMs / 1000, spanMs: 1000, n }], latencyMs, cpuMs };
}

function measurement(over: Partial<SimMeasurement> = {}): SimMeasurement {
  return {
    replica: 'r1',
    replicas: 5,
    replicaCpus: 0.25,
    quotaEnforced: true,
    driver: 'docker',
    postgres: '15.18',
    datasetRows: 100_000,
    samples: 100,
    warmMs: 1500,
    minMs: 3000,
    idleCpuMsPerS: 0,
    templates: {
      point: template(100, 0.1, 0.3, 0.25),
      range: template(100, 0.5, 1.5, 0.25),
      scan: template(100, 18, 22, 0.25),
    },
    health: { count: 1000, cpuS: 0.05, spanMs: 1000 },
    connects: { cpuS: 0.4, spanMs: 1000, wallMs: Array(100).fill(7), cpuMs: Array(100).fill(4) },
    restarts: [
      { acceptMs: 400, streamMs: 800 },
      { acceptMs: 300, streamMs: 900 },
      { acceptMs: 500, streamMs: 850 },
    ],
    load: { before: 1, after: 2, cores: 2 },
    ...over,
  };
}

const meta = { at: '2026-11-30T12:00:00.000Z', machine: 'test CPU, 2 cores' };

describe('summariseCalibration', () => {
  it('mean demand = CPU / queries, cv from per-query CPU, overhead = median(latency - CPU)', () => {
    const cal = summariseCalibration(measurement(), meta);
    expect(cal.templates.point).toEqual({ meanMs: 0.2, cv: 0.5 });
    expect(cal.templates.range).toEqual({ meanMs: 1, cv: 0.5 });
    expect(cal.templates.scan).toEqual({ meanMs: 20, cv: 0.1 });
    expect(cal.queryOverheadMs).toBe(0.25);
    expect(cal.connect).toEqual({ cpuMs: 4, latencyMs: 3 });
    expect(cal.healthCpuMs).toBe(0.05);
    // Medians: accept 400; catch-up (stream - accept) 400, 600, 350 -> 400.
    expect(cal.restartMs).toBe(400);
    expect(cal.catchUpMs).toBe(400);
    expect(cal.measured.replicaCpus).toBe(0.25);
    expect(cal.measured.notes).toMatch(/per-query CPU/);
  });

  it("takes the idle replica's own CPU off before dividing", () => {
    // 1 ms/s idle over a 1 s run of 100 queries: 0.01 ms less each.
    const cal = summariseCalibration(measurement({ idleCpuMsPerS: 1 }), meta);
    expect(cal.templates.point.meanMs).toBe(0.19);
    expect(cal.healthCpuMs).toBe(0.049);
  });

  it("mean demand is the median of the rounds' means: one round inflated by the host's load is left out", () => {
    const m = measurement();
    const round = (msEach: number) => ({ cpuS: (msEach * 20) / 1000, spanMs: 200, n: 20 });
    const point = {
      ...m.templates.point,
      rounds: [round(0.2), round(0.21), round(0.9), round(0.19), round(0.2)],
    };
    const cal = summariseCalibration(measurement({ templates: { ...m.templates, point } }), meta);
    expect(cal.templates.point.meanMs).toBe(0.2);
  });

  it('a coarse (tick) counter: cv from latency less the overhead, overhead from the least point latency', () => {
    const coarse = (t: TemplateSamples): TemplateSamples => ({
      ...t,
      cpuMs: t.cpuMs.map((_, i) => (i % 10 === 0 ? 10 : 0)),
    });
    const m = measurement();
    const cal = summariseCalibration(
      measurement({
        templates: {
          point: coarse(m.templates.point),
          range: coarse(m.templates.range),
          scan: coarse(m.templates.scan),
        },
        connects: { ...m.connects, cpuMs: null },
      }),
      meta,
    );
    // min point latency 0.35 - mean 0.2 = 0.15; range latency - 0.15 alternates 0.6/1.6.
    expect(cal.queryOverheadMs).toBe(0.15);
    expect(cal.templates.range.cv).toBe(0.45);
    expect(cal.connect.latencyMs).toBe(3);
    expect(cal.measured.notes).toMatch(/too coarse/);
  });

  it('says when the quota was only recorded, and which counter it read', () => {
    const cal = summariseCalibration(measurement({ driver: 'local', quotaEnforced: false }), meta);
    expect(cal.measured.notes).toMatch(/0\.25 cpus \(recorded, NOT enforced\) \(local driver\)/);
    expect(cal.measured.notes).toMatch(/the local driver's counter for the replica/);
  });

  it('never negative, whatever the noise', () => {
    const m = measurement();
    const cal = summariseCalibration(
      measurement({
        idleCpuMsPerS: 1000,
        templates: { ...m.templates, point: { ...m.templates.point, latencyMs: Array(100).fill(0.01) } },
      }),
      meta,
    );
    expect(cal.templates.point.meanMs).toBe(0);
    expect(cal.queryOverheadMs).toBe(0);
  });
});

describe('counterIsFine', () => {
  it('a cgroup counter resolves single queries; a 10 ms tick counter does not', () => {
    expect(counterIsFine([0.12, 0.2, 0.15, 0.3])).toBe(true);
    expect(counterIsFine([0, 0, 0, 10, 0, 0, 0, 0, 10, 0])).toBe(false);
    expect(counterIsFine([10, 20, 10, 10])).toBe(false);
    expect(counterIsFine([])).toBe(false);
  });
});

describe('the calibration file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plb-cal-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('what calibrate writes reads back through loadCalibration unchanged', () => {
    const cal = summariseCalibration(measurement(), { ...meta, note: 'builds shared the cores' });
    const file = join(dir, 'cal.json');
    writeFileSafe(file, `${JSON.stringify(cal, null, 2)}\n`, '--out');
    expect(loadCalibration(file)).toEqual(cal);
    expect(cal.measured.notes).toMatch(/builds shared the cores$/);
    expect(renderCalibration(cal, 'written')).toMatch(/scan query CPU\s*│\s*20 ms/);
  });

  it('the shipped calibration/default.json is a measured one that passes the check', () => {
    const raw: unknown = JSON.parse(readFileSync('calibration/default.json', 'utf8'));
    const cal = checkCalibration(raw, 'calibration/default.json');
    expect(cal.measured.at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(cal.measured.notes).toMatch(/cgroup counter/);
    for (const k of ['point', 'range', 'scan'] as const) expect(cal.templates[k].meanMs).toBeGreaterThan(0);
    expect(cal.templates.point.meanMs).toBeLessThan(cal.templates.range.meanMs);
    expect(cal.templates.range.meanMs).toBeLessThan(cal.templates.scan.meanMs);
    expect(loadCalibration()).toEqual(cal);
  });
});

describe('plb calibrate: bad input', () => {
  const run = async (over: Record<string, unknown>): Promise<{ code: number; err: string[] }> => {
    const err: string[] = [];
    const { code } = await executeCalibrate(
      {
        out: join(tmpdir(), 'plb-cal-never.json'),
        name: 'plbtest-never',
        samples: 10,
        restarts: 1,
        driver: 'docker',
        'base-port': 24632,
        ...over,
      },
      { log: () => undefined, warn: (l) => err.push(l), stdout: () => undefined },
    );
    return { code, err };
  };

  it.each([
    [{ samples: 0 }, /^Error: --samples: must be an integer from 1/],
    [{ restarts: 1.5 }, /^Error: --restarts: must be an integer/],
    [{ cpus: 'x' }, /^Error: --cpus: /],
    [{ driver: 'podman' }, /^Error: driver: must be auto, docker, local, sim or external/],
    [{ driver: 'sim' }, /^Error: --driver: calibrate measures a replica plb made: .*\(got sim\)/],
    [{ driver: 'external' }, /^Error: --driver: calibrate measures a replica plb made: .*\(got external\)/],
    [{ name: 'A B' }, /^Error: --name: /],
    [{ 'base-port': 80 }, /^Error: --base-port: /],
    [{ out: '/nonexistent-plb/x.json' }, /^Error: --out: /],
  ])('%o fails with one line naming the flag, before any cluster', async (over, want) => {
    const { code, err } = await run(over);
    expect(code).toBe(1);
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(want);
  });
});
