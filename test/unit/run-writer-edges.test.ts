// The run writer's edges: an interrupted run, a run directory that does not load (errors name
// the file), detections against the faults, weights that change within a phase.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isPlbError } from '../../src/core/errors.js';
import { loadRun } from '../../src/metrics/store/load-run.js';
import { createRunWriter } from '../../src/metrics/store/run-writer.js';
import { detectionCounts, detectionRecords } from '../../src/metrics/summary/detections.js';

import { feed, options } from '../helpers/run-writer-fixture.js';

const root = mkdtempSync(join(tmpdir(), 'plb-metrics-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('run writer: interrupted run', () => {
  const out = join(root, 'interrupted');
  const w = createRunWriter({ ...options(out), runId: 'cut' });
  w.writeConfig({ seed: 42 });
  feed(w, 45_500);
  const summary = w.finish(45_500, false);

  it('still writes summary.json, marked incomplete', () => {
    expect(summary.complete).toBe(false);
    expect(summary.phases.map((p) => [p.name, p.endS])).toEqual([
      ['ref', 30],
      ['down-1', 45.5],
    ]);
    expect(existsSync(join(w.dir, 'INCOMPLETE'))).toBe(true);
    expect(existsSync(join(w.dir, 'RUNNING'))).toBe(false);
    const run = loadRun(w.dir);
    expect(run.status).toBe('incomplete');
    expect(run.timeline).toHaveLength(45);
    expect(run.summary.phases[1]?.classes.premium.queries).toBe(1550);
  });

  it('an explicit run id that exists is refused', () => {
    expect(() => createRunWriter({ ...options(out), runId: 'cut' })).toThrow(/already exists/);
  });
});

describe('loadRun errors name the file', () => {
  const expectInvalid = (dir: string, pattern: RegExp): void => {
    try {
      loadRun(dir);
      expect.unreachable();
    } catch (err) {
      expect(isPlbError(err, 'RUN_DIR_INVALID')).toBe(true);
      expect((err as Error).message).toMatch(pattern);
    }
  };

  it('running run: no summary.json yet, rebuilt and said to be still running', () => {
    const w = createRunWriter({ ...options(join(root, 'errs')), runId: 'live' });
    w.writeConfig({});
    const live = loadRun(w.dir);
    expect(live.status).toBe('incomplete');
    expect(live.summary.rebuilt).toBe(true);
    expect(live.summary.errors?.[0]).toMatch(new RegExp(`^still running or hung \\(pid ${process.pid}\\)`));
    w.finish(1_000, true);
    expect(loadRun(w.dir).status).toBe('complete');
    writeFileSync(join(w.dir, 'events.jsonl'), '{"type":"note","tMs":1}\nnot json\n');
    expectInvalid(w.dir, /events\.jsonl: line 2 is not valid JSON/);
    writeFileSync(join(w.dir, 'events.jsonl'), '');
    writeFileSync(join(w.dir, 'timeline.csv'), 't_s,phase,premium_count\n0,warmup\n');
    expectInvalid(w.dir, /timeline\.csv: line 2: 2 cells/);
    rmSync(join(w.dir, 'config.json'));
    expectInvalid(w.dir, /config\.json: missing/);
    rmSync(join(w.dir, 'summary.json'));
    writeFileSync(join(w.dir, 'RUNNING'), '{}\n');
    rmSync(join(w.dir, 'timeline.csv'));
    expectInvalid(w.dir, /timeline\.csv: missing/);
    expectInvalid(join(root, 'nope'), /not a directory/);
  });

  it('bad options name the field', () => {
    expect(() => createRunWriter({ ...options(root), replicas: [] })).toThrow(/replicas/);
    expect(() => createRunWriter({ ...options(root), replicas: ['r1', 'r1'] })).toThrow(
      /replicas has duplicates/,
    );
    expect(() => createRunWriter({ ...options(root), warmupS: -1 })).toThrow(/warmupS/);
  });
});

describe('detectionCounts', () => {
  it('counts every detection and flags those no injected fault explains', () => {
    expect(
      detectionCounts([
        { type: 'detect', tMs: 5_000, replica: 'r3', state: 'down' }, // overload taken for death
        { type: 'detect', tMs: 9_000, replica: 'r3', state: 'up' },
        { type: 'fault', tMs: 10_000, replica: 'r1', action: 'down' },
        { type: 'detect', tMs: 10_200, replica: 'r1', state: 'down' },
        { type: 'fault', tMs: 20_000, replica: 'r1', action: 'rejoin' },
        { type: 'detect', tMs: 22_000, replica: 'r1', state: 'up' },
        { type: 'fault', tMs: 25_000, replica: 'r2', action: 'throttle' },
      ]),
    ).toEqual({ down: 2, up: 2, unexplained: 2 });
  });
});

describe('detectionRecords', () => {
  it('first matching detect after each fault, before the next fault on that replica', () => {
    const records = detectionRecords([
      { type: 'fault', tMs: 10_000, replica: 'r1', action: 'down' },
      { type: 'detect', tMs: 9_000, replica: 'r1', state: 'down' },
      { type: 'detect', tMs: 11_000, replica: 'r2', state: 'down' },
      { type: 'fault', tMs: 20_000, replica: 'r1', action: 'rejoin' },
      { type: 'detect', tMs: 23_000, replica: 'r1', state: 'up' },
      { type: 'fault', tMs: 25_000, replica: 'r2', action: 'throttle' },
      { type: 'fault', tMs: 30_000, replica: 'r1', action: 'pause' },
      { type: 'detect', tMs: 30_000, replica: 'r1', state: 'down' },
    ]);
    expect(records).toEqual([
      { replica: 'r1', action: 'down', injectedMs: 10_000, detectedMs: null, delayMs: null },
      { replica: 'r1', action: 'rejoin', injectedMs: 20_000, detectedMs: 23_000, delayMs: 3_000 },
      { replica: 'r1', action: 'pause', injectedMs: 30_000, detectedMs: 30_000, delayMs: 0 },
    ]);
  });
});

describe('run writer: a weight that changes within a phase', () => {
  it('each phase gets the mean of the configured weights the router reported in it', () => {
    const w = createRunWriter(options(join(root, 'weights')));
    w.writeConfig({ seed: 1, strategy: 'wlc' });
    w.event({ type: 'run', tMs: 0, state: 'started' });
    const up = { premium: 0, freemium: 0, role: 'shared', healthy: true };
    for (let t = 0; t < 60_000; t += 1000) {
      if (t === 30_000) w.event({ type: 'fault', tMs: t, replica: 'r2', action: 'down' });
      // r1 is drained half-way through down-1 (a lag-derived weight, say).
      w.recorder.replicaState(t + 900, {
        r1: { ...up, weight: t < 45_000 ? 1 : 0.5 },
        r2: { ...up, healthy: t < 30_000, weight: 2 },
        r3: up,
      });
      w.tick(t + 1000);
    }
    const summary = w.finish(60_000, true);
    const weight = (phase: string, id: string) =>
      summary.phases.find((p) => p.name === phase)?.replicas[id]?.weight;
    expect([weight('ref', 'r1'), weight('ref', 'r2'), weight('ref', 'r3')]).toEqual([1, 2, 1]);
    expect(weight('down-1', 'r1')).toBe(0.75);
  });
});
