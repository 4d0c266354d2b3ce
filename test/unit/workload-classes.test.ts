// Per-class workloads: --queries-per-session, --think-time and --query-mix for one or each class,
// the --workload file (line-numbered errors, overridden by flags), auto think time over classes
// that differ, and a simulated bench whose classes do what they were given.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkBenchValue } from '../../src/bench/options/checks.js';
import { executeBench } from '../../src/bench/execute.js';
import { resolveClasses } from '../../src/bench/options/resolve.js';
import { thinkTimeFor, thinkTimesFor, type ClassThinkInputs } from '../../src/workload/calibrate.js';
import { parseQueryWeights } from '../../src/workload/spec.js';
import { loadWorkloadFile, parseWorkloadFile } from '../../src/workload/workload-file.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { benchFlagValues, scratchFolder, thrownMessage } from '../helpers/fixtures.js';

const { root, file } = scratchFolder('plb-workload-');
const msg = thrownMessage;

describe('per-class flag values', () => {
  it('takes one value for both classes or values by class', () => {
    expect(checkBenchValue('queries-per-session', '10')).toEqual({ premium: 10, freemium: 10 });
    expect(checkBenchValue('queries-per-session', 'premium=10,freemium=40')).toEqual({
      premium: 10,
      freemium: 40,
    });
    expect(checkBenchValue('queries-per-session', 'freemium=40')).toEqual({ freemium: 40 });
    expect(checkBenchValue('think-time', '250ms')).toEqual({ premium: 250, freemium: 250 });
    expect(checkBenchValue('think-time', 'premium=250ms, freemium=1s')).toEqual({
      premium: 250,
      freemium: 1000,
    });
    expect(checkBenchValue('think-time', 'auto')).toBe('auto');
    expect(checkBenchValue('query-mix', '0.5:0.3:0.2')).toEqual({
      premium: { point: 0.5, range: 0.3, scan: 0.2 },
      freemium: { point: 0.5, range: 0.3, scan: 0.2 },
    });
    expect(checkBenchValue('query-mix', 'premium=0.7:0.3:0,freemium=1:3:6')).toEqual({
      premium: { point: 0.7, range: 0.3, scan: 0 },
      freemium: { point: 1, range: 3, scan: 6 },
    });
  });

  it('refuses bad values with one line naming the flag', () => {
    expect(msg(() => checkBenchValue('queries-per-session', 'premium=0'))).toBe(
      '--queries-per-session: must be a positive integer (got 0)',
    );
    expect(msg(() => checkBenchValue('queries-per-session', 'gold=3'))).toBe(
      '--queries-per-session: expected one value or premium=<value>,freemium=<value> (got "gold=3")',
    );
    expect(msg(() => checkBenchValue('queries-per-session', 'premium=3,premium=4'))).toBe(
      '--queries-per-session: premium given twice',
    );
    expect(msg(() => checkBenchValue('think-time', 'premium=fast'))).toMatch(
      /^--think-time: expected a duration/,
    );
    expect(msg(() => checkBenchValue('query-mix', '0.5:0.5'))).toMatch(
      /^--query-mix: expected point:range:scan/,
    );
    expect(msg(() => checkBenchValue('query-mix', '0:0:0'))).toBe(
      '--query-mix: the weights must not all be 0',
    );
    expect(msg(() => parseQueryWeights('-1:1:1'))).toMatch(/^--query-mix: expected/);
  });
});

const PAPER = 'workloads/paper-classes.yaml';

describe('--workload file', () => {
  it('reads the shipped example', () => {
    const v = loadWorkloadFile(PAPER);
    expect(v.premium).toEqual({
      queriesPerSession: 5,
      thinkTimeMs: 100,
      queryWeights: { point: 0.8, range: 0.2, scan: 0 },
    });
    expect(v.freemium?.queriesPerSession).toBe(30);
  });

  it('names the line and field of a bad value', () => {
    const text = [
      'classes:', // 1
      '  premium:', // 2
      '    queriesPerSession: 5', // 3
      '  freemium:', // 4
      '    queriesPerSession: -2', // 5
    ].join('\n');
    expect(msg(() => parseWorkloadFile(text, 'w.yaml'))).toBe(
      'w.yaml:5: classes.freemium.queriesPerSession must be > 0 (got -2)',
    );
    expect(msg(() => parseWorkloadFile('classes:\n  premium:\n    thinkTime: soon\n', 'w.yaml'))).toBe(
      'w.yaml:3: classes.premium.thinkTime must be a duration like 250ms or 1s (got "soon")',
    );
    expect(msg(() => parseWorkloadFile('classes:\n  premium:\n    queriesPerSesion: 5\n', 'w.yaml'))).toBe(
      'w.yaml:3: classes.premium has unknown field "queriesPerSesion"',
    );
    expect(
      msg(() =>
        parseWorkloadFile(
          'classes:\n  freemium:\n    queryWeights: {point: 0, range: 0, scan: 0}\n',
          'w.yaml',
        ),
      ),
    ).toBe('w.yaml:3: classes.freemium.queryWeights: the weights must not all be 0');
    expect(msg(() => parseWorkloadFile('classes: [1\n', 'w.yaml'))).toMatch(/^w\.yaml:\d+: yaml: /);
    expect(msg(() => loadWorkloadFile(join(root, 'missing.yaml')))).toMatch(
      /^--workload: .*missing\.yaml: cannot read \(no such file\)$/,
    );
  });

  it('is overridden by the flags given, class by class', () => {
    const r = resolveClasses({ workload: PAPER, 'queries-per-session': 'freemium=40', 'query-mix': '1:0:0' });
    expect(r.autoThink).toBe(false);
    expect(r.classes.premium).toEqual({
      queriesPerSession: 5,
      thinkTimeMs: 100,
      queryWeights: { point: 1, range: 0, scan: 0 },
    });
    expect(r.classes.freemium).toEqual({
      queriesPerSession: 40,
      thinkTimeMs: 500,
      queryWeights: { point: 1, range: 0, scan: 0 },
    });
    // No file, no flags: the defaults; auto keeps the file's think times as the ratio to scale.
    expect(resolveClasses({}).classes.premium).toEqual({
      queriesPerSession: 10,
      thinkTimeMs: 250,
      queryWeights: { point: 0.5, range: 0.3, scan: 0.2 },
    });
    const auto = resolveClasses({ workload: PAPER, 'think-time': 'auto' });
    expect(auto.autoThink).toBe(true);
    expect([auto.classes.premium.thinkTimeMs, auto.classes.freemium.thinkTimeMs]).toEqual([100, 500]);
  });
});

describe('thinkTimesFor', () => {
  const same = { replicas: 5, cpusPerReplica: 0.5, targetCpu: 0.7, cpuPerConnectS: 0.003 };
  const cls = (over: Partial<ClassThinkInputs> = {}): ClassThinkInputs => ({
    clients: 500,
    queriesPerSession: 10,
    cpuPerQueryS: 0.0012,
    fixedWallS: 0.01,
    baseThinkMs: 250,
    ...over,
  });

  it('gives thinkTimeFor’s think time when the classes are alike', () => {
    const one = thinkTimeFor({
      clients: 1000,
      replicas: 5,
      cpusPerReplica: 0.5,
      targetCpu: 0.7,
      queriesPerSession: 10,
      cpuPerQueryS: 0.0012,
      cpuPerConnectS: 0.003,
      connectWallS: 0.01,
    });
    const both = thinkTimesFor({ ...same, classes: { premium: cls(), freemium: cls() } });
    expect(Math.abs(both.thinkTimeMs.premium - one.thinkTimeMs)).toBeLessThanOrEqual(1);
    expect(both.thinkTimeMs.freemium).toBe(both.thinkTimeMs.premium);
    expect(both.targetQps).toBeCloseTo(one.targetQps, 0);
  });

  it('scales both classes by one factor, keeping their ratio, and hits the target', () => {
    const classes = {
      premium: cls({ clients: 250, queriesPerSession: 5, baseThinkMs: 100 }),
      freemium: cls({ clients: 750, queriesPerSession: 30, baseThinkMs: 500, cpuPerQueryS: 0.003 }),
    };
    const r = thinkTimesFor({ ...same, classes });
    expect(r.shortfall).toBeNull();
    expect(r.thinkTimeMs.freemium / r.thinkTimeMs.premium).toBeCloseTo(5, 1);
    // The CPU the sessions offer at those think times is the target's.
    const u = 0.7;
    let cpu = 0;
    for (const c of [classes.premium, classes.freemium]) {
      const think = (c.baseThinkMs * r.scale) / 1000;
      const cycle =
        c.fixedWallS +
        (c.queriesPerSession * c.cpuPerQueryS) / 0.5 / (1 - u) +
        (c.queriesPerSession - 1) * think;
      cpu += (c.clients * (c.queriesPerSession * c.cpuPerQueryS + 0.003)) / cycle;
    }
    expect(cpu).toBeCloseTo(u * 5 * 0.5, 2);
  });

  it('says so when even no think time cannot reach the target', () => {
    const r = thinkTimesFor({
      ...same,
      classes: { premium: cls({ clients: 1 }), freemium: cls({ clients: 1 }) },
    });
    expect(r.thinkTimeMs).toEqual({ premium: 0, freemium: 0 });
    expect(r.shortfall).toMatch(/^2 clients cannot reach 70% replica CPU/);
  });
});

describe('bench --driver sim with classes that differ', () => {
  it('records each class’s values, and each class runs its own sessions', async () => {
    const out = join(root, 'sim');
    const plan = file(
      'short.yaml',
      'name: short\nduration: 20s\nwarmup: 5s\nreference: 10s\nreplicas: 3\nevents: []\n',
    );
    const lines: string[] = [];
    const code = await executeBench(
      benchFlagValues(out, 'plb-workload-test', 25532, {
        plan,
        clients: 24,
        seed: 5,
        mixes: '50:50',
        driver: 'sim',
        json: true,
        workload: PAPER,
        'queries-per-session': 'premium=4,freemium=40',
        'think-time': '20ms',
      }),
      { log: () => undefined, warn: (l) => lines.push(l) },
    );
    expect(code, lines.join('\n')).toBe(0);
    const dirs = readdirSync(out).filter((d) => existsSync(join(out, d, 'summary.json')));
    expect(dirs).toHaveLength(1);
    const dir = join(out, dirs[0]!);
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as {
      workloadFile: string;
      workload: {
        classes: Record<string, { queriesPerSession: number; thinkTimeMs: number; queryWeights: object }>;
      };
    };
    expect(config.workloadFile).toBe(PAPER);
    expect(config.workload.classes.premium).toEqual({
      queriesPerSession: 4,
      thinkTimeMs: 20,
      queryWeights: { point: 0.8, range: 0.2, scan: 0 },
    });
    expect(config.workload.classes.freemium).toMatchObject({ queriesPerSession: 40, thinkTimeMs: 20 });
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as RunSummary;
    const ref = summary.phases[0]!;
    const ratio = (c: 'premium' | 'freemium') => ref.classes[c].queries / ref.classes[c].sessionsOpened;
    expect(ratio('premium')).toBeLessThan(6);
    expect(ratio('freemium')).toBeGreaterThan(4 * ratio('premium'));
  });

  it('auto scales both classes by one factor (the file gives the ratio)', async () => {
    const out = join(root, 'auto');
    const plan = file(
      'short2.yaml',
      'name: short\nduration: 20s\nwarmup: 5s\nreference: 10s\nreplicas: 3\nevents: []\n',
    );
    const lines: string[] = [];
    const code = await executeBench(
      benchFlagValues(out, 'plb-workload-test', 25532, {
        plan,
        clients: 40,
        seed: 5,
        driver: 'sim',
        json: true,
        workload: PAPER,
        'queries-per-session': undefined,
        'think-time': 'auto',
      }),
      { log: () => undefined, warn: (l) => lines.push(l) },
    );
    expect(code, lines.join('\n')).toBe(0);
    expect(lines.some((l) => /^think time auto \(simulated\): premium \d+ ms, freemium \d+ ms/.test(l))).toBe(
      true,
    );
    const dir = readdirSync(out).find((d) => existsSync(join(out, d, 'config.json')))!;
    const config = JSON.parse(readFileSync(join(out, dir, 'config.json'), 'utf8')) as {
      calibration: { classThinkTimeMs: { premium: number; freemium: number } };
      workload: { classes: Record<string, { thinkTimeMs: number }> };
    };
    const t = config.workload.classes;
    expect(t.premium!.thinkTimeMs).toBeGreaterThan(0);
    expect(t.freemium!.thinkTimeMs / t.premium!.thinkTimeMs).toBeCloseTo(5, 1);
    expect(config.calibration.classThinkTimeMs).toEqual({
      premium: t.premium!.thinkTimeMs,
      freemium: t.freemium!.thinkTimeMs,
    });
  });
});
