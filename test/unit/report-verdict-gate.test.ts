// The verdict gate: the rules per cell, what it refuses, and two simulated "machines" of
// different speed (CPU costs x1.6, another seed): their premium p95s differ by a factor of
// 1.8 or more, their verdicts agree, so the gate passes; one verdict flipped on purpose fails it.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Report from '../../src/commands/report.js';
import { loadCalibration } from '../../src/cluster/sim/calibration.js';
import type { GroupEvidence, Verdict } from '../../src/run-format/evidence.js';
import { loadVerdictBaseline, type VerdictGroup } from '../../src/report/gate/verdict-baseline.js';
import { runVerdictGate, verdictRule } from '../../src/report/gate/verdict-gate.js';
import { reportVerdictGate, verdictGateTable, trendText } from '../../src/report/gate/verdict-render.js';
import { historyTable, readHistory } from '../../src/report/gate/history.js';
import { writeReports } from '../../src/report/report.js';
import { runCommand, thrownMessage } from '../helpers/fixtures.js';
import { REPO, simSeries } from '../helpers/sim-series.js';

const ND = 'no difference detected';

describe('verdictRule', () => {
  const V: Exclude<Verdict, 'no interval'>[] = ['better', ND, 'worse'];
  it.each(['premium', 'freemium'] as const)('%s: a flip fails; premium no diff. -> worse fails', (cls) => {
    const failing = V.flatMap((b) => V.map((n) => [b, n] as const)).filter(
      ([b, n]) => verdictRule(cls, b, n).status === 'fail',
    );
    expect(failing).toEqual([
      ['better', 'worse'],
      ...(cls === 'premium' ? [[ND, 'worse']] : []),
      ['worse', 'better'],
    ]);
    expect(verdictRule(cls, 'better', 'worse').why).toBe('flipped: better -> worse');
    expect(verdictRule(cls, 'better', ND)).toEqual({ status: 'pass', why: 'better -> no diff.' });
  });
});

/** A group with one fault phase (down-1) whose verdicts against rr are given per cell. */
function group(strategy: string, verdicts: Partial<Record<string, Verdict>>, p95 = 100): VerdictGroup {
  const change = (v: Verdict | undefined) => {
    if (v === undefined) return undefined;
    const delta = v === 'better' ? -0.3 : v === 'worse' ? 0.3 : 0;
    return { delta, lo: delta - 0.1, hi: delta + 0.1, verdict: v, detectable: 0.1 };
  };
  const cls = (c: string) => ({
    seconds: 30,
    block: 3,
    metrics: {} as never,
    vsBaseline: { p95: change(verdicts[`${c} p95`]), goodput: change(verdicts[`${c} goodput`]) } as never,
  });
  const evidence: GroupEvidence = {
    method: 'test',
    baselineKey: 'demo|rr|25:75',
    phases: [{ name: 'down-1', classes: { premium: cls('premium'), freemium: cls('freemium') } }],
    invalid: [],
    notes: [],
  };
  const classes = { premium: { p95: { median: p95 }, goodput: { median: 30 } }, freemium: {} };
  return {
    key: `demo|${strategy}|25:75`,
    strategy,
    phases: [
      { name: 'ref', survivors: { median: 5 }, classes },
      { name: 'down-1', survivors: { median: 4 }, classes },
      { name: 'rejoin-1', survivors: { median: 5 }, classes },
    ],
    evidence,
  };
}

describe('runVerdictGate', () => {
  const base = [group('plb', { 'premium p95': 'better', 'freemium p95': 'worse', 'premium goodput': ND })];

  it('gates the fault phases only, with the figures as a trend', () => {
    const r = runVerdictGate(
      [group('plb', { 'premium p95': 'better', 'freemium p95': ND, 'premium goodput': 'better' }, 300)],
      base,
    );
    expect(r.cells.map((c) => [c.phase, c.cls, c.metric, c.status])).toEqual([
      ['down-1', 'premium', 'p95', 'pass'],
      ['down-1', 'premium', 'goodput', 'pass'],
      ['down-1', 'freemium', 'p95', 'pass'],
    ]);
    expect(r.failed).toEqual([]);
    expect(trendText(r.cells[0]!)).toBe('100 -> 300 ms (+200%)');
  });

  it('fails a flip, premium getting worse, and a verdict the night did not measure', () => {
    const r = runVerdictGate([group('plb', { 'premium goodput': 'worse', 'freemium p95': 'better' })], base);
    expect(r.failed.map((c) => [c.cls, c.metric, c.status, c.why])).toEqual([
      ['premium', 'p95', 'missing', 'in the baseline, not measured now'],
      ['premium', 'goodput', 'fail', 'premium got worse: no diff. -> worse'],
      ['freemium', 'p95', 'fail', 'flipped: worse -> better'],
    ]);
    expect(verdictGateTable(r).split('\n')[0]).toMatch(
      /^result +group +phase +class +metric +baseline vs rr +now vs rr +why +trend \(not gated\)$/,
    );
  });

  it('for GitHub: an annotation per failing cell and the markdown verdict in the step summary', () => {
    const r = runVerdictGate(
      [group('plb', { 'premium p95': 'worse', 'freemium p95': 'worse', 'premium goodput': ND })],
      base,
    );
    const dir = mkdtempSync(join(tmpdir(), 'plb-verdict-md-'));
    const summary = join(dir, 'summary.md');
    const lines: string[] = [];
    const failed = reportVerdictGate(r, {
      log: (l) => lines.push(l),
      github: true,
      env: { GITHUB_STEP_SUMMARY: summary },
      images: ['postgres@sha256:abc'],
    });
    expect(failed).toBe(true);
    expect(lines.filter((l) => l.startsWith('::error'))).toEqual([
      '::error title=plb gate::demo|plb|25:75 down-1 premium p95: flipped: better -> worse (baseline better -30%25 [-40%25, -20%25]; now worse +30%25 [+20%25, +40%25])',
    ]);
    expect(lines).toContain('image: postgres@sha256:abc');
    expect(lines.at(-1)).toMatch(
      /^gate FAIL: 1 flipped, 0 premium worse, 0 missing, 2 held, 0 not gated, 0 new/,
    );
    const md = readFileSync(summary, 'utf8');
    expect(md).toMatch(/^## plb nightly gate: ❌ FAIL\n/);
    expect(md).toContain('PostgreSQL image: `postgres@sha256:abc`');
    expect(md).toContain(
      '| FAIL | demo\\|plb\\|25:75 | down-1 | premium | p95 | better -30% [-40%, -20%] | worse +30% [+20%, +40%] |',
    );
    rmSync(dir, { recursive: true, force: true });
  });

  it('does not gate a baseline cell without an interval, notes new groups, refuses a baseline with no verdicts', () => {
    const r = runVerdictGate(
      [
        group('plb', { 'premium p95': 'better', 'freemium p95': 'worse' }),
        group('static', { 'premium p95': 'better' }),
      ],
      [group('plb', { 'premium p95': 'better', 'freemium p95': 'no interval' })],
    );
    expect(r.cells.map((c) => `${c.strategy} ${c.cls} ${c.status}`)).toEqual([
      'plb premium pass',
      'plb freemium not gated',
      'static premium new',
    ]);
    expect(r.notes).toEqual(['demo|static|25:75: not in the baseline, not gated']);
    const none = { ...group('plb', {}), evidence: undefined };
    expect(thrownMessage(() => runVerdictGate(base, [none]))).toBe(
      'compare-to: the baseline has no verdicts against rr',
    );
  });
});

describe('baselines without verdicts', () => {
  it('a plb-report/2 baseline is refused in one line that says to re-measure it', () => {
    expect(
      thrownMessage(() =>
        loadVerdictBaseline(join(REPO, 'test/fixtures/baselines/report-2-demo-cascade.json')),
      ),
    ).toMatch(
      /^compare-to: .*report-2-demo-cascade\.json is plb-report\/2, written before reports carried verdicts: re-measure the baseline/,
    );
  });
});

describe('the committed nightly baseline', () => {
  it('is a plb-report/3 document with verdicts against rr for every strategy of the nightly', () => {
    const groups = loadVerdictBaseline(join(REPO, 'benchmarks/baseline/summary.json'));
    expect(groups.map((g) => g.key).sort()).toEqual(['demo|plb|25:75', 'demo|rr|25:75', 'demo|static|25:75']);
    for (const g of groups.filter((x) => x.strategy !== 'rr')) {
      expect(g.evidence?.baselineKey).toBe('demo|rr|25:75');
      // Its own runs gate against it: nothing to flip.
      const r = runVerdictGate(groups, groups);
      expect(r.cells.filter((c) => c.status === 'fail' || c.status === 'missing')).toEqual([]);
    }
  });
});

describe('two machines of different speed', () => {
  const root = mkdtempSync(join(tmpdir(), 'plb-verdict-gate-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const A = join(root, 'fast');
  const B = join(root, 'slow');
  const baseline = join(root, 'baseline.json');
  const args = ['--plan', join(REPO, 'plans/demo.yaml'), '--strategy', 'plb,rr'];

  beforeAll(async () => {
    // The slower machine: every query and connect costs 1.6 times the CPU.
    const cal = loadCalibration();
    for (const t of Object.values(cal.templates)) t.meanMs *= 1.6;
    cal.connect.cpuMs *= 1.6;
    const slow = join(root, 'slow.json');
    writeFileSync(slow, JSON.stringify(cal));
    await simSeries('bench run', [...args, '--seed', '7'], A);
    await simSeries('bench run', [...args, '--seed', '8', '--calibration', slow], B);
    await writeReports([A], { format: 'json', html: false, baselineOut: baseline });
  }, 300_000);

  it('passes when the verdicts agree, though every figure moved', async () => {
    const history = join(root, 'history', 'history.jsonl');
    mkdirSync(join(root, 'history'));
    const out = await writeReports([B], {
      html: false,
      compareTo: baseline,
      gate: true,
      historyAppend: history,
    });
    const r = out.verdictGate!;
    expect(r.failed).toEqual([]);
    expect(r.cells.length).toBe(12); // plb: 3 fault phases x 2 classes x (p95, goodput)
    const premium = r.cells.filter((c) => c.cls === 'premium' && c.metric === 'p95');
    expect(premium.map((c) => [c.baseline?.verdict, c.current?.verdict])).toEqual(
      Array(3).fill(['better', 'better']),
    );
    // The figures differ by far more than any tolerance the absolute gate would allow.
    for (const c of premium) expect(c.currentValue! / c.baselineValue!).toBeGreaterThan(1.5);
    // Run directories as the baseline give the same cells.
    const dirs = await writeReports([B], { html: false, compareTo: A, gate: true });
    expect(dirs.verdictGate!.cells.map((c) => c.status)).toEqual(r.cells.map((c) => c.status));
    const nights = readHistory(history);
    expect(nights).toHaveLength(1);
    expect(nights[0]).toMatchObject({ pass: true, images: [] });
    expect(historyTable(nights).split('\n')[1]).toMatch(/^night +gate +strategy +down-1 +down-2 +rejoin-1$/);
    // A second night, then the history as the command prints and charts it.
    await writeReports([B], { html: false, compareTo: baseline, gate: true, historyAppend: history });
    const page = join(root, 'history.html');
    const r2 = await runCommand(Report, ['--history', history, '--html', page]);
    expect(r2.code).toBe(0);
    expect(r2.stdout.split('\n').filter((l) => / PASS +plb +-\d+% \[.*\] better/.test(l))).toHaveLength(2);
    expect(readFileSync(page, 'utf8')).toMatch(/<svg[\s\S]*premium p95 against rr/);
    expect((await runCommand(Report, ['--history', history, B])).stderr).toMatch(/not both/);
  });

  it('fails, exit 3, when one verdict is flipped on purpose', async () => {
    const doc = JSON.parse(readFileSync(baseline, 'utf8')) as { groups: VerdictGroup[] };
    const plb = doc.groups.find((g) => g.strategy === 'plb')!;
    const cell = plb.evidence!.phases.find((p) => p.name === 'down-2')!.classes.premium.vsBaseline!.p95;
    cell.verdict = 'worse';
    const flipped = join(root, 'flipped.json');
    writeFileSync(flipped, JSON.stringify(doc));
    const r = await runCommand(Report, [B, '--skip-html', '--compare-to', flipped, '--gate']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(
      /^FAIL +demo\|plb\|25:75 +down-2 +premium +p95 +worse .* flipped: worse -> better/m,
    );
    expect(r.stderr).toMatch(/^gate FAIL: 1 flipped, 0 premium worse, 0 missing, 11 held/m);
  });
});
