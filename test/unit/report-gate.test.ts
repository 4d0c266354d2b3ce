import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import Report from '../../src/commands/report.js';
import { isPlbError } from '../../src/core/errors.js';
import { loadRun } from '../../src/metrics/store/load-run.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { aggregateRuns } from '../../src/report/aggregate.js';
import {
  annotation,
  DEFAULT_GATE_FLOORS,
  gateAnnotations,
  gateMarkdown,
  gateTable,
  parseGateFloors,
  reportGate,
  runGate,
  type GateCell,
} from '../../src/report/gate/gate.js';
import { writeReports } from '../../src/report/report.js';
import { checkTolerance, loadBaseline, parseTolerance } from '../../src/report/gate/tolerance.js';

const FIXTURES = join(import.meta.dirname, '../fixtures/runs/demo-cascade');
const ROOT = join(import.meta.dirname, '../../package.json');
const FLOORS = parseGateFloors(DEFAULT_GATE_FLOORS);

/** Synthetic repeats: the fixture summaries of one strategy, cloned so a test may bend them. */
function runs(strategy: string): RunSummary[] {
  return [1, 2, 3].map((i) =>
    structuredClone(loadRun(join(FIXTURES, `demo-cascade-${strategy}-${i}`)).summary),
  );
}

function cell(cells: readonly GateCell[], phase: string, subject: string, metric: string): GateCell {
  const c = cells.find((x) => x.phase === phase && x.subject === subject && x.metric === metric);
  if (!c) throw new Error(`no cell ${phase} ${subject} ${metric}`);
  return c;
}

describe('runGate', () => {
  const base = aggregateRuns(runs('rr'));

  it('passes the runs against themselves, every cell within noise', () => {
    const r = runGate(base, base, FLOORS);
    expect(r.failed).toEqual([]);
    // 4 phases x 2 classes x (p95, goodput) + 3 phases with retention x 2 classes
    expect(r.cells).toHaveLength(22);
    expect(new Set(r.cells.map((c) => c.verdict))).toEqual(new Set(['pass']));
  });

  it('derives the tolerance from the baseline IQR, with a floor', () => {
    const r = runGate(base, base, FLOORS);
    // down-1 premium p95 over the repeats: 20, 22, 26 -> median 22, q1 21, q3 24: 3 x 3/22
    const p95 = cell(r.cells, 'down-1', 'premium', 'p95');
    expect(p95.noise).toBeCloseTo((3 * 3) / 22, 10);
    expect(p95.tolerance).toBeCloseTo((3 * 3) / 22, 10);
    // ref freemium goodput: a tight spread, so the 10% floor is the tolerance
    const gp = cell(r.cells, 'ref', 'freemium', 'goodput');
    expect(gp.noise).toBeLessThan(0.1);
    expect(gp.tolerance).toBe(0.1);
  });

  it('fails a cell that got worse beyond its tolerance, in the worse direction only', () => {
    const slower = runs('rr');
    for (const s of slower) {
      s.phases[1]!.classes.premium.p95! *= 1.6; // +60% against a 40.9% tolerance
      s.phases[2]!.classes.freemium.goodput *= 0.7; // -30% against max(3 x IQR, 10%)
    }
    const r = runGate(aggregateRuns(slower), base, FLOORS);
    expect(r.failed.map((c) => [c.phase, c.subject, c.metric, c.verdict])).toEqual([
      ['down-1', 'premium', 'p95', 'worse'],
      ['down-2', 'freemium', 'goodput', 'worse'],
    ]);
    expect(r.failed[0]?.change).toBeCloseTo(0.6, 10);
  });

  it('never fails what got better, however far', () => {
    const faster = runs('rr');
    for (const s of faster)
      for (const p of s.phases)
        for (const c of [p.classes.premium, p.classes.freemium]) {
          c.p95 = (c.p95 ?? 0) / 5;
          c.goodput *= 3;
          if (c.goodputRetention !== null) c.goodputRetention += 0.5;
        }
    const r = runGate(aggregateRuns(faster), base, FLOORS);
    expect(r.failed).toEqual([]);
    expect(r.cells.filter((c) => c.verdict === 'better')).toHaveLength(22);
    // The two-sided check would have flagged every one of them.
    expect(
      checkTolerance(aggregateRuns(faster), base, parseTolerance(DEFAULT_GATE_FLOORS)).moved,
    ).toHaveLength(22);
  });

  it('passes a move within the baseline noise that a fixed tolerance would flag', () => {
    const noisy = runs('rr');
    for (const s of noisy) s.phases[1]!.classes.premium.p95! *= 1.3; // +30%, noise 40.9%
    const r = runGate(aggregateRuns(noisy), base, FLOORS);
    expect(cell(r.cells, 'down-1', 'premium', 'p95').verdict).toBe('pass');
    expect(r.failed).toEqual([]);
    expect(checkTolerance(aggregateRuns(noisy), base, parseTolerance('p95=15%')).moved).toHaveLength(1);
  });

  it('falls back to the floors when the baseline has no spread (one run), and says so', () => {
    const one = aggregateRuns(runs('rr').slice(0, 1));
    const up = (f: number) => {
      const s = runs('rr').slice(0, 1);
      s[0]!.phases[0]!.classes.premium.p95! *= f;
      return runGate(aggregateRuns(s), one, FLOORS);
    };
    expect(cell(up(1.14).cells, 'ref', 'premium', 'p95').verdict).toBe('pass');
    const r = up(1.16);
    expect(cell(r.cells, 'ref', 'premium', 'p95')).toMatchObject({
      verdict: 'worse',
      tolerance: 0.15,
      noise: 0,
    });
    expect(r.notes).toContain(
      'baseline demo-cascade|rr|25:75 has 1 run(s): its IQR says little, the floors carry the gate',
    );
  });

  it('uses absolute differences for retention', () => {
    const lower = runs('rr');
    for (const s of lower) s.phases[3]!.classes.freemium.goodputRetention! -= 0.06; // tolerance: floor 0.05
    const r = runGate(aggregateRuns(lower), base, FLOORS);
    expect(r.failed).toHaveLength(1);
    expect(r.failed[0]).toMatchObject({ phase: 'rejoin-1', subject: 'freemium', metric: 'goodputRetention' });
    expect(r.failed[0]?.change).toBeCloseTo(-0.06, 10);
  });

  it('reports missing groups, phases and cells as failures, new cells as passes', () => {
    const baseline = aggregateRuns([...runs('rr'), ...runs('static')]);
    const now = runs('rr').map((s) => ({ ...s, phases: s.phases.slice(0, 3) }));
    for (const s of now) {
      s.phases[1]!.classes.premium.goodputRetention = null;
      s.phases[0]!.classes.premium.goodputRetention = 1;
    }
    const r = runGate(aggregateRuns(now), baseline, FLOORS);
    expect(r.failed.map((c) => [c.group, c.phase, c.subject, c.metric, c.verdict])).toEqual([
      ['demo-cascade|rr|25:75', 'down-1', 'premium', 'goodputRetention', 'missing'],
      ['demo-cascade|rr|25:75', 'rejoin-1', '', 'phase', 'missing'],
      ['demo-cascade|static|25:75', '', '', 'group', 'missing'],
    ]);
    expect(cell(r.cells, 'ref', 'premium', 'goodputRetention').verdict).toBe('new');
    expect(gateAnnotations(r)).toEqual([
      '::error title=plb gate::demo-cascade|rr|25:75 down-1 premium goodputRetention: 0.800 [0.789, 0.805] in the baseline, missing now',
      '::error title=plb gate::demo-cascade|rr|25:75 rejoin-1: phase measured in the baseline, missing now',
      '::error title=plb gate::demo-cascade|static|25:75: in the baseline, no runs now',
    ]);
  });

  it('notes runs without a baseline and refuses when nothing matches', () => {
    const r = runGate(aggregateRuns([...runs('rr'), ...runs('plb')]), base, FLOORS);
    expect(r.notes).toContain('no baseline for demo-cascade|plb|25:75, not gated');
    expect(r.failed).toEqual([]);
    let err: unknown;
    try {
      runGate(aggregateRuns(runs('plb')), base, FLOORS);
    } catch (e) {
      err = e;
    }
    expect(isPlbError(err, 'BAD_INPUT')).toBe(true);
    expect((err as Error).message).toMatch(/no run matches a baseline group/);
  });

  it('gates only one-sided fields', () => {
    expect(parseGateFloors('p99=20%,lifetime=10%')).toEqual({ p99: 0.2, lifetime: 0.1 });
    expect(() => parseGateFloors('cpu=10%')).toThrow(/cpu has no worse direction/);
  });
});

describe('gate output', () => {
  const base = aggregateRuns(runs('rr'));
  const slower = runs('rr');
  for (const s of slower) s.phases[1]!.classes.premium.p95! *= 2;
  const r = runGate(aggregateRuns(slower), base, FLOORS);

  it('a table with a row per cell, a markdown verdict, an annotation per failing cell', () => {
    const table = gateTable(r).split('\n');
    expect(table[0]).toMatch(
      /^verdict +group +phase +class +metric +baseline \[q1, q3\] +now \[q1, q3\] +change +tolerance$/,
    );
    expect(table.filter((l) => l.startsWith('WORSE'))).toEqual([
      expect.stringMatching(
        /^WORSE +demo-cascade\|rr\|25:75 +down-1 +premium +p95 +22\.00 \[21\.00, 24\.00\] +44\.00 \[42\.00, 48\.00\] +\+100\.0% +40\.9% \(noise\)$/,
      ),
    ]);
    const md = gateMarkdown(r);
    expect(md).toMatch(/^## plb nightly gate: ❌ FAIL\n/);
    expect(md).toContain('| WORSE | demo-cascade\\|rr\\|25:75 | down-1 | premium | p95 |');
    expect(gateAnnotations(r)).toEqual([
      '::error title=plb gate::demo-cascade|rr|25:75 down-1 premium p95: 22.00 [21.00, 24.00] -> 44.00 [42.00, 48.00] (+100.0%25, tolerance 40.9%25 (noise))',
    ]);
  });

  it('escapes workflow commands', () => {
    expect(annotation('warning', 'a: b, c', '50%\r\nnext')).toBe(
      '::warning title=a%3A b%2C c::50%25%0D%0Anext',
    );
  });

  it('reportGate logs the verdict and, for GitHub, appends the markdown to the step summary', () => {
    const dir = mkdtempSync(join(tmpdir(), 'plb-gate-'));
    const summary = join(dir, 'summary.md');
    const lines: string[] = [];
    const failed = reportGate(r, {
      log: (l) => lines.push(l),
      github: true,
      env: { GITHUB_STEP_SUMMARY: summary },
    });
    expect(failed).toBe(true);
    expect(lines.filter((l) => l.startsWith('::error'))).toHaveLength(1);
    expect(lines.at(-1)).toMatch(
      /^gate FAIL: 1 worse beyond tolerance, 0 missing, 0 better, 21 within noise/,
    );
    expect(readFileSync(summary, 'utf8')).toBe(gateMarkdown(r));
    const quiet: string[] = [];
    expect(reportGate(runGate(base, base, FLOORS), { log: (l) => quiet.push(l) })).toBe(false);
    expect(quiet.some((l) => l.startsWith('::'))).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('plb report --gate and --baseline-out', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'plb-report-gate-'));
    for (const s of ['plb', 'rr', 'static'])
      for (const i of [1, 2, 3])
        cpSync(join(FIXTURES, `demo-cascade-${s}-${i}`), join(dir, 'runs', `${s}-${i}`), { recursive: true });
    mkdirSync(join(dir, 'out'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  afterEach(() => vi.unstubAllEnvs());

  it('writes a candidate baseline the gate reads, with provenance', async () => {
    const file = join(dir, 'out', 'candidate.json');
    vi.stubEnv('GITHUB_SHA', 'abc123');
    const out = await writeReports([join(dir, 'runs')], { format: 'json', html: false, baselineOut: file });
    expect(out.candidate).toEqual({ file, warnings: [] });
    const doc = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    expect(doc).toMatchObject({
      schema: 'plb-report/3',
      baseline: 'rr',
      candidate: { runs: 9, seeds: [1000, 1001, 1002], commit: 'abc123' },
    });
    // Same document as --json, plus where it came from.
    const { candidate: _, ...rest } = doc;
    expect(rest).toEqual(JSON.parse(out.text));
    const groups = loadBaseline(file);
    expect(groups.map((g) => g.key)).toEqual([
      'demo-cascade|plb|25:75',
      'demo-cascade|rr|25:75',
      'demo-cascade|static|25:75',
    ]);
    const self = await writeReports([join(dir, 'runs')], {
      html: false,
      compareTo: file,
      gateAbsolute: true,
    });
    expect(self.absoluteGate?.failed).toEqual([]);
    expect(self.absoluteGate?.cells).toHaveLength(66);
  });

  it('warns when a candidate is too thin to promote', async () => {
    const out = await writeReports([join(dir, 'runs', 'rr-1')], {
      format: 'json',
      html: false,
      baselineOut: join(dir, 'out', 'thin.json'),
    });
    expect(out.candidate?.warnings).toEqual([
      "candidate: demo-cascade|rr|25:75 has 1 run(s); the gate's IQR needs 3 or more",
    ]);
  });

  it('refuses --gate without --compare-to and a bad --baseline-out before writing anything', async () => {
    await expect(writeReports([join(dir, 'runs')], { html: false, gateAbsolute: true })).rejects.toThrow(
      /^gate-absolute: needs --compare-to$/,
    );
    await expect(
      writeReports([join(dir, 'runs')], { html: true, baselineOut: join(dir, 'no', 'such', 'c.json') }),
    ).rejects.toThrow(/^baseline-out: folder .* does not exist/);
  });

  it('the command exits 3 with annotations and a step summary when the gate fails, 0 when it passes', async () => {
    // A baseline in which plb's down-2 premium p95 was a third of what the runs measured.
    const good = join(dir, 'out', 'candidate.json');
    const j = JSON.parse(readFileSync(good, 'utf8')) as {
      groups: { phases: { classes: Record<string, Record<string, { median: number }>> }[] }[];
    };
    j.groups[0]!.phases[2]!.classes.premium!.p95!.median /= 3;
    const bad = join(dir, 'out', 'bad.json');
    writeFileSync(bad, JSON.stringify(j));
    const summary = join(dir, 'out', 'step-summary.md');
    vi.stubEnv('GITHUB_STEP_SUMMARY', summary);
    let stderr = '';
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    // plb report writes its notes and the verdict to stderr itself (oclif would silence them with --json).
    const err = vi.spyOn(process.stderr, 'write').mockImplementation((l: string | Uint8Array) => {
      stderr += String(l);
      return true;
    });
    const args = [join(dir, 'runs'), '--skip-html', '--json', '--gate-absolute', '--github'];
    const exit = await Report.run([...args, '--compare-to', bad], ROOT).then(
      () => 0,
      (e: unknown) => (e as { oclif?: { exit?: number } }).oclif?.exit,
    );
    expect(exit).toBe(3);
    expect(stderr).toMatch(/^::error title=plb gate::demo-cascade\|plb\|25:75 down-2 premium p95: /m);
    expect(stderr).toMatch(/^gate FAIL: 1 worse beyond tolerance/m);
    expect(readFileSync(summary, 'utf8')).toMatch(/^## plb nightly gate: ❌ FAIL/);
    await expect(Report.run([...args, '--compare-to', good], ROOT)).resolves.toMatchObject({
      schema: 'plb-report/3',
    });
    out.mockRestore();
    err.mockRestore();
  });
});
