import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPlbError } from '../../src/errors.js';
import { findRunDirs, loadRun, parseEvents, parseTimeline } from '../../src/report/run-dir.js';

const FIXTURES = join(import.meta.dirname, '../fixtures/runs/demo-cascade');

describe('loadRun on a fixture', () => {
  const run = loadRun(join(FIXTURES, 'demo-cascade-plb-1'));

  it('reads config, summary, events and timeline', () => {
    expect(run.config.strategy).toBe('plb');
    expect((run.config.plan as { name: string }).name).toBe('demo-cascade');
    expect(run.summary.runId).toBe('demo-cascade-plb-1');
    expect(run.events.filter((e) => e.type === 'fault').map((e) => [e.tMs, e.replica, e.action])).toEqual([
      [20000, 'r1', 'down'],
      [35000, 'r2', 'down'],
      [50000, 'r1', 'rejoin'],
    ]);
    expect(run.replicaIds).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
    expect(run.timeline).toHaveLength(60);
  });

  it('parses a timeline row into classes and replicas', () => {
    const row = run.timeline[25]!;
    expect(row.tS).toBe(25);
    expect(row.phase).toBe('down-1');
    expect(row.replicas.r1).toEqual({ cpu: null, premium: 0, freemium: 0, role: 'premium', healthy: false });
    expect(row.replicas.r3?.role).toBe('premium');
    expect(row.classes.premium.p95Ms).toBeGreaterThan(0);
  });
});

describe('parsers', () => {
  it('skips an events line cut off by an interrupted run', () => {
    const text =
      '{"type":"run","tMs":0,"state":"started"}\n{"type":"fault","tMs":5000,"replica":"r1","action":"down"}\n{"type":"det';
    expect(parseEvents(text).map((e) => e.type)).toEqual(['run', 'fault']);
  });

  it('reads empty cells as null and skips a short last line', () => {
    const csv =
      't_s,phase,premium_p95_ms,premium_count,r1_cpu,r1_role,r1_healthy\n0,ref,,3,0.5,mixed,1\n1,ref,,,,,\n2,ref,4';
    const { rows, replicaIds } = parseTimeline(csv);
    expect(replicaIds).toEqual(['r1']);
    expect(rows).toHaveLength(2);
    expect(rows[1]?.replicas.r1).toEqual({ cpu: null, premium: 0, freemium: 0, role: '', healthy: null });
    expect(rows[0]?.classes.premium).toMatchObject({ p95Ms: null, count: 3 });
    expect(rows[0]?.replicas.r1).toEqual({ cpu: 0.5, premium: 0, freemium: 0, role: 'mixed', healthy: true });
  });

  it('names the missing column', () => {
    expect(() => parseTimeline('time,phase\n0,ref', 'x/timeline.csv')).toThrow(
      'x/timeline.csv: header has no column t_s',
    );
  });
});

describe('findRunDirs', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'plb-report-dirs-'));
    cpSync(join(FIXTURES, 'demo-cascade-rr-1'), join(dir, 'matrix', 'a'), { recursive: true });
    cpSync(join(FIXTURES, 'demo-cascade-rr-2'), join(dir, 'matrix', 'b'), { recursive: true });
    mkdirSync(join(dir, 'broken'));
    writeFileSync(join(dir, 'broken', 'timeline.csv'), 't_s,phase\n');
    mkdirSync(join(dir, 'badjson'));
    writeFileSync(join(dir, 'badjson', 'summary.json'), '{"runId": 1}');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('expands a directory of run directories', () => {
    expect(findRunDirs([join(dir, 'matrix')])).toEqual([join(dir, 'matrix', 'a'), join(dir, 'matrix', 'b')]);
  });

  it('says when a run stopped before its summary', () => {
    let err: unknown;
    try {
      findRunDirs([join(dir, 'broken')]);
    } catch (e) {
      err = e;
    }
    expect(isPlbError(err, 'RUN_DIR_INVALID')).toBe(true);
    expect((err as Error).message).toMatch(/no summary.json in/);
  });

  it('names the bad summary field', () => {
    expect(() => loadRun(join(dir, 'badjson'))).toThrow(/summary.json: runId must be a string/);
  });
});
