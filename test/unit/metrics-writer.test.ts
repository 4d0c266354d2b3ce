// The run writer on a complete synthetic run: every file of the run directory, as written.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRun, readPhaseHistogram } from '../../src/metrics/store/load-run.js';
import { createRunWriter, histogramFiles, makeRunId } from '../../src/metrics/store/run-writer.js';
import type { RunWriter } from '../../src/metrics/types.js';

import { feed, options, startedAt } from '../helpers/run-writer-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'plb-metrics-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('makeRunId', () => {
  it('UTC date, time, strategy and plan slugs', () => {
    expect(makeRunId('plb', 'demo-cascade', startedAt)).toBe('20261130-051500-plb-demo-cascade');
    expect(makeRunId('RR', 'Paper single fault!', startedAt)).toBe('20261130-051500-rr-paper-single-fault');
  });
});

describe('run writer: complete run', () => {
  const w = createRunWriter(options(root));
  w.writeConfig({ seed: 42, strategy: 'plb' });
  let progress: ReturnType<RunWriter['progress']> | undefined;
  let runningSeen = false;
  feed(w, 60_000, (t) => {
    if (t === 35_000) {
      progress = w.progress(t, 5);
      runningSeen = existsSync(join(w.dir, 'RUNNING')) && !existsSync(join(w.dir, 'summary.json'));
    }
  });
  const summary = w.finish(60_000, true);

  it('creates the run directory named from the clock, strategy and plan', () => {
    expect(w.dir).toBe(join(root, '20261130-051500-plb-demo-cascade'));
    expect(runningSeen).toBe(true);
    expect(existsSync(join(w.dir, 'RUNNING'))).toBe(false);
    expect(existsSync(join(w.dir, 'INCOMPLETE'))).toBe(false);
    expect(JSON.parse(readFileSync(join(w.dir, 'config.json'), 'utf8'))).toEqual({
      schemaVersion: 1,
      seed: 42,
      strategy: 'plb',
    });
  });

  it('progress: last whole seconds and the live phase', () => {
    expect(progress).toEqual({
      phase: 'down-1',
      premium: { p95: 2, goodput: 100 },
      freemium: { p95: 1.5, goodput: 100 },
    });
  });

  it('events.jsonl has one line per event', () => {
    const lines = readFileSync(join(w.dir, 'events.jsonl'), 'utf8').trim().split('\n');
    const events = lines.map((l) => JSON.parse(l) as { type: string; tMs: number; replica?: string });
    expect(events.map((e) => e.type)).toEqual(['run', 'failures', 'fault', 'failures', 'detect', 'failures']);
    expect(events.filter((e) => e.type === 'failures')).toEqual([
      { type: 'failures', tMs: 15_000, replica: 'r2', unreachable: 0, overloaded: 1, slow: 0 },
      { type: 'failures', tMs: 30_000, replica: 'r1', unreachable: 2, overloaded: 0, slow: 0 },
      { type: 'failures', tMs: 40_000, replica: 'r3', unreachable: 0, overloaded: 0, slow: 1 },
    ]);
  });

  it('timeline.csv: one row per whole second with class and replica columns', () => {
    const run = loadRun(w.dir);
    expect(run.timeline).toHaveLength(60);
    expect(run.timeline.map((r) => r.tS)).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect(run.timeline[0]?.phase).toBe('warmup');
    expect(run.timeline[10]?.phase).toBe('steady');
    expect(run.timeline[30]?.phase).toBe('down-1');
    const r15 = run.timeline[15];
    expect(r15?.classes.premium).toEqual({
      count: 100,
      goodput: 100,
      p50Ms: 1,
      p95Ms: 1,
      errors: 0,
      sessionsOpened: 0,
      sessionsFailed: 0,
      admissionFailures: 0,
      connectP95Ms: null,
    });
    expect(r15?.classes.freemium).toMatchObject({ p95Ms: 0.5, sessionsOpened: 1, connectP95Ms: 1 });
    expect(r15?.replicas['r1']).toEqual({
      cpu: 0.5,
      premium: 1,
      freemium: 0,
      role: 'premium',
      healthy: true,
      unreachable: 0,
      overloaded: 0,
      slow: 0,
      // A read-only run: no lag.
      lagMs: null,
      lagBytes: null,
    });
    expect(r15?.replicas['r2']).toMatchObject({ overloaded: 1, unreachable: 0 });
    expect(r15?.harness).toEqual({ cpu: 0.25, loopP99Ms: 2, loopMaxMs: 2, hostBusy: 0.6, hostSteal: 0.01 });
    expect(run.timeline[20]?.harness.loopMaxMs).toBe(40);
    const r30 = run.timeline[30];
    expect(r30?.classes.premium).toMatchObject({
      count: 100,
      errors: 1,
      sessionsFailed: 1,
      admissionFailures: 2,
    });
    expect(r30?.replicas['r1']?.cpu).toBeNull();
    expect(r30?.replicas['r1']?.unreachable).toBe(2);
    expect(r30?.classes.premium?.connectP95Ms).toBeCloseTo(4, 2);
    expect(run.timeline[33]?.replicas['r1']?.healthy).toBe(false);
    const header = readFileSync(join(w.dir, 'timeline.csv'), 'utf8').split('\n')[0];
    expect(
      header?.startsWith(
        't_s,phase,harness_cpu,loop_p99_ms,loop_max_ms,host_busy,host_steal,premium_count,premium_goodput,premium_p50_ms,premium_p95_ms',
      ),
    ).toBe(true);
    expect(
      header?.endsWith(
        'r3_cpu,r3_premium,r3_freemium,r3_role,r3_healthy,r3_unreachable,r3_overloaded,r3_slow,r3_lag_ms,r3_lag_bytes',
      ),
    ).toBe(true);
  });

  it('summary: phases, per class and per replica values', () => {
    expect(summary).toMatchObject({
      schemaVersion: 1,
      runId: '20261130-051500-plb-demo-cascade',
      strategy: 'plb',
      plan: 'Demo Cascade',
      seed: 42,
      clients: 8,
      complete: true,
      startedAt: '2026-11-30T05:15:00.000Z',
      durationS: 60,
    });
    expect(summary.phases.map((p) => [p.name, p.startS, p.endS, p.survivors])).toEqual([
      ['ref', 10, 30, 3],
      ['down-1', 30, 60, 2],
    ]);
    const [ref, down] = summary.phases;
    expect(ref?.classes.premium).toEqual({
      p50: 1,
      p95: 1,
      p99: 1,
      queries: 2000,
      errors: 0,
      goodput: 100,
      goodputRetention: null,
      p95Inflation: null,
      sessionsOpened: 0,
      sessionsClosed: 0,
      sessionsFailed: 0,
      sessionsCut: 0,
      admissionFailures: 0,
      lifetimeP50Ms: null,
      lifetimeP95Ms: null,
      connectP50Ms: null,
      connectP95Ms: null,
    });
    expect(ref?.classes.freemium).toMatchObject({
      queries: 2000,
      sessionsOpened: 20,
      sessionsClosed: 20,
      lifetimeP50Ms: 500,
      connectP50Ms: 1,
      connectP95Ms: 1,
    });
    expect(down?.classes.premium).toEqual({
      p50: 2,
      p95: 2,
      p99: 2,
      queries: 3000,
      errors: 1,
      goodput: 100,
      goodputRetention: 1,
      p95Inflation: 1,
      sessionsOpened: 1,
      sessionsClosed: 3,
      sessionsFailed: 1,
      sessionsCut: 1,
      admissionFailures: 2,
      // Only the session that finished: the failed and the cut one are counted apart.
      lifetimeP50Ms: 28_980,
      lifetimeP95Ms: 28_980,
      connectP50Ms: 4.001, // HdrHistogram's 3 significant digits
      connectP95Ms: 4.001,
    });
    expect(down?.classes.freemium).toMatchObject({ p95: 1.5, goodputRetention: 1, p95Inflation: 2 });
    const none = { unreachable: 0, overloaded: 0, slow: 0 };
    const extra = (p50Ms: number | null, p95Ms: number | null, longestQuietS: number) => ({
      p50Ms,
      p95Ms,
      longestQuietS,
      weight: 1,
    });
    expect(ref?.replicas).toEqual({
      r1: { up: true, cpuMean: 0.5, sessionsOpened: 0, queries: 2000, ...none, ...extra(1, 1, 20) },
      r2: {
        up: true,
        cpuMean: 0.3,
        sessionsOpened: 0,
        queries: 0,
        ...none,
        overloaded: 1,
        ...extra(null, null, 20),
      },
      r3: { up: true, cpuMean: 0.4, sessionsOpened: 20, queries: 2000, ...none, ...extra(0.5, 0.5, 1) },
    });
    // ref: queries 2000/0/2000 (spread 1.5), CPU 0.5/0.3/0.4 (1.25), r1 and r2 opened nothing in 20 s.
    expect(ref?.signals).toMatchObject({
      queryShareSpread: 1.5,
      cpuShareSpread: 1.25,
      silent: ['r1', 'r2'],
      weightRatio: { r1: 0, r2: 0, r3: 3 },
      weightDeviation: 2,
      alerts: ['queryShareSpread', 'silent', 'weightDeviation'],
    });
    expect(down?.replicas['r1']).toEqual({
      up: false,
      cpuMean: null,
      sessionsOpened: 0,
      queries: 0,
      ...none,
      unreachable: 2,
      ...extra(null, null, 30),
    });
    expect(down?.replicas['r2']).toMatchObject({
      up: true,
      cpuMean: 0.7,
      sessionsOpened: 1,
      queries: 3000,
      ...none,
    });
    expect(down?.replicas['r2']?.p95Ms).toBeGreaterThan(0);
    expect(down?.replicas['r3']).toMatchObject({ slow: 1 });
    expect(ref?.harness).toEqual({
      cpuMean: 0.25,
      cpuMax: 0.25,
      loopP50Ms: 2,
      loopP99Ms: 2,
      loopMaxMs: 40,
      saturated: false,
      host: { busyMean: 0.6, busyMax: 0.6, stealMean: 0.01 },
    });
    // 100 of 3000 ticks in down-1 were 30 ms late: its p99 is over the 20 ms limit.
    expect(down?.harness).toMatchObject({ loopP50Ms: 2, loopP99Ms: 30.015, loopMaxMs: 30, saturated: true });
    expect(summary.detectionCounts).toEqual({ down: 1, up: 0, unexplained: 0 });
    // ref: mean(0.5, 0.3, 0.4) = 0.4, cv = sqrt(0.02/3)/0.4; down-1 over r2, r3: 0.55, 0.15/0.55.
    expect(ref?.cpuMean).toBe(0.4);
    expect(ref?.cpuCv).toBe(0.2041);
    expect(down?.cpuMean).toBe(0.55);
    expect(down?.cpuCv).toBe(0.2727);
    expect(summary.detection).toEqual([
      { replica: 'r1', action: 'down', injectedMs: 30_000, detectedMs: 32_500, delayMs: 2_500 },
    ]);
    expect(JSON.parse(readFileSync(join(w.dir, 'summary.json'), 'utf8'))).toEqual(summary);
  });

  it('summary: the fault interval (first down to the end here) has the stats of a phase', () => {
    const down = summary.phases[1]!;
    const fault = summary.faultInterval!;
    expect([fault.name, fault.startS, fault.endS, fault.survivors]).toEqual(['fault', 30, 60, 2]);
    // One down phase to the end: the interval is that phase, counted from the same raw columns.
    expect(fault.classes).toEqual(down.classes);
    expect(fault.classes.premium.goodputRetention).toBe(down.classes.premium.goodputRetention);
    expect([fault.cpuMean, fault.cpuCv]).toEqual([down.cpuMean, down.cpuCv]);
    expect(fault.replicas['r1']?.up).toBe(false);
  });

  it('histograms: one HdrHistogram log per class and phase', () => {
    expect(histogramFiles(w.dir)).toEqual([
      'freemium-down-1.hlog',
      'freemium-ref.hlog',
      'premium-down-1.hlog',
      'premium-ref.hlog',
    ]);
    const h = readPhaseHistogram(w.dir, 'premium', 'down-1');
    expect(h.totalCount).toBe(3000);
    expect(h.getValueAtPercentile(95)).toBe(2000);
  });

  it('finish twice returns the same summary; a default id clash gets a suffix', () => {
    expect(w.finish(70_000, false)).toBe(summary);
    const w2 = createRunWriter(options(root));
    expect(w2.dir).toBe(join(root, '20261130-051500-plb-demo-cascade-2'));
    w2.finish(0, true);
  });
});
