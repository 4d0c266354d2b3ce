import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import Report from '../../src/commands/report.js';
import { isPlbError } from '../../src/core/errors.js';
import { aggregateRuns } from '../../src/report/aggregate.js';
import { writeReports } from '../../src/report/report.js';
import { loadRun } from '../../src/metrics/store/load-run.js';
import {
  checkTolerance,
  DEFAULT_TOLERANCE,
  loadBaseline,
  parseTolerance,
} from '../../src/report/gate/tolerance.js';
import { TOLERANCE_EXIT_CODE } from '../../src/core/fail.js';
import type { RunSummary } from '../../src/run-format/summary.js';

const FIXTURES = join(import.meta.dirname, '../fixtures/runs/demo-cascade');
const ROOT = join(import.meta.dirname, '../../package.json');

describe('parseTolerance', () => {
  it('reads percents and fractions alike', () => {
    expect(parseTolerance('p95=25%,goodput=20%,retention=0.15')).toEqual({
      p95: 0.25,
      goodput: 0.2,
      retention: 0.15,
    });
    expect(parseTolerance(' p99 = .5 , cv=10% ')).toEqual({ p99: 0.5, cv: 0.1 });
  });

  it.each([
    ['', /tolerance: empty spec/],
    ['p9=10%', /tolerance: unknown field 'p9'/],
    ['p95', /tolerance: 'p95' is not field=value/],
    ['p95=abc', /tolerance: p95: 'abc' is not a non-negative number or percent/],
    ['goodput=-5%', /tolerance: goodput: '-5%'/],
    ['p95=1%,p95=2%', /tolerance: field 'p95' given twice/],
  ])('rejects %j with a one-line error naming the field', (spec, msg) => {
    let err: unknown;
    try {
      parseTolerance(spec);
    } catch (e) {
      err = e;
    }
    expect(isPlbError(err, 'BAD_INPUT')).toBe(true);
    expect((err as Error).message).toMatch(msg);
    expect((err as Error).message).not.toContain('\n');
  });
});

function rr(): RunSummary[] {
  return [1, 2, 3].map((i) => loadRun(join(FIXTURES, `demo-cascade-rr-${i}`)).summary);
}

describe('checkTolerance', () => {
  const base = aggregateRuns(rr());

  it('passes against itself', () => {
    const r = checkTolerance(base, base, parseTolerance('p95=0%,goodput=0%,retention=0,cpu=0'));
    expect(r.moved).toEqual([]);
    // 4 phases x (2 classes x 3 metrics + 1 phase cpu)
    expect(r.checked).toBe(28);
  });

  it('reports what moved beyond its tolerance, with direction', () => {
    const slower = rr().map((s) => structuredClone(s));
    for (const s of slower) {
      const c = s.phases[1]!.classes.premium;
      c.p95 = (c.p95 ?? 0) * 1.3; // +30%
      s.phases[2]!.classes.freemium.goodput *= 1.1; // +10%
    }
    const r = checkTolerance(aggregateRuns(slower), base, parseTolerance('p95=25%,goodput=20%'));
    expect(r.moved).toHaveLength(1);
    expect(r.moved[0]).toMatchObject({
      group: 'demo-cascade|rr|25:75',
      phase: 'down-1',
      subject: 'premium',
      metric: 'p95',
      baseline: 22,
      direction: 'worse',
      kind: 'relative',
      tolerance: 0.25,
    });
    expect(r.moved[0]?.current).toBeCloseTo(28.6, 10);
    expect(r.moved[0]?.delta).toBeCloseTo(0.3, 10);
    const tight = checkTolerance(aggregateRuns(slower), base, parseTolerance('goodput=5%'));
    expect(tight.moved.map((m) => [m.phase, m.subject, m.direction])).toEqual([
      ['down-2', 'freemium', 'better'],
    ]);
  });

  it('uses absolute differences for retention', () => {
    const lower = rr().map((s) => structuredClone(s));
    for (const s of lower) s.phases[3]!.classes.premium.goodputRetention! -= 0.2;
    const r = checkTolerance(aggregateRuns(lower), base, parseTolerance('retention=0.15'));
    expect(r.moved).toHaveLength(1);
    expect(r.moved[0]).toMatchObject({ phase: 'rejoin-1', metric: 'goodputRetention', kind: 'absolute' });
    expect(r.moved[0]?.delta).toBeCloseTo(-0.2, 10);
  });

  it('a plb-report/2 baseline (the nightly baseline until 2026-12-07) loads: the demo-cascade matrix, three repeats per strategy', () => {
    const baseline = loadBaseline(
      join(import.meta.dirname, '../fixtures/baselines/report-2-demo-cascade.json'),
    );
    expect(baseline.map((g) => g.key)).toEqual([
      'demo-cascade|plb|25:75',
      'demo-cascade|rr|25:75',
      'demo-cascade|static|25:75',
    ]);
    for (const g of baseline) {
      expect(g.runIds).toHaveLength(3);
      expect(g.phases.map((p) => p.name)).toEqual(['ref', 'down-1', 'down-2', 'rejoin-1', 'rejoin-2']);
    }
    // Checked against itself, nothing moves; the fixtures (another workload) are flagged.
    const self = checkTolerance(baseline, baseline, parseTolerance(DEFAULT_TOLERANCE));
    expect(self.moved).toEqual([]);
    const all = ['plb', 'rr', 'static'].flatMap((s) =>
      [1, 2, 3].map((i) => loadRun(join(FIXTURES, `demo-cascade-${s}-${i}`)).summary),
    );
    expect(
      checkTolerance(aggregateRuns(all), baseline, parseTolerance(DEFAULT_TOLERANCE)).moved.length,
    ).toBeGreaterThan(0);
  });

  it('fails a phase that disappeared and refuses when nothing matches', () => {
    const short = rr().map((s) => ({ ...s, phases: s.phases.slice(0, 3) }));
    const r = checkTolerance(aggregateRuns(short), base, parseTolerance('p95=25%'));
    expect(r.moved.map((m) => [m.phase, m.metric])).toEqual([['rejoin-1', 'phase']]);
    const other = rr().map((s) => ({ ...s, strategy: 'lc' }));
    expect(() => checkTolerance(aggregateRuns(other), base, {})).toThrow(/no run matches a baseline group/);
  });
});

describe('plb report --compare-to', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'plb-report-tol-'));
    for (const i of [1, 2, 3])
      cpSync(join(FIXTURES, `demo-cascade-rr-${i}`), join(dir, `rr-${i}`), { recursive: true });
    // A baseline whose p95 in down-2 was much lower than what the runs measured.
    const j = JSON.parse(
      readFileSync(join(FIXTURES, 'demo-cascade-rr-1', 'summary.json'), 'utf8'),
    ) as RunSummary;
    j.phases[2]!.classes.premium.p95 = 20;
    writeFileSync(join(dir, 'baseline.json'), JSON.stringify(j));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writeReports returns the moved lines', async () => {
    const out = await writeReports([join(dir, 'rr-1')], {
      html: false,
      compareTo: join(dir, 'baseline.json'),
      tolerance: 'p95=25%',
    });
    expect(out.movedLines).toEqual([
      'moved: demo-cascade|rr|25:75 down-2 premium p95: 20 -> 40 (+100.0%, tolerance 25.0%) worse',
    ]);
  });

  it(`the command exits ${TOLERANCE_EXIT_CODE} when a metric moved, 0 when not`, async () => {
    // keep the JSON and the stderr lines out of the test log
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const errOut = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const args = [join(dir, 'rr-1'), '--skip-html', '--json', '--compare-to', join(dir, 'baseline.json')];
    let exit: unknown;
    try {
      await Report.run([...args, '--tolerance', 'p95=25%'], ROOT);
    } catch (e) {
      exit = (e as { oclif?: { exit?: number } }).oclif?.exit;
    }
    expect(exit).toBe(3);
    await expect(Report.run([...args, '--tolerance', 'p95=150%'], ROOT)).resolves.toMatchObject({
      schema: 'plb-report/3',
    });
    out.mockRestore();
    errOut.mockRestore();
  });

  it('the command exits 1 with a one-line error on a bad spec', async () => {
    const args = [
      join(dir, 'rr-1'),
      '--skip-html',
      '--compare-to',
      join(dir, 'baseline.json'),
      '--tolerance',
      'x=1',
    ];
    let written = '';
    const errOut = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written += String(chunk);
      return true;
    });
    const err = (await Report.run(args, ROOT).catch((e: unknown) => e)) as Error & {
      oclif?: { exit?: number };
    };
    errOut.mockRestore();
    expect(err.oclif?.exit).toBe(1);
    expect(written).toMatch(/^Error: tolerance: unknown field 'x'[^\n]*\n$/);
  });
});
