import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import BenchMatrix from '../../src/commands/bench/matrix.js';
import BenchRun from '../../src/commands/bench/run.js';
import Report from '../../src/commands/report.js';
import Roles from '../../src/commands/roles.js';
import PlanShow from '../../src/commands/plan/show.js';
import { checkBenchValue } from '../../src/bench/options/checks.js';
import { PlbError } from '../../src/core/errors.js';
import { errorJson, errorLine, EXIT_CODES_HELP, exitCodeOf } from '../../src/core/fail.js';
import { renderSideBySide } from '../../src/report/tables/side-by-side.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import {
  etaSeconds,
  formatSeconds,
  progressBar,
  seriesProgressLine,
  trackSeries,
} from '../../src/bench/series-progress.js';
import { runCommand } from '../helpers/fixtures.js';

// The exit-code table lives in docs/cli.md (README.md links to it).
const CLI_DOC = readFileSync(join(import.meta.dirname, '../../docs/cli.md'), 'utf8');

const run = runCommand;

afterEach(() => {
  process.exitCode = undefined;
});

describe('bad input: one check when the command line is read, one line, exit 1', () => {
  it.each([
    [['--clients', '0'], /^Error: --clients: must be a positive integer \(got 0\)\n$/],
    [['--clients', 'many'], /^Error: --clients: must be a positive integer \(got NaN\)\n$/],
    [['--think-time', 'soon'], /^Error: --think-time: expected a duration/],
    [['--strategy', 'plb,fast'], /^Error: --strategy: unknown strategy "fast"/],
    [['--mix', '25:75,2:x'], /^Error: --mix: expected premium:freemium/],
    [['--seed', '-1'], /^Error: --seed: must be an integer from 0 to 4294967295/],
    [['--borrow', '1:2'], /^Error: --borrow: the premium ratio must be > 1/],
    [['--base-port', '70000'], /^Error: --base-port: must be at most 65535/],
    [
      ['--driver', 'cloud'],
      /^Error: Expected --driver=cloud to be one of: auto, docker, local, sim, external \(hint: see --help\)\n$/,
    ],
  ])('bench run %j', async (argv, message) => {
    const r = await run(BenchRun, argv);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stdout).toBe('');
  });

  it('bench matrix takes the same names, and the old ones as deprecated aliases', async () => {
    const named = await run(BenchMatrix, ['--strategy', 'plb,nope']);
    const alias = await run(BenchMatrix, ['--strategies', 'plb,nope']);
    expect(named.code).toBe(1);
    expect(alias.code).toBe(1);
    expect(named.stderr).toMatch(/^Error: --strategy: unknown strategy "nope"/);
    expect(alias.stderr).toMatch(/^Error: --strategy: unknown strategy "nope"/);
    expect((await run(BenchMatrix, ['--mixes', '1:x'])).stderr).toMatch(/^Error: --mix: expected/);
    const flags = BenchMatrix.flags;
    expect(flags.strategy.aliases).toEqual(['strategies']);
    expect(flags.strategy.deprecateAliases).toBe(true);
    expect(flags.mix.aliases).toEqual(['mixes']);
    expect(Object.keys(BenchRun.flags).sort()).toEqual(Object.keys(BenchMatrix.flags).sort());
  });

  it('an unknown flag is a usage error: exit 2', async () => {
    const r = await run(Roles, ['--nope']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^Error: Nonexistent flag: --nope \(hint: see --help\)\n$/);
  });

  it('with --json the error is JSON on stdout, same exit code', async () => {
    const r = await run(BenchRun, ['--clients', '0', '--json']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({
      error: { code: 'BAD_INPUT', message: '--clients: must be a positive integer (got 0)', hint: null },
    });
    const roles = await run(Roles, ['--reference', '2:1', '--json']);
    expect(roles.code).toBe(1);
    const e = (JSON.parse(roles.stdout) as { error: { code: string; message: string } }).error;
    expect(e.code).toBe('BAD_INPUT');
    expect(e.message).toMatch(/^--reference/);
  });

  it('every flag of the bench commands sits in a help group', () => {
    for (const [name, f] of Object.entries(BenchRun.flags))
      expect((f as { helpGroup?: string }).helpGroup, name).toMatch(/^[A-Z ]+$/);
  });
});

describe("oclif's own checks name the flag too", () => {
  it('roles --replicas 0', async () => {
    const r = await run(Roles, ['--replicas', '0']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^Error: --replicas: Expected an integer greater than or equal to 1/);
  });

  it('a missing argument is a usage error naming it; plan show defaults to the demo plan', async () => {
    const r = await run(PlanShow, ['--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toHaveProperty('plan', 'demo-cascade');
    const missing = await run(Report, []);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('Error: missing argument runDir (hint: see --help)\n');
  });
});

describe('side by side', () => {
  const dir = join(import.meta.dirname, '../fixtures/runs/demo-cascade');
  const sums = ['plb-1', 'rr-1', 'static-1'].map(
    (n) => JSON.parse(readFileSync(join(dir, `demo-cascade-${n}`, 'summary.json'), 'utf8')) as RunSummary,
  );
  const width = (t: string): number =>
    Math.max(
      ...t
        .split('\n')
        .filter((l) => /^[┌│└├]/.test(l))
        .map((l) => l.length),
    );

  it('three runs fit in 100 columns by default; wide has the goodput and failed sessions', () => {
    expect(width(renderSideBySide(sums))).toBeLessThanOrEqual(100);
    const wide = renderSideBySide(sums, { wide: true });
    expect(wide).toContain('q/s');
    expect(wide).toContain('failed');
    expect(width(wide)).toBeGreaterThan(100);
  });
});

describe('--json on every command', () => {
  it('roles and plan show print their result as JSON', async () => {
    const roles = await run(Roles, ['--json']);
    expect(roles.code).toBe(0);
    expect((JSON.parse(roles.stdout) as { replicas: number }).replicas).toBe(5);
    const show = await run(PlanShow, [join(import.meta.dirname, '../../plans/demo-cascade.yaml'), '--json']);
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toHaveProperty('plan', 'demo-cascade');
  });
});

describe('errors', () => {
  it('one line, hint kept, exit code by kind', () => {
    const e = new PlbError('BAD_INPUT', 'x: bad', { hint: 'try y' });
    expect(errorLine(e)).toBe('x: bad (hint: try y)');
    expect(errorJson(e)).toEqual({ error: { code: 'BAD_INPUT', message: 'x: bad', hint: 'try y' } });
    expect(exitCodeOf(e)).toBe(1);
    expect(exitCodeOf(new PlbError('TOLERANCE_EXCEEDED', 'moved'))).toBe(3);
    // What oclif makes of a parse function's error: back to the message.
    const wrapped = new PlbError('BAD_INPUT', '--a: bad');
    wrapped.message = `Parsing --a \n\t--a: bad\nSee more help with --help`;
    expect(errorLine(wrapped)).toBe('--a: bad');
  });

  it('report --help and docs/cli.md list the same exit codes', () => {
    const table = [...CLI_DOC.matchAll(/^\| (\d+(?:, \d+)*) \|/gm)].flatMap((m) => m[1]!.split(', '));
    const help = [...EXIT_CODES_HELP.matchAll(/^(\d+) /gm)].map((m) => m[1]!);
    // The signal codes belong to bench run, not report.
    expect(table.filter((c) => !['130', '143', '129'].includes(c))).toEqual(help);
  });

  it('checkBenchValue is the one check', () => {
    expect(checkBenchValue('clients', 10)).toBe(10);
    expect(() => checkBenchValue('clients', 0)).toThrow(/--clients/);
    expect(checkBenchValue('think-time', 'auto')).toBe('auto');
    expect(checkBenchValue('think-time', '250ms')).toEqual({ premium: 250, freemium: 250 });
  });
});

describe('series progress', () => {
  it('formats durations and a bar', () => {
    expect(formatSeconds(5)).toBe('5s');
    expect(formatSeconds(75)).toBe('1m15s');
    expect(formatSeconds(3700)).toBe('1h01m40s');
    expect(progressBar(1, 4, 8)).toBe('[##------]');
  });

  it('ETA from the plan length and the measured overhead a run', () => {
    const p = { total: 4, done: 2, elapsedS: 140, planS: 60, runWallS: [70, 70] };
    expect(etaSeconds(p)).toBe(140);
    expect(etaSeconds({ ...p, done: 0, runWallS: [] })).toBeNull();
    expect(seriesProgressLine(p)).toBe(
      'series: 2/4 runs done, elapsed 2m20s, ETA 2m20s (plan 1m00s + 10s a run)',
    );
    expect(seriesProgressLine({ ...p, done: 0, elapsedS: 0, runWallS: [] }, { bar: true })).toMatch(
      /^\[-{20}\] series: 0\/4 runs done, elapsed 0s, ETA at least 4m00s/,
    );
  });

  it('follows a series from its run starts', () => {
    let t = 0;
    const lines: string[] = [];
    const track = trackSeries({ total: 3, planS: 10, emit: (l) => lines.push(l), now: () => t });
    track.runStarted(0);
    t = 12_000;
    track.runStarted(1);
    t = 24_000;
    track.runStarted(2);
    t = 36_000;
    track.finished();
    expect(lines).toEqual([
      'series: 0/3 runs done, elapsed 0s, ETA at least 30s (plan 10s a run; overhead measured after the first)',
      'series: 1/3 runs done, elapsed 12s, ETA 24s (plan 10s + 2s a run)',
      'series: 2/3 runs done, elapsed 24s, ETA 12s (plan 10s + 2s a run)',
      'series: 3/3 runs done, elapsed 36s, ETA 0s (plan 10s + 2s a run)',
    ]);
  });
});
