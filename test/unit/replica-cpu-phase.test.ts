// A CPU sample is the CPU used since the sample before: it counts in the phase that stretch lies
// in, so a replica killed at a phase's start does not carry the second before's CPU into it.
import { describe, expect, it } from 'vitest';
import { replicaStats } from '../../src/metrics/summary/replica-stats.js';
import { MetricsStore } from '../../src/metrics/store/store.js';
import type { Phase } from '../../src/metrics/types.js';

const phases: Phase[] = [
  { name: 'ref', startMs: 0, endMs: 3000.5, survivors: 2, down: [] },
  { name: 'down-1', startMs: 3000.5, endMs: 6000, survivors: 1, down: ['r1'] },
];

describe('per-replica CPU by phase', () => {
  it('counts a sample read just after a boundary in the phase it measured', () => {
    const store = new MetricsStore(['r1', 'r2']);
    // r1 busy until it is killed at 3000 ms; its last sample is read at 3001, after the boundary.
    for (const t of [1001, 2001, 3001]) store.cpu(t, { r1: 0.9, r2: 0.2 });
    for (const t of [4001, 5001]) store.cpu(t, { r1: null, r2: 0.6 });
    const [ref, down] = replicaStats(store, phases);
    expect(ref?.r1?.cpuMean).toBe(0.9);
    expect(down?.r1?.cpuMean).toBeNull();
    expect(ref?.r2?.cpuMean).toBe(0.2);
    expect(down?.r2?.cpuMean).toBe(0.6);
  });
});
