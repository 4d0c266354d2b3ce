import { describe, expect, it } from 'vitest';
import { LagLog, lagLine, lagLines, lagPhaseStats } from '../../src/metrics/samplers/lag.js';
import { MetricsStore } from '../../src/metrics/store/store.js';
import { summarizePhases } from '../../src/metrics/summary/summary.js';
import type { Phase } from '../../src/metrics/types.js';
import { parseTimeline, timelineHeaderLine, timelineRow } from '../../src/metrics/store/timeline.js';
import { SERVICE_CLASSES } from '../../src/core/service-class.js';

const phases: Phase[] = [
  { name: 'ref', startMs: 0, endMs: 3000, survivors: 2, down: [] },
  { name: 'pause-replay-1', startMs: 3000, endMs: 6000, survivors: 2, down: [] },
];

const lag = (lagMs: number | null, lagBytes: number | null, replayLagMs: number | null = null) => ({
  lagMs,
  lagBytes,
  replayLagMs,
});

describe('replication lag per phase', () => {
  it('gives p50/max ms and bytes per replica and phase; the primary replay_lag stands in when the standby is silent', () => {
    const log = new LagLog(['r1', 'r2']);
    for (let s = 0; s < 6; s++) {
      const paused = s >= 3;
      log.push(s * 1000 + 500, {
        r1: paused ? lag((s - 2) * 1000, (s - 2) * 8192) : lag(0, 0),
        // r2 does not answer in the second phase: the primary's view is used.
        r2: paused ? lag(null, 100, 7) : lag(2, 50),
      });
    }
    const stats = lagPhaseStats(log, phases);
    expect(stats?.[0]?.['r1']).toEqual({ p50Ms: 0, maxMs: 0, bytesP50: 0, bytesMax: 0, samples: 3 });
    expect(stats?.[1]?.['r1']).toEqual({
      p50Ms: 2000,
      maxMs: 3000,
      bytesP50: 16384,
      bytesMax: 24576,
      samples: 3,
    });
    expect(stats?.[1]?.['r2']).toEqual({ p50Ms: 7, maxMs: 7, bytesP50: 100, bytesMax: 100, samples: 3 });
    expect(lagLine(stats?.[1] ?? {})).toBe('r1 p50 2000 max 3000 ms (24.0 kB) | r2 p50 7 max 7 ms (0.1 kB)');
  });

  it('is absent without samples (a read-only run)', () => {
    expect(lagPhaseStats(new LagLog(['r1']), phases)).toBeUndefined();
    const store = new MetricsStore(['r1']);
    const out = summarizePhases(store, phases);
    expect(out.phases[0]?.replicas['r1']?.lag).toBeUndefined();
  });

  it('lands in the phase summary of each replica when sampled', () => {
    const store = new MetricsStore(['r1', 'r2']);
    store.lag(4000, { r1: lag(900, 4096), r2: lag(0, 0) });
    const out = summarizePhases(store, phases);
    expect(out.phases[1]?.replicas['r1']?.lag).toEqual({
      p50Ms: 900,
      maxMs: 900,
      bytesP50: 4096,
      bytesMax: 4096,
      samples: 1,
    });
    expect(out.phases[0]?.replicas['r1']?.lag?.samples).toBe(0);
  });
});

describe('lag lines of the text report', () => {
  it('has one line per phase with lag, none for a read-only run', () => {
    const store = new MetricsStore(['r1']);
    expect(lagLines(summarizePhases(store, phases).phases)).toEqual([]);
    store.lag(1000, { r1: lag(0, 0) });
    store.lag(4000, { r1: lag(1500, 2048) });
    expect(lagLines(summarizePhases(store, phases).phases)).toEqual([
      'replication lag ref: r1 p50 0 max 0 ms (0.0 kB)',
      'replication lag pause-replay-1: r1 p50 1500 max 1500 ms (2.0 kB)',
    ]);
  });
});

describe('lag in timeline.csv', () => {
  it('writes the second lag per replica and reads it back', () => {
    const store = new MetricsStore(['r1', 'r2']);
    store.lag(2500, { r1: lag(1234.56, 8192), r2: lag(null, null) });
    const row = timelineRow(2, 'steady', store.peekSecond(2), undefined, SERVICE_CLASSES, ['r1', 'r2']);
    const text = timelineHeaderLine(SERVICE_CLASSES, ['r1', 'r2']) + row + '\n';
    const [parsed] = parseTimeline(text);
    expect(parsed?.replicas['r1']).toMatchObject({ lagMs: 1234.6, lagBytes: 8192 });
    expect(parsed?.replicas['r2']).toMatchObject({ lagMs: null, lagBytes: null });
  });
});
