import { describe, expect, it } from 'vitest';
import { thinkTimeFor, type ThinkTimeInputs } from '../../src/workload/calibrate.js';

const base: ThinkTimeInputs = {
  clients: 1000,
  replicas: 5,
  cpusPerReplica: 0.25,
  targetCpu: 0.8,
  queriesPerSession: 10,
  cpuPerQueryS: 0.003,
  cpuPerConnectS: 0.005,
  connectWallS: 0.01,
};

describe('thinkTimeFor', () => {
  it('solves the closed-loop cycle for the think time that offers the target load', () => {
    const r = thinkTimeFor(base);
    // lambda = 0.8 * 5 * 0.25 / (0.003 + 0.0005) = 285.7 q/s; R = 0.003 / 0.25 / 0.2 = 60 ms;
    // D = 1000 * 10 / 285.7 = 35 s; Z = (35 - 0.01 - 0.6) / 9 = 3.821 s.
    expect(r.targetQps).toBe(285.7);
    expect(r.responseEstMs).toBe(60);
    expect(r.thinkTimeMs).toBe(3821);
    expect(r.shortfall).toBeNull();
  });

  it('scales with T: the offered load per client falls as clients grow', () => {
    const t600 = thinkTimeFor({ ...base, clients: 600 }).thinkTimeMs;
    const t1000 = thinkTimeFor(base).thinkTimeMs;
    expect(t600).toBeLessThan(t1000);
    // Offered rate T n / (connect + n R + (n-1) Z) is the same target for both.
    const rate = (t: number, z: number) => (t * 10) / (0.01 + 10 * 0.06 + 9 * (z / 1000));
    expect(rate(600, t600)).toBeCloseTo(rate(1000, t1000), 0);
  });

  it('says so when even no think time cannot reach the target', () => {
    const r = thinkTimeFor({ ...base, clients: 5 });
    expect(r.thinkTimeMs).toBe(0);
    expect(r.shortfall).toMatch(/^5 clients cannot reach 80% replica CPU/);
  });
});
