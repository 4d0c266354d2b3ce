import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { chargedCosts, checkCalibration, defaultCalibrationPath } from '../../src/cluster/sim/calibration.js';

const base = JSON.parse(readFileSync(defaultCalibrationPath(), 'utf8')) as Record<string, unknown>;
const withAtLoad = (atLoad: Record<string, unknown>) => ({ ...base, atLoad });

describe('the costs at load', () => {
  it('scale every template by what the mix cost at load over what it cost alone, and take the connect at load', () => {
    const seq = checkCalibration(base, 'x');
    const cal = checkCalibration(
      withAtLoad({ targetCpu: 0.7, sessions: 16, queryCpuMs: 9, sequentialQueryCpuMs: 3, connectCpuMs: 8.5 }),
      'x',
    );
    const charged = chargedCosts(cal);
    for (const k of ['point', 'range', 'scan'] as const) {
      expect(charged.templates[k].meanMs).toBeCloseTo(seq.templates[k].meanMs * 3, 9);
      expect(charged.templates[k].cv).toBe(seq.templates[k].cv);
    }
    expect(charged.connect).toEqual({ ...seq.connect, cpuMs: 8.5 });
    // The file's own figures are left as measured.
    expect(cal.templates.scan.meanMs).toBe(seq.templates.scan.meanMs);
  });

  it('leave a calibration without a measurement at load as it is', () => {
    const cal = checkCalibration({ ...base, atLoad: undefined }, 'x');
    expect(chargedCosts(cal)).toBe(cal);
  });

  it('refuse a bad field with its name', () => {
    expect(() =>
      checkCalibration(
        withAtLoad({ targetCpu: 0.7, sessions: 16, queryCpuMs: 0, sequentialQueryCpuMs: 3, connectCpuMs: 1 }),
        'f.json',
      ),
    ).toThrow('calibration f.json: atLoad.queryCpuMs must be a number >= 0.000001');
  });
});
