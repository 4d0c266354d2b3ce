// Issue 11, item 4: a fault that did not happen invalidates its phase and the run's completeness;
// incomplete runs are listed, not averaged with complete ones unless asked.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRun } from '../../src/metrics/store/load-run.js';
import { createRunWriter } from '../../src/metrics/store/run-writer.js';
import { markInvalidPhases } from '../../src/metrics/summary/detections.js';
import type { PhaseSummary, RunSummary } from '../../src/run-format/summary.js';
import { aggregateRuns } from '../../src/report/aggregate.js';
import { renderReport } from '../../src/report/tables/render.js';

const root = mkdtempSync(join(tmpdir(), 'plb-honest-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function run(id: string, opts: { failKill?: boolean; errors?: string[] } = {}): RunSummary {
  const w = createRunWriter({
    outDir: root,
    runId: id,
    strategy: 'plb',
    plan: 'p',
    seed: 1,
    clients: 2,
    mix: { premium: 25, freemium: 75 },
    replicas: ['r1', 'r2'],
    refWindowS: 5,
    warmupS: 0,
  });
  w.writeConfig({});
  for (let t = 0; t < 20_000; t += 10) {
    if (t === 10_000)
      w.event({
        type: 'fault',
        tMs: t,
        replica: 'r1',
        action: 'down',
        ...(opts.failKill ? { error: 'r1 is still up after down' } : {}),
      });
    if (t === 15_000) w.event({ type: 'fault', tMs: t, replica: 'r1', action: 'rejoin' });
    w.recorder.queryDone('premium', 'r2', t, 1);
    w.recorder.queryDone('freemium', 'r2', t, 2);
    if ((t + 10) % 1000 === 0) w.tick(t + 10);
  }
  return w.finish(20_000, true, opts.errors);
}

describe('honest completion', () => {
  it('a failed kill: its phase is invalid, the run incomplete with the reason, marker written', () => {
    const s = run('failed-kill', { failKill: true });
    expect(s.complete).toBe(false);
    expect(s.errors).toEqual(['down r1 at 10 s failed: r1 is still up after down']);
    expect(s.phases.map((p) => [p.name, p.invalid ?? null])).toEqual([
      ['ref', null],
      ['down-1', 'down r1 at 10 s failed: r1 is still up after down'],
      ['rejoin-1', null],
    ]);
    const dir = join(root, 'failed-kill');
    expect(readFileSync(join(dir, 'INCOMPLETE'), 'utf8')).toMatch(/still up/);
    expect(loadRun(dir).status).toBe('incomplete');
    const text = renderReport(aggregateRuns([s]));
    expect(text).toContain('down-1 (invalid)');
    expect(text).toContain('invalid phase down-1: failed-kill: down r1 at 10 s failed');
  });

  it('an error given to finish makes the run incomplete with the error recorded', () => {
    const s = run('errored', { errors: ['run: cpu sampler exploded'] });
    expect(s.complete).toBe(false);
    expect(s.errors).toEqual(['run: cpu sampler exploded']);
    expect(existsSync(join(root, 'errored', 'INCOMPLETE'))).toBe(true);
  });

  it('a clean run is complete and has no errors field (summary.json stays as before)', () => {
    const s = run('clean');
    expect(s.complete).toBe(true);
    expect('errors' in s).toBe(false);
    expect(readdirSync(join(root, 'clean'))).not.toContain('INCOMPLETE');
  });

  it('incomplete runs stay out of the medians of complete ones unless asked, and are listed', () => {
    const clean = run('rep-1');
    const bad = { ...run('rep-2', { errors: ['run: boom'] }) };
    bad.phases = bad.phases.map((p) => ({
      ...p,
      classes: { ...p.classes, premium: { ...p.classes.premium, goodput: 999 } },
    }));
    const [g] = aggregateRuns([clean, bad]);
    expect(g?.runIds).toEqual(['rep-1']);
    expect(g?.excluded).toEqual(['rep-2']);
    expect(g?.complete).toBe(true);
    expect(g?.phases[0]?.classes.premium.goodput.median).toBe(clean.phases[0]?.classes.premium.goodput);
    const text = renderReport([g!]);
    expect(text).toContain('incomplete run rep-2: run: boom');
    expect(text).toContain('left out of the medians (incomplete; --include-incomplete adds them): rep-2');
    const [all] = aggregateRuns([clean, bad], { includeIncomplete: true });
    expect(all?.runIds).toEqual(['rep-1', 'rep-2']);
    expect(all?.complete).toBe(false);
    // Alone, an incomplete run still shows (nothing to mix it into).
    expect(aggregateRuns([bad])[0]?.runIds).toEqual(['rep-2']);
  });
});

describe('markInvalidPhases at a phase boundary', () => {
  it('a failed fault invalidates the phases after its boundary, not the one that ends there', () => {
    // Phase bounds are rounded to the ms: a fault at 1003.6 ms bounds ref at 1.004 s.
    const phases = [
      { name: 'ref', startS: 0.504, endS: 1.004 },
      { name: 'down-1', startS: 1.004, endS: 3 },
    ] as PhaseSummary[];
    const reasons = markInvalidPhases(phases, [
      { type: 'fault', tMs: 1003.6, replica: 'r1', action: 'down', error: 'r1 is still up' },
    ]);
    expect(reasons).toEqual(['down r1 at 1.004 s failed: r1 is still up']);
    expect(phases[0]?.invalid).toBeUndefined();
    expect(phases[1]?.invalid).toBe('down r1 at 1.004 s failed: r1 is still up');
  });
});
