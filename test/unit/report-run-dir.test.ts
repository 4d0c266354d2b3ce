import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPlbError } from '../../src/core/errors.js';
import { loadRun, parseEvents } from '../../src/metrics/store/load-run.js';
import { parseTimeline } from '../../src/metrics/store/timeline.js';
import { writeReports } from '../../src/report/report.js';
import { findRunDirs } from '../../src/report/run-dir.js';

const FIXTURES = join(import.meta.dirname, '../fixtures/runs/demo-cascade');

const thrown = (f: () => unknown): Error => {
  try {
    f();
  } catch (err) {
    return err as Error;
  }
  throw new Error('did not throw');
};

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
    expect(row.replicas.r1).toEqual({
      cpu: null,
      premium: 0,
      freemium: 0,
      role: 'premium',
      healthy: false,
      unreachable: 0,
      overloaded: 0,
      slow: 0,
      lagMs: null,
      lagBytes: null,
    });
    expect(row.replicas.r3?.role).toBe('premium');
    expect(row.classes.premium?.p95Ms).toBeGreaterThan(0);
  });
});

describe('parsers', () => {
  it('skips an events line cut off by an interrupted run', () => {
    const text =
      '{"type":"run","tMs":0,"state":"started"}\n{"type":"fault","tMs":5000,"replica":"r1","action":"down"}\n{"type":"det';
    expect(parseEvents(text).map((e) => e.type)).toEqual(['run', 'fault']);
    // A whole line that does not parse is an error, not a cut-off.
    expect(() => parseEvents('{"type":"det\n')).toThrow('line 1 is not valid JSON');
  });

  it('reads empty cells as null and skips a short last line', () => {
    const csv =
      't_s,phase,premium_p95_ms,premium_count,r1_cpu,r1_role,r1_healthy\n0,ref,,3,0.5,mixed,1\n1,ref,,,,,\n2,ref,4';
    const rows = parseTimeline(csv);
    expect(Object.keys(rows[0]?.replicas ?? {})).toEqual(['r1']);
    expect(rows).toHaveLength(2);
    expect(rows[1]?.replicas.r1).toEqual({
      cpu: null,
      premium: null,
      freemium: null,
      role: null,
      healthy: null,
      unreachable: 0,
      overloaded: 0,
      slow: 0,
      lagMs: null,
      lagBytes: null,
    });
    expect(rows[0]?.classes.premium).toMatchObject({ p95Ms: null, count: 3 });
    expect(rows[0]?.replicas.r1).toEqual({
      cpu: 0.5,
      premium: null,
      freemium: null,
      role: 'mixed',
      healthy: true,
      unreachable: 0,
      overloaded: 0,
      slow: 0,
      lagMs: null,
      lagBytes: null,
    });
    // The same short line with its newline was written whole: an error.
    expect(() => parseTimeline(`${csv}\n`)).toThrow('line 4: 3 cells, header has 7');
  });

  it('names the file and the missing column', () => {
    expect(() => parseTimeline('time,phase\n0,ref')).toThrow('line 1: header must start with t_s,phase');
    const dir = mkdtempSync(join(tmpdir(), 'plb-report-cols-'));
    try {
      cpSync(join(FIXTURES, 'demo-cascade-rr-1'), dir, { recursive: true });
      writeFileSync(join(dir, 'timeline.csv'), 'time,phase\n0,ref\n');
      const err = thrown(() => loadRun(dir));
      expect(isPlbError(err, 'RUN_DIR_INVALID')).toBe(true);
      expect(err.message).toBe(`${join(dir, 'timeline.csv')}: line 1: header must start with t_s,phase`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('findRunDirs', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'plb-report-dirs-'));
    cpSync(join(FIXTURES, 'demo-cascade-rr-1'), join(dir, 'matrix', 'a'), { recursive: true });
    cpSync(join(FIXTURES, 'demo-cascade-rr-2'), join(dir, 'matrix', 'b'), { recursive: true });
    cpSync(join(FIXTURES, 'demo-cascade-rr-3'), join(dir, 'deep', 'x', 'y', 'c'), { recursive: true });
    mkdirSync(join(dir, 'broken'));
    writeFileSync(join(dir, 'broken', 'timeline.csv'), 't_s,phase\n');
    mkdirSync(join(dir, 'live'));
    writeFileSync(join(dir, 'live', 'RUNNING'), '{}\n');
    cpSync(join(FIXTURES, 'demo-cascade-rr-1'), join(dir, 'badjson'), { recursive: true });
    writeFileSync(join(dir, 'badjson', 'summary.json'), '{"schemaVersion": 1, "runId": 1}');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('expands a directory of run directories', () => {
    expect(findRunDirs([join(dir, 'matrix')])).toEqual([join(dir, 'matrix', 'a'), join(dir, 'matrix', 'b')]);
  });

  it('searches 3 levels deep', () => {
    expect(findRunDirs([join(dir, 'deep')])).toEqual([join(dir, 'deep', 'x', 'y', 'c')]);
    expect(findRunDirs([dir])).not.toContain(join(dir, 'deep', 'x', 'y', 'c'));
  });

  it('says when a run stopped before its summary', () => {
    const err = thrown(() => findRunDirs([join(dir, 'broken')]));
    expect(isPlbError(err, 'RUN_DIR_INVALID')).toBe(true);
    expect(err.message).toMatch(/no run directory \(summary.json or RUNNING\) in/);
    expect((err as { hint?: string }).hint).toMatch(/stopped before it wrote its summary/);
  });

  it('lists a directory with a RUNNING marker (a crashed run) instead of dropping it', () => {
    expect(findRunDirs([join(dir, 'live')])).toEqual([join(dir, 'live')]);
    expect(findRunDirs([dir])).toContain(join(dir, 'live'));
  });

  it('names the bad summary field', () => {
    const err = thrown(() => loadRun(join(dir, 'badjson')));
    expect(isPlbError(err, 'RUN_DIR_INVALID')).toBe(true);
    expect(err.message).toMatch(/summary.json: runId must be a string/);
  });
});

describe('an incomplete run', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'plb-report-incomplete-'));
    cpSync(join(FIXTURES, 'demo-cascade-plb-1'), join(dir, 'cut'), { recursive: true });
    const file = join(dir, 'cut', 'summary.json');
    const s = JSON.parse(readFileSync(file, 'utf8')) as { complete: boolean };
    s.complete = false;
    writeFileSync(file, JSON.stringify(s));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is reportable and says it did not finish', async () => {
    const out = await writeReports([dir], { format: 'json', html: true });
    expect(out.runs.map((r) => r.status)).toEqual(['incomplete']);
    expect(out.groups).toHaveLength(1);
    const html = join(dir, 'cut', 'report.html');
    expect(existsSync(html)).toBe(true);
    expect(readFileSync(html, 'utf8')).toMatch(/This run did not finish/);
  });
});
