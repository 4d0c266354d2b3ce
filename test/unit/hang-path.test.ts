// The hang path on synthetic events: which faults cut a replica off and until when, detection by
// the checker and by the sessions, the sessions on it and their waits, false down detections.
import { describe, expect, it } from 'vitest';
import {
  hangFault,
  hangPath,
  storeRecords,
  unreachableSpans,
  type ReplicaRecords,
} from '../../src/metrics/summary/hang-path.js';
import { falseDownDetections } from '../../src/metrics/summary/detections.js';
import { MetricsStore } from '../../src/metrics/store/store.js';
import type { RunEvent } from '../../src/metrics/types.js';

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
const detect = (tMs: number, replica: string, state: 'up' | 'down', via = 'health'): RunEvent => ({
  type: 'detect',
  tMs,
  replica,
  state,
  via,
});
const none = (): ReplicaRecords => ({
  opened: [],
  closed: [],
  heard: [],
  queryErrors: [],
  connectsFailed: [],
});

describe('unreachableSpans', () => {
  it('a partition until its heal, a kill until the end; stacked and degrading faults add none', () => {
    const events = [
      fault(10_000, 'r3', 'delay', { ms: 100 }),
      fault(40_000, 'r2', 'partition'),
      fault(45_000, 'r2', 'reset'), // r2 is cut off already: no change
      fault(50_000, 'r1', 'down'),
      fault(55_000, 'r4', 'pause', { error: 'boom' }), // not applied
      fault(70_000, 'r2', 'heal'),
    ];
    expect(unreachableSpans(events, 100_000)).toEqual([
      { replica: 'r2', action: 'partition', injectedMs: 40_000, untilMs: 70_000 },
      { replica: 'r1', action: 'down', injectedMs: 50_000, untilMs: 100_000 },
    ]);
  });

  it('a replica cut twice has two spans', () => {
    const events = [
      fault(10_000, 'r2', 'stop'),
      fault(20_000, 'r2', 'rejoin'),
      fault(30_000, 'r2', 'pause'),
      fault(40_000, 'r2', 'unpause'),
    ];
    expect(unreachableSpans(events, 50_000).map((s) => [s.action, s.injectedMs, s.untilMs])).toEqual([
      ['stop', 10_000, 20_000],
      ['pause', 30_000, 40_000],
    ]);
  });
});

describe('hangFault', () => {
  const span = { replica: 'r2', action: 'partition', injectedMs: 40_000, untilMs: 70_000 };

  it('times detection by the checker and by the first failure a session met', () => {
    const events = [
      fault(40_000, 'r2', 'partition'),
      detect(43_000, 'r1', 'down'), // another replica
      detect(46_000, 'r2', 'down'),
      detect(71_000, 'r2', 'up'),
    ];
    const r = { ...none(), heard: [39_000, 44_500, 45_000] };
    const f = hangFault(span, events, r);
    expect(f.downMs).toBe(6000);
    expect(f.downVia).toBe('health');
    expect(f.checkerMs).toBe(6000);
    expect(f.passiveMs).toBe(4500);
  });

  it('a session that marked it down first: no checker time', () => {
    const f = hangFault(span, [detect(41_000, 'r2', 'down', 'session')], none());
    expect(f.downMs).toBe(1000);
    expect(f.downVia).toBe('session');
    expect(f.checkerMs).toBeNull();
    expect(f.passiveMs).toBeNull();
  });

  it('never marked down: every time null', () => {
    const f = hangFault(span, [], none());
    expect([f.downMs, f.downVia, f.checkerMs, f.passiveMs]).toEqual([null, null, null, null]);
  });

  it('the sessions on it at injection and how long each waited, capped at the heal', () => {
    const r: ReplicaRecords = {
      ...none(),
      opened: [1000, 2000, 30_000, 38_000, 39_000, 50_000],
      closed: [
        { openedMs: 1000, closedMs: 20_000, ending: 'finished' }, // gone before
        { openedMs: 2000, closedMs: 55_000, ending: 'failed' }, // waited 15 s
        { openedMs: 30_000, closedMs: 46_000, ending: 'failed' }, // waited 6 s
        { openedMs: 38_000, closedMs: 80_000, ending: 'finished' }, // outlived the partition
        { openedMs: 50_000, closedMs: 60_000, ending: 'failed' }, // opened after: not on it
      ],
    };
    // 39_000: opened and never closed (the run ended first).
    const f = hangFault(span, [], r);
    expect(f.sessions).toBe(4);
    expect(f.failed).toBe(2);
    expect(f.finished).toBe(0);
    expect(f.open).toBe(2);
    expect(f.waitP50Ms).toBe(15_000);
    expect(f.waitMaxMs).toBe(30_000);
  });

  it('counts query errors and timeouts, failed connects and shutdowns in the span only', () => {
    const r: ReplicaRecords = {
      ...none(),
      queryErrors: [
        { atMs: 39_000, timeout: true },
        { atMs: 55_000, timeout: true },
        { atMs: 56_000, timeout: false },
        { atMs: 75_000, timeout: true },
      ],
      connectsFailed: [50_000, 52_000, 90_000],
    };
    const events = [
      { type: 'note', tMs: 46_000, what: 'shutdown-sessions', replica: 'r2', sessions: 7, connects: 2 },
      { type: 'note', tMs: 46_000, what: 'shutdown-sessions', replica: 'r1', sessions: 3 },
    ] as RunEvent[];
    const f = hangFault(span, events, r);
    expect([f.queryErrors, f.queryTimeouts, f.connectsFailed]).toEqual([2, 1, 2]);
    expect([f.shutdown, f.connectsShut]).toEqual([7, 2]);
  });
});

describe('false down detections', () => {
  it('a slow replica taken for dead is false; the down a fault explains is not', () => {
    const events = [
      fault(10_000, 'r3', 'delay', { ms: 150 }),
      detect(12_000, 'r3', 'down', 'session'),
      detect(14_000, 'r3', 'up'),
      fault(40_000, 'r2', 'partition'),
      detect(46_000, 'r2', 'down'),
    ];
    expect(falseDownDetections(events)).toEqual([{ replica: 'r3', tMs: 12_000 }]);
    const h = hangPath(events, 100_000, () => new Map());
    expect(h.falseDowns).toBe(1);
    expect(h.faults.map((f) => [f.replica, f.downMs])).toEqual([['r2', 6000]]);
  });
});

describe('storeRecords', () => {
  it("reads the store's columns of the replicas asked for", () => {
    const s = new MetricsStore(['r1', 'r2']);
    s.sessionOpened('premium', 'r2', 1000, 2);
    s.sessionOpened('freemium', 'r1', 1100, 2);
    s.sessionClosed('premium', 'r2', 1000, 9000, 'failed');
    s.queryFailed('premium', 'r2', 9000, 'query on r2 failed: Query read timeout');
    s.queryFailed('freemium', 'r2', 9100, 'query on r2 failed: Connection terminated unexpectedly');
    s.replicaFailure('r2', 5000, 'slow', 'health');
    s.replicaFailure('r2', 6000, 'slow', 'connect');
    s.replicaFailure('r2', 9000, 'slow', 'session');
    const r = storeRecords(s, new Set(['r2'])).get('r2');
    expect(r?.opened).toEqual([1000]);
    expect(r?.closed).toEqual([{ openedMs: 1000, closedMs: 9000, ending: 'failed' }]);
    expect(r?.queryErrors).toEqual([
      { atMs: 9000, timeout: true },
      { atMs: 9100, timeout: false },
    ]);
    expect(r?.heard).toEqual([6000, 9000]);
    expect(r?.connectsFailed).toEqual([6000]);
  });
});
