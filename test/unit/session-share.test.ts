// Each phase's share of new sessions per replica next to its weight's share, the degraded replica
// named, false down detections per phase; pooled over runs in the report, with its tables.
import { describe, expect, it } from 'vitest';
import { degradedAt, sessionShares } from '../../src/metrics/summary/session-share.js';
import type { RunEvent } from '../../src/metrics/types.js';
import type { PhaseSummary, RunSummary } from '../../src/run-format/summary.js';
import { aggregateHang, pooled } from '../../src/report/hang-aggregate.js';
import { hangLines, hangTable, shareTable } from '../../src/report/tables/hang-tables.js';
import type { RunGroup } from '../../src/run-format/report.js';

const fault = (
  tMs: number,
  replica: string,
  action: string,
  more: Record<string, unknown> = {},
): RunEvent => ({
  type: 'fault',
  tMs,
  replica,
  action,
  ...more,
});

function phase(
  name: string,
  startS: number,
  endS: number,
  opened: Record<string, [number, boolean]>,
): PhaseSummary {
  const replicas: PhaseSummary['replicas'] = {};
  for (const [id, [n, up]] of Object.entries(opened))
    replicas[id] = { up, cpuMean: null, sessionsOpened: n, queries: 0, weight: 1 };
  return {
    name,
    startS,
    endS,
    survivors: Object.values(opened).filter(([, up]) => up).length,
    classes: {} as PhaseSummary['classes'],
    replicas,
    cpuMean: null,
    cpuCv: null,
  };
}

describe('degradedAt', () => {
  it('names what keeps K+ in force: a delay until its heal, a loss a heal of delay leaves', () => {
    const events = [
      fault(10_000, 'r3', 'delay', { ms: 100, jitter: 50 }),
      fault(10_000, 'r3', 'loss', { percent: 5 }),
      fault(20_000, 'r3', 'heal', { what: 'delay' }),
      fault(25_000, 'r1', 'throttle', { cpus: 0.1 }),
      fault(30_000, 'r3', 'heal'),
      fault(30_000, 'r2', 'down'),
    ];
    expect(degradedAt(events, 5000)).toEqual([]);
    expect(degradedAt(events, 10_000)).toEqual([
      { replica: 'r3', action: 'delay' },
      { replica: 'r3', action: 'loss' },
    ]);
    expect(degradedAt(events, 20_000)).toEqual([{ replica: 'r3', action: 'loss' }]);
    expect(degradedAt(events, 30_000)).toEqual([{ replica: 'r1', action: 'throttle' }]);
  });

  it("a throttle back to the run's quota ends the throttle", () => {
    const events = [
      fault(10_000, 'r2', 'throttle', { cpus: 0.1, runCpus: 0.25 }),
      fault(20_000, 'r2', 'throttle', { cpus: 0.05, runCpus: 0.25 }),
      fault(30_000, 'r2', 'throttle', { cpus: 0.25, runCpus: 0.25 }),
    ];
    expect(degradedAt(events, 20_000)).toEqual([{ replica: 'r2', action: 'throttle' }]);
    expect(degradedAt(events, 30_000)).toEqual([]);
  });

  it('a fault that failed degrades nothing', () => {
    expect(degradedAt([fault(1000, 'r1', 'delay', { ms: 50, error: 'no' })], 2000)).toEqual([]);
  });
});

describe('sessionShares', () => {
  const phases = [
    phase('ref', 10, 40, { r1: [20, true], r2: [20, true], r3: [20, true], r4: [20, true] }),
    phase('delay-1', 40, 70, { r1: [30, true], r2: [30, true], r3: [10, true], r4: [30, true] }),
    phase('down-1', 70, 100, { r1: [30, true], r2: [30, true], r3: [15, true], r4: [0, false] }),
  ];
  const events = [
    fault(40_000, 'r3', 'delay', { ms: 150 }),
    { type: 'detect', tMs: 50_000, replica: 'r3', state: 'down', via: 'session' },
    { type: 'detect', tMs: 52_000, replica: 'r3', state: 'up', via: 'health' },
    fault(70_000, 'r4', 'partition'),
    { type: 'detect', tMs: 76_000, replica: 'r4', state: 'down', via: 'health' },
  ] as RunEvent[];
  const shares = sessionShares(phases, events);

  it("each replica's share of the new sessions beside its weight's share over the replicas up", () => {
    expect(shares[0]?.replicas['r3']).toEqual({ share: 0.25, weightShare: 0.25, falseDowns: 0 });
    expect(shares[1]?.sessions).toBe(100);
    expect(shares[1]?.replicas['r3']).toEqual({ share: 0.1, weightShare: 0.25, falseDowns: 1 });
    expect(shares[2]?.replicas['r4']).toEqual({ share: 0, weightShare: null, falseDowns: 0 });
    expect(shares[2]?.replicas['r1']?.weightShare).toBe(0.3333);
  });

  it('names the degraded replica of a phase', () => {
    expect(shares.map((s) => s.degraded)).toEqual([
      [],
      [{ replica: 'r3', action: 'delay' }],
      [{ replica: 'r3', action: 'delay' }],
    ]);
  });
});

describe('over runs', () => {
  const run = (id: string, downMs: number, share: number): RunSummary =>
    ({
      runId: id,
      hangPath: {
        falseDowns: 0,
        faults: [
          {
            replica: 'r2',
            action: 'partition',
            injectedMs: 40_000,
            untilMs: 70_000,
            downMs,
            downVia: 'health',
            checkerMs: downMs,
            passiveMs: null,
            sessions: 4,
            waitP50Ms: downMs,
            waitMaxMs: downMs + 100,
            failed: 4,
            finished: 0,
            cut: 0,
            open: 0,
            shutdown: 4,
            connectsShut: 1,
            queryErrors: 4,
            queryTimeouts: 0,
            connectsFailed: 1,
          },
        ],
      },
      sessionShare: [
        {
          phase: 'delay-1',
          sessions: 100,
          degraded: [{ replica: 'r3', action: 'delay' }],
          replicas: { r3: { share, weightShare: 0.2, falseDowns: 0 } },
        },
        {
          phase: 'ref',
          sessions: 100,
          degraded: [],
          replicas: { r3: { share: 0.2, weightShare: 0.2, falseDowns: 0 } },
        },
      ],
    }) as unknown as RunSummary;

  it('pools each metric: median and IQR, and a 95 % interval of the mean from 3 runs', () => {
    expect(pooled([1, 2]).lo).toBeNull();
    const p = pooled([5900, 6000, 6100]);
    expect(p.median).toBe(6000);
    expect(p.mean).toBe(6000);
    expect(p.lo).toBeLessThan(6000);
    expect(p.hi).toBeGreaterThan(6000);
    const a = aggregateHang([run('a', 5900, 0.1), run('b', 6000, 0.12), run('c', 6100, 0.08)]);
    const f = a.hangPath?.faults[0];
    expect([f?.replica, f?.action, f?.occurrence, f?.runs, f?.missed]).toEqual(['r2', 'partition', 1, 3, 0]);
    expect(f?.downMs.median).toBe(6000);
    expect(f?.downMs.lo).not.toBeNull();
    expect(a.sessionShare?.[0]?.degraded).toEqual(['r3 delay']);
    expect(a.sessionShare?.[0]?.replicas['r3']?.share.median).toBe(0.1);
  });

  it('older runs have neither section', () => {
    expect(aggregateHang([{ runId: 'old' } as RunSummary])).toEqual({});
  });

  it('renders a row per fault and per phase, and a line per fault for the bench', () => {
    const g = {
      plan: 'p',
      strategy: 'plb',
      mixLabel: '25:75',
      runIds: ['a', 'b', 'c'],
      settingsLabel: '',
      complete: true,
      ...aggregateHang([run('a', 5900, 0.1), run('b', 6000, 0.12), run('c', 6100, 0.08)]),
    } as unknown as RunGroup;
    const wide = hangTable(g, { wide: true });
    expect(wide?.rows[0]?.slice(0, 6)).toEqual([
      'r2',
      'partition',
      '1',
      '6.00 [5.95..6.05]',
      expect.stringMatching(/\.\./),
      'health',
    ]);
    expect(hangTable(g, { wide: false })?.rows).toHaveLength(1);
    const share = shareTable(g, { wide: false });
    expect(share?.head).toEqual(['Phase', 'Degraded', 'r3', 'False downs']);
    expect(share?.rows[0]).toEqual(['delay-1', 'r3 delay', '10% / 20%', '0']);
    expect(hangLines(run('a', 5900, 0.1))).toEqual([
      'hang r2 partition: down after 5.9 s (health), 4 sessions on it waited p50 5.9 s, max 6.0 s, 4 shut down; 0 query timeouts, 1 connects failed',
    ]);
  });
});
