// SQL templates in the workload file: line-numbered errors (parameter counts, writes, names),
// plb's own three as the default, and a custom workload end to end on the simulator (its CPU per
// template from a calibration that names the templates' SQL).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { defaultCalibrationPath, loadCalibration } from '../../src/cluster/sim/calibration.js';
import { defaultWorkloadPath } from '../../src/cluster/templates.js';
import { checkSimTemplates } from '../../src/workload/preflight.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { loadWorkloadDocument, parseWorkloadDocument } from '../../src/workload/workload-file.js';
import { benchFlagValues, scratchFolder, thrownMessage } from '../helpers/fixtures.js';

const { root, file } = scratchFolder('plb-templates-');
const msg = thrownMessage;

const parse = (text: string) => parseWorkloadDocument(text, 'w.yaml');

describe('templates in the workload file', () => {
  it('gives each class the shared templates and its own, by weight', () => {
    const d = parse(
      [
        'templates:',
        '  a: { sql: "SELECT $1::int", params: [{ type: int, min: 1, max: 9 }] }',
        '  b: { sql: "SELECT 2", weight: 3 }',
        'classes:',
        '  premium:',
        '    queryWeights: { a: 1 }',
        '  freemium:',
        '    templates:',
        '      c: { sql: "SELECT $1::text", params: [{ type: choice, values: [x, y] }] }',
      ].join('\n'),
    );
    const set = d.templates.set!;
    expect(set.classes.premium.map((t) => `${t.name}:${t.weight}`)).toEqual(['a:1']);
    expect(set.classes.freemium.map((t) => `${t.name}:${t.weight}`)).toEqual(['a:1', 'b:3', 'c:1']);
    expect(set.classes.freemium[2]!.where).toBe('w.yaml:9');
    expect(set.allowWrites).toBe(false);
  });

  it('refuses a wrong parameter count, naming the line', () => {
    expect(
      msg(() =>
        parse(
          'templates:\n  a:\n    sql: SELECT $1::int + $2::int\n    params: [{ type: int, min: 1, max: 2 }]\nclasses: {}\n',
        ),
      ),
    ).toBe('w.yaml:3: templates.a.sql uses $1..$2 but params gives 1');
    expect(
      msg(() =>
        parse(
          'templates:\n  a:\n    sql: SELECT 1\n    params: [{ type: int, min: 1, max: 2 }]\nclasses: {}\n',
        ),
      ),
    ).toBe('w.yaml:4: templates.a.params uses no parameters but params gives 1');
  });

  it('refuses a write unless allowWrites, and marks it to run on the primary', () => {
    const text = 'templates:\n  w: { sql: "UPDATE t SET a = 1" }\nclasses: {}\n';
    expect(msg(() => parse(text))).toMatch(
      /^w\.yaml:2: templates\.w\.sql changes data \(UPDATE\): .*allowWrites: true/,
    );
    const ok = parse(`allowWrites: true\n${text}`);
    expect(ok.templates.set!.classes.premium[0]!.writes).toBe(true);
  });

  it('refuses unknown names, bad generators and a class with nothing to run', () => {
    expect(
      msg(() =>
        parse('templates:\n  a: { sql: SELECT 1 }\nclasses:\n  premium:\n    queryWeights: { b: 1 }\n'),
      ),
    ).toBe('w.yaml:5: classes.premium.queryWeights.b names no template this class has');
    expect(msg(() => parse('classes:\n  premium:\n    queryWeights: { lookup: 1 }\n'))).toMatch(
      /^w\.yaml:3: classes\.premium\.queryWeights\.lookup names no template \(plb's own are point, range and scan/,
    );
    expect(
      msg(() =>
        parse(
          'templates:\n  a:\n    sql: SELECT $1::int\n    params:\n      - { type: zipf, min: 1, max: 10, s: 0.5 }\nclasses: {}\n',
        ),
      ),
    ).toBe(
      "w.yaml:5: templates.a.params[0] s must be from 1.001 to 1000, as pgbench's random_zipfian (got 0.5)",
    );
    expect(
      msg(() =>
        parse(
          'templates:\n  a:\n    sql: SELECT $1::int\n    params:\n      - { type: gauss }\nclasses: {}\n',
        ),
      ),
    ).toMatch(/^w\.yaml:5: templates\.a\.params\[0\]\.type must be one of "int", "zipf"/);
    expect(
      msg(() => parse('classes:\n  premium:\n    templates:\n      a: { sql: SELECT 1, weight: 0 }\n')),
    ).toMatch(/^w\.yaml:3: classes\.premium: no template with a weight above 0/);
  });

  it('reads a choice file relative to the workload file', () => {
    file('skus.txt', '# one a line\nsku-1\n\nsku-2\n');
    const p = file(
      'c.yaml',
      'templates:\n  a:\n    sql: SELECT $1::text\n    params: [{ type: choice, file: skus.txt }]\nclasses: {}\n',
    );
    const d = parseWorkloadDocument(readFileSync(p, 'utf8'), p);
    expect(d.templates.set!.classes.premium[0]!.params[0]).toMatchObject({ values: ['sku-1', 'sku-2'] });
  });
});

describe('a custom workload on the simulator', () => {
  const workload = file(
    'shop.yaml',
    [
      'templates:',
      '  cheap: { sql: "SELECT $1::int", params: [{ type: zipf, min: 1, max: 100, s: 1.2 }] }',
      '  dear: { sql: "SELECT count(*) FROM t WHERE a > $1", params: [{ type: int, min: 1, max: 9 }], weight: 0.2 }',
      'classes:',
      '  premium: { queriesPerSession: 5, thinkTime: 20ms, queryWeights: { cheap: 1 } }',
      '  freemium: { queriesPerSession: 5, thinkTime: 20ms }',
    ].join('\n'),
  );
  const plan = file(
    'short.yaml',
    'name: short\nduration: 16s\nwarmup: 3s\nreference: 8s\nreplicas: 3\nevents: []\n',
  );
  const flags = (out: string, over: Record<string, unknown> = {}) =>
    benchFlagValues(out, 'plb-templates-test', 25632, {
      plan,
      clients: 12,
      seed: 9,
      mixes: '50:50',
      driver: 'sim',
      json: true,
      workload,
      ...over,
    });

  it('refuses to start without a calibration of its templates', async () => {
    const lines: string[] = [];
    const code = await executeBench(flags(join(root, 'uncal')), {
      log: () => undefined,
      warn: (l) => lines.push(l),
    });
    expect(code).toBe(1);
    expect(lines.join('\n')).toMatch(/shop\.yaml:2: template cheap: the calibration .* has no CPU for it/);
    expect(lines.join('\n')).toContain(`plb calibrate --workload ${workload} --out <file>`);
  });

  it("runs plb's own file (workloads/default.yaml) with the shipped calibration, as the built-in workload", async () => {
    const lines: string[] = [];
    const summaries: string[] = [];
    for (const [name, over] of [
      ['named', { workload: defaultWorkloadPath() }],
      ['builtin', { workload: undefined }],
    ] as const) {
      const out = join(root, `default-${name}`);
      const code = await executeBench(flags(out, over), {
        log: () => undefined,
        warn: (l) => lines.push(l),
      });
      expect(code, lines.join('\n')).toBe(0);
      const dir = join(out, readdirSync(out).find((d) => existsSync(join(out, d, 'summary.json')))!);
      summaries.push(readFileSync(join(dir, 'summary.json'), 'utf8'));
    }
    // Same templates, weights and seed: the same simulated run, to the byte.
    expect(summaries[0]).toBe(summaries[1]);
  });

  it('runs with their calibrated CPU and reports p50/p95 per template', async () => {
    const cal = JSON.parse(readFileSync(defaultCalibrationPath(), 'utf8')) as {
      templates: Record<string, unknown>;
    };
    cal.templates.cheap = { meanMs: 0.1, cv: 0.5, sql: 'SELECT $1::int' };
    cal.templates.dear = { meanMs: 20, cv: 0.2, sql: 'SELECT count(*) FROM t WHERE a > $1' };
    const calibration = file('cal.json', JSON.stringify(cal));
    const out = join(root, 'sim');
    const lines: string[] = [];
    const code = await executeBench(flags(out, { calibration }), {
      log: () => undefined,
      warn: (l) => lines.push(l),
    });
    expect(code, lines.join('\n')).toBe(0);
    const dir = join(out, readdirSync(out).find((d) => existsSync(join(out, d, 'summary.json')))!);
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as RunSummary;
    const ref = (cls: string, t: string) =>
      summary.templates!.find(
        (x) => x.phase === summary.phases[0]!.name && x.class === cls && x.template === t,
      );
    expect(ref('premium', 'dear')).toBeUndefined();
    const cheap = ref('freemium', 'cheap')!;
    const dear = ref('freemium', 'dear')!;
    expect(cheap.queries).toBeGreaterThan(0);
    expect(dear.queries).toBeGreaterThan(0);
    // The dear template's calibrated CPU is 200x the cheap one's: its latency shows it.
    expect(dear.p50!).toBeGreaterThan(cheap.p95!);
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as {
      workload: { templates: { classes: { premium: { name: string }[] } } };
    };
    expect(config.workload.templates.classes.premium.map((t) => t.name)).toEqual(['cheap']);
  });
});

describe('the shipped workloads on the simulator', () => {
  const dir = dirname(defaultWorkloadPath());
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));

  it.each(files)('%s runs with the shipped calibration, or its header says to run plb calibrate', (f) => {
    const path = join(dir, f);
    const set = loadWorkloadDocument(path).templates.set;
    const cal = loadCalibration();
    let refused: string | null = null;
    try {
      if (set) checkSimTemplates(set, cal, defaultCalibrationPath());
    } catch (err) {
      refused = (err as Error).message;
    }
    if (refused === null) return;
    expect(refused).toContain(`plb calibrate --workload ${path}`);
    const header = readFileSync(path, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('#'))
      .join('\n');
    expect(header).toContain(`plb calibrate --workload workloads/${f}`);
  });

  it('prices workloads/default.yaml, the file the shipped calibration measured', () => {
    const set = loadWorkloadDocument(defaultWorkloadPath()).templates.set!;
    expect(() => checkSimTemplates(set, loadCalibration(), defaultCalibrationPath())).not.toThrow();
  });
});

describe('per-template figures and the harness rate', () => {
  it('aggregates per phase, class and template over runs, and renders the table', async () => {
    const { aggregateTemplates, templateTable } = await import('../../src/report/tables/templates-table.js');
    const row = (p95: number) => ({
      phase: 'ref',
      class: 'premium' as const,
      template: 'lookup',
      queries: 100,
      errors: 0,
      p50: 1,
      p95,
      seconds: 10,
    });
    const runs = [
      { templates: [row(2)] },
      { templates: [row(4)] },
      { templates: [row(6)] },
    ] as unknown as RunSummary[];
    const agg = aggregateTemplates(runs)!;
    expect(agg).toHaveLength(1);
    expect(agg[0]!.p95.median).toBe(4);
    expect(agg[0]!.qps.median).toBe(10);
    const t = templateTable({ templates: agg }, false, {
      title: () => 'g',
      stat: (s, f) => (s.median === null ? '-' : f(s.median)),
    });
    expect(t?.rows[0]).toEqual(['ref', 'premium', 'lookup', '1.00', '4.00', '10.0', '0']);
    expect(aggregateTemplates([{} as RunSummary])).toBeUndefined();
  });

  it('warns about a phase past the rate the harness was measured to keep up with', async () => {
    const { harnessRateWarnings } = await import('../../src/metrics/summary/harness-rate.js');
    const phase = (name: string, qps: number) =>
      ({ name, classes: { premium: { goodput: qps / 2 }, freemium: { goodput: qps / 2 } } }) as never;
    expect(harnessRateWarnings([phase('ref', 100)], 1000)).toEqual([]);
    expect(harnessRateWarnings([phase('ref', 100), phase('down-1', 2000)], 1000)).toEqual([
      expect.stringMatching(/^warning: phase down-1: 2000 queries\/s is above the ~1000 q\/s/),
    ]);
  });
});
