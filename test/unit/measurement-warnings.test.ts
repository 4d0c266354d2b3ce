import { describe, expect, it } from 'vitest';
import type { PhaseSummary, RunSummary } from '../../src/run-format/summary.js';
import { measurementWarnings } from '../../src/metrics/summary/measurement-warnings.js';
import { runProblems } from '../../src/report/evidence/evidence.js';

const phase = (
  name: string,
  loopP99Ms: number,
  host?: { busyMean: number; stealMean: number },
): PhaseSummary =>
  ({
    name,
    harness: {
      cpuMean: 0.2,
      cpuMax: 0.35,
      loopP50Ms: 1,
      loopP99Ms,
      loopMaxMs: 40,
      saturated: loopP99Ms > 20,
      ...(host ? { host: { ...host, busyMax: 1 } } : {}),
    },
  }) as PhaseSummary;

const summary = (phases: PhaseSummary[], unexplained: number): RunSummary =>
  ({
    runId: 'r',
    complete: true,
    phases,
    detectionCounts: { down: 2, up: 2, unexplained },
  }) as unknown as RunSummary;

describe('measurementWarnings', () => {
  it('says nothing about a clean run', () => {
    expect(measurementWarnings(summary([phase('ref', 4), phase('down-1', 19.9)], 0))).toEqual([]);
  });

  it('names each phase where the harness fell behind, and false detections', () => {
    expect(measurementWarnings(summary([phase('ref', 4), phase('down-2', 21.9)], 3))).toEqual([
      'warning: phase down-2: client event-loop delay p99 21.9 ms (> 20 ms): the harness, not only the replicas, set the pace (client CPU up to 35% of a core)',
      'warning: 3 of 4 detections are not explained by an injected fault (false detections)',
    ]);
  });

  it('names each phase whose host had no room: busy to 90 % or 5 % stolen', () => {
    const s = summary(
      [
        phase('ref', 4, { busyMean: 0.89, stealMean: 0.049 }),
        phase('down-1', 4, { busyMean: 0.9, stealMean: 0 }),
        phase('down-2', 4, { busyMean: 0.5, stealMean: 0.05 }),
      ],
      0,
    );
    expect(measurementWarnings(s)).toEqual([
      "warning: phase down-1: the host's cores were 90% busy (>= 90%): the replicas' quotas were not guaranteed",
      "warning: phase down-2: the hypervisor took 5% of the host's cores (>= 5%)",
    ]);
    // The same phases are not a clean measurement in the report's evidence.
    expect(runProblems(s)).toEqual([
      "r: phase down-1: the host's cores were 90% busy (>= 90%): the replicas' quotas were not guaranteed",
      "r: phase down-2: the hypervisor took 5% of the host's cores (>= 5%)",
    ]);
  });
});
