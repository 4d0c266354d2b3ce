import { READING_PRESETS } from '../../src/router/readings.js';
import { readdirSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aggregateRuns } from '../../src/report/aggregate.js';
import {
  comparisonTable,
  phaseTable,
  renderComparison,
  renderReport,
  SIGN_CONVENTION,
} from '../../src/report/tables/render.js';
import { renderCsv, renderCsvPerRun } from '../../src/report/tables/csv.js';
import { replicaTable } from '../../src/report/tables/run-tables.js';
import { type ReportJson } from '../../src/run-format/report.js';
import { loadRun } from '../../src/metrics/store/load-run.js';
import { compareStrategies } from '../../src/report/compare.js';
import { renderComparisonHtml } from '../../src/report/html.js';
import type { RunConfig } from '../../src/run-format/config.js';

const FIXTURES = join(import.meta.dirname, '../fixtures/runs/demo-cascade');
const all = readdirSync(FIXTURES)
  .sort()
  .map((d) => loadRun(join(FIXTURES, d)).summary);
const rr1 = all.filter((s) => s.runId === 'demo-cascade-rr-1');

describe('phase table of one run', () => {
  const t = phaseTable(aggregateRuns(rr1)[0]!);

  it('has one row per phase and class with the exact cells', () => {
    expect(t.title).toBe('demo-cascade · rr · mix 25:75 · run demo-cascade-rr-1');
    expect(t.head.slice(0, 7)).toEqual(['Phase', 'K+', 'Class', 'Goodput q/s', 'p50 ms', 'p95 ms', 'p99 ms']);
    expect(t.rows).toHaveLength(8);
    expect(t.rows[0]).toEqual([
      'ref',
      '5',
      'premium',
      '40.0',
      '5.0',
      '10.0',
      '15.0',
      '-',
      '-',
      '8.0',
      '15.0',
      '0',
      '0',
      '-', // sessions cut: not in runs recorded before it was
      '0',
      '-', // connect p95: likewise
    ]);
    expect(t.rows[3]).toEqual([
      'down-1',
      '4',
      'freemium',
      '96.0',
      '11.0',
      '22.0',
      '33.0',
      '80.0%',
      '+83.3%',
      '6.0',
      '12.0',
      '12',
      '12',
      '-',
      '0',
      '-',
    ]);
    expect(t.rows[5]?.[14]).toBe('3'); // admission failures, freemium in down-2
  });

  it('has the replica CPU mean and CV per phase', () => {
    const r = replicaTable(aggregateRuns(rr1)[0]!);
    expect(r.head).toEqual([
      'Phase',
      'CPU mean',
      'CPU CV',
      'r1 CPU',
      'r2 CPU',
      'r3 CPU',
      'r4 CPU',
      'r5 CPU',
      'Client CPU',
      'Loop p99 ms',
    ]);
    // The fixtures predate client sampling: its columns are empty.
    expect(r.rows[0]).toEqual([
      'ref',
      '40.0%',
      '0.18',
      '30.0%',
      '35.0%',
      '40.0%',
      '45.0%',
      '50.0%',
      '-',
      '-',
    ]);
    expect(r.rows[2]).toEqual(['down-2', '65.0%', '0.06', '-', '-', '60.0%', '65.0%', '70.0%', '-', '-']);
  });
});

describe('repeats show median [q1..q3]', () => {
  const groups = aggregateRuns(all);

  it('formats the IQR next to the median', () => {
    const t = phaseTable(groups[1]!);
    expect(t.title).toBe('demo-cascade · rr · mix 25:75 · 3 runs, median [q1..q3]');
    const down1p = t.rows[2]!;
    expect(down1p.slice(0, 6)).toEqual([
      'down-1',
      '4',
      'premium',
      '32.0 [30.0..33.0]',
      '11.0 [10.5..12.0]',
      '22.0 [21.0..24.0]',
    ]);
    // identical repeats collapse to the value
    expect(down1p[1]).toBe('4');
  });

  it('renders the comparison table with signs', () => {
    const t = comparisonTable(compareStrategies(groups));
    expect(t.title).toBe(`Change vs rr. ${SIGN_CONVENTION}`);
    const row = t.rows.find((r) => r[2] === 'plb' && r[3] === 'down-1' && r[4] === 'premium');
    expect(row).toEqual([
      'demo-cascade',
      '25:75',
      'plb',
      'down-1',
      'premium',
      '14.0',
      '22.0',
      '-36.4%',
      '39.0',
      '32.0',
      '+21.9%',
    ]);
    const worse = t.rows.find((r) => r[2] === 'static' && r[3] === 'down-2' && r[4] === 'premium');
    expect(worse?.[7]).toBe('+95.2%');
  });
});

describe('output formats', () => {
  const groups = aggregateRuns(all);

  it('table: cli-table3 boxes with the comparison and the quantile method', () => {
    const out = renderReport(groups, { wide: true });
    expect(out).toContain('┌');
    expect(out).toContain(`Change vs rr. ${SIGN_CONVENTION}`);
    expect(out).toContain('quantiles: linear interpolation (Hyndman-Fan type 7)');
    expect(out).toMatch(/│ down-1 +│ 4 +│ premium +│ 32\.0 \[30\.0\.\.33\.0\] +│/);
  });

  it('markdown: pipe tables', () => {
    const out = renderReport(aggregateRuns(rr1), { format: 'markdown' });
    const lines = out.split('\n');
    expect(lines[0]).toBe('### demo-cascade · rr · mix 25:75 · run demo-cascade-rr-1');
    expect(lines[2]).toBe(
      '| Phase | K+ | Class | Goodput q/s | p50 ms | p95 ms | p99 ms | Retention | p95 infl. | Life p50 s | Life p95 s | Errors | Sess. failed | Sess. cut | Adm. failed | Conn p95 ms |',
    );
    expect(lines[4]).toBe(
      '| ref | 5 | premium | 40.0 | 5.0 | 10.0 | 15.0 | - | - | 8.0 | 15.0 | 0 | 0 | - | 0 | - |',
    );
    expect(out).not.toContain('Change vs');
  });

  it('csv: long format with raw numbers', () => {
    const lines = renderReport(groups, { format: 'csv' }).trim().split('\n');
    expect(lines[0]).toBe(
      'plan,strategy,mix,runs,phase,subject,metric,median,q1,q3,n,baseline,settings,lo,hi,verdict,detectable',
    );
    expect(lines).toContain('demo-cascade,rr,25:75,3,down-1,premium,p95,22,21,24,3,,,,,,');
    expect(lines).toContain('demo-cascade,rr,25:75,3,ref,premium,goodputRetention,,,,0,,,,,,');
    expect(lines).toContain('demo-cascade,plb,25:75,3,down-1,premium,goodputChange,0.21875,,,,rr,,,,,');
  });

  it('csv: any name reads back as written (commas, quotes, newlines)', () => {
    const nasty = ['a,b', 'say "hi"', 'two\nlines', 'crlf\r\nend'];
    const renamed = groups.map((g, i) => ({
      ...g,
      plan: nasty[i % nasty.length]!,
      phases: g.phases.map((p, j) => ({ ...p, name: `${nasty[(i + j + 1) % nasty.length]!}-${j}` })),
    }));
    const records = parse(renderCsv(renamed, null)) as string[][];
    const body = records.slice(1);
    expect(records[0]).toEqual([
      'plan',
      'strategy',
      'mix',
      'runs',
      'phase',
      'subject',
      'metric',
      'median',
      'q1',
      'q3',
      'n',
      'baseline',
      'settings',
      'lo',
      'hi',
      'verdict',
      'detectable',
    ]);
    expect(new Set(body.map((r) => r[0]))).toEqual(new Set(renamed.map((g) => g.plan)));
    expect(new Set(body.map((r) => r[4]))).toEqual(
      new Set(renamed.flatMap((g) => g.phases.map((p) => p.name))),
    );
    expect(body.every((r) => r.length === 17)).toBe(true);
  });

  it('json: groups, comparison and the quantile method', () => {
    const j = JSON.parse(renderReport(groups, { format: 'json' })) as ReportJson;
    expect(j.schema).toBe('plb-report/3');
    expect(j.quantileMethod).toBe('linear interpolation (Hyndman-Fan type 7)');
    expect(j.groups).toHaveLength(3);
    expect(j.groups[2]?.phases[2]?.classes.premium.p95).toEqual({ median: 82, q1: 81, q3: 84, n: 3 });
    expect(j.comparison?.entries[0]?.rows[0]).toEqual({
      phase: 'ref',
      cls: 'premium',
      p95: 12,
      baseP95: 12,
      p95Change: 0,
      goodput: 40,
      baseGoodput: 40,
      goodputChange: 0,
    });
  });

  it('renderComparison takes summaries or groups', () => {
    const a = renderComparison(all, { format: 'markdown' });
    const b = renderComparison(groups, { format: 'markdown' });
    expect(a).toBe(b);
    expect(a).toContain(
      '| demo-cascade | 25:75 | plb | down-1 | premium | 14.0 | 22.0 | -36.4% | 39.0 | 32.0 | +21.9% |',
    );
    const j = JSON.parse(renderComparison(all, { format: 'json', baseline: 'plb' })) as { baseline: string };
    expect(j.baseline).toBe('plb');
  });
});

describe('compact terminal tables', () => {
  const groups = aggregateRuns(all);

  it('fit in 100 columns by default; --wide has every column', () => {
    const width = (text: string): number => Math.max(...text.split('\n').map((l) => l.length));
    const compact = renderReport(groups);
    const tableLines = compact.split('\n').filter((l) => /^[┌│└├]/.test(l));
    expect(Math.max(...tableLines.map((l) => l.length))).toBeLessThanOrEqual(100);
    expect(compact).toContain('--wide');
    expect(compact).not.toContain('[30.0..33.0]');
    expect(width(renderReport(groups, { wide: true }))).toBeGreaterThan(150);
  });

  it('compact phase table: medians of the columns that tell the story', () => {
    const t = phaseTable(groups[0]!, { wide: false });
    expect(t.head).toEqual([
      'Phase',
      'K+',
      'Class',
      'q/s',
      'p95 ms',
      'p99 ms',
      'Retain',
      'p95 Δref',
      'Errors',
      'Failed',
    ]);
    expect(t.rows.every((r) => r.every((c) => !c.includes('[')))).toBe(true);
  });
});

describe('--csv --per-run', () => {
  it('one row per run, phase and class', () => {
    const rows = parse(renderCsvPerRun(all)) as string[][];
    const head = rows[0]!;
    const perRun = all.reduce((n, s) => n + s.phases.length * 2, 0);
    expect(rows).toHaveLength(1 + perRun);
    expect(head.slice(0, 3)).toEqual(['run', 'plan', 'strategy']);
    expect(new Set(rows.slice(1).map((r) => r[0])).size).toBe(all.length);
  });
});

describe('groups of different settings', () => {
  const runs = readdirSync(FIXTURES)
    .sort()
    .map((d) => loadRun(join(FIXTURES, d)));
  // Runs *-3 were taken with other readings and a second driver.
  const groups = aggregateRuns(
    runs.map((r) => r.summary),
    {
      configs: new Map(
        runs.map((r) => [
          r.summary,
          {
            ...r.config,
            driver: r.summary.runId.endsWith('-3') ? 'local' : 'sim',
            readings: { ...(r.summary.runId.endsWith('-3') ? READING_PRESETS.paper : READING_PRESETS.plb) },
          } as RunConfig,
        ]),
      ),
    },
  );

  it('says in the header what the groups share and differ in, and labels each group', () => {
    const out = renderReport(groups, { format: 'table' });
    const lines = out.split('\n');
    expect(lines[0]).toBe('settings: clients 40');
    expect(lines[2]).toBe('groups differ in: driver (local vs sim), readings (paper vs plb)');
    expect(out).toContain(
      'demo-cascade · plb · mix 25:75 · driver local · readings paper · run demo-cascade-plb-3',
    );
    expect(out).toContain('demo-cascade · rr · mix 25:75 · driver sim · readings plb · 2 runs, medians');
    // The comparison pairs strategies of the same settings, and says which.
    expect(out).toContain('25:75 · driver sim · readings plb');
    const md = renderReport(groups, { format: 'markdown' });
    expect(md).toContain('groups differ in: driver (local vs sim), readings (paper vs plb)');
    expect(md).toContain('### demo-cascade · static · mix 25:75 · driver sim · readings plb · 2 runs');
  });

  it('carries the settings in the JSON and the HTML', async () => {
    const j = JSON.parse(renderReport(groups, { format: 'json' })) as ReportJson;
    expect(j.settings.differ).toEqual([
      { name: 'driver', values: ['local', 'sim'] },
      { name: 'readings', values: ['paper', 'plb'] },
    ]);
    expect(j.groups[0]).toMatchObject({
      key: 'demo-cascade|plb|25:75|driver local · readings paper',
      settingsLabel: 'driver local · readings paper',
      settings: { driver: 'local', readings: 'paper', clients: '40' },
    });
    expect(j.comparison?.entries.map((e) => e.settingsLabel)).toEqual([
      'driver local · readings paper',
      'driver local · readings paper',
      'driver sim · readings plb',
      'driver sim · readings plb',
    ]);
    const html = await renderComparisonHtml(groups);
    expect(html).toContain(
      '<div class="meta">groups differ in: driver (local vs sim), readings (paper vs plb)</div>',
    );
    expect(html).toContain('mix 25:75 · driver sim · readings plb · 2 runs');
  });
});
