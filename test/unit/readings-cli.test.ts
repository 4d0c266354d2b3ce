// --readings end to end: `plb roles`, `plb plan show`, the bench flag check, and a simulated bench
// run that records the readings in config.json and applies them (events.jsonl).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { checkBenchValue } from '../../src/bench/options/checks.js';
import { executeBench } from '../../src/bench/execute.js';
import PlanShow from '../../src/commands/plan/show.js';
import Roles from '../../src/commands/roles.js';
import { benchFlagValues, runCommand } from '../helpers/fixtures.js';

/** A command's text output (this.log), which runCommand does not capture. */
async function logged(cmd: typeof Roles | typeof PlanShow, argv: string[]): Promise<string> {
  const lines: string[] = [];
  const spy = vi.spyOn(cmd.prototype, 'log').mockImplementation((l?: string) => void lines.push(l ?? ''));
  try {
    const r = await runCommand(cmd, argv);
    expect(r.code, r.stderr).toBe(0);
  } finally {
    spy.mockRestore();
  }
  return `${lines.join('\n')}\n`;
}

const root = mkdtempSync(join(tmpdir(), 'plb-readings-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => {
  process.exitCode = undefined;
});

describe('plb roles --readings', () => {
  it('uses a reference that sums to K as given at K+=K (literal, the default)', async () => {
    const out = await logged(Roles, ['--reference', '3:0:2']);
    expect(out).toContain('full-capacity split 3:0:2');
    expect(out).toContain(
      'readings: donors=mixed-first canonicalize=all reference=literal repair=target floors=classes lend=normal',
    );
    expect(out).toMatch(/│ 5\s*│ 3\s*│ 0\s*│ 2\s*│ reference/);
    expect(out).toMatch(/│ 4\s*│ 2\s*│ 0\s*│ 2\s*│ scaled \+ floors/); // floors on the two classes only
    const plb = await logged(Roles, ['--reference', '3:0:2', '--readings', 'plb']);
    expect(plb).toMatch(/│ 4\s*│ 2\s*│ 1\s*│ 1\s*│ scaled \+ floors/);
  });
  it('floored: the old behaviour, 3:0:2 -> 3:1:1', async () => {
    const r = await runCommand(Roles, [
      '--reference',
      '3:0:2',
      '--readings',
      'plb,reference=floored',
      '--json',
    ]);
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout) as { full: unknown; readings: { reference: string } };
    expect(json.full).toEqual({ premium: 3, mixed: 1, freemium: 1 });
    expect(json.readings.reference).toBe('floored');
  });
  it('shows the ablations: shared pools below K, none keeps the roles', async () => {
    const shared = await runCommand(Roles, ['--readings', 'repair=shared', '--json']);
    const rows = (
      JSON.parse(shared.stdout) as { targets: { survivors: number; mixed: number; rule: string }[] }
    ).targets;
    expect(rows[1]).toMatchObject({ survivors: 4, premium: 0, mixed: 4, freemium: 0, rule: 'shared' });
    const none = await runCommand(Roles, ['--readings', 'repair=none', '--json']);
    expect((JSON.parse(none.stdout) as { targets: unknown[] }).targets[2]).toEqual({
      survivors: 3,
      premium: null,
      mixed: null,
      freemium: null,
      rule: 'kept',
    });
  });
  it('rejects a bad reading in one line', async () => {
    const r = await runCommand(Roles, ['--readings', 'donors=most']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("Error: --readings: donors must be above-target or mixed-first, got 'most'\n");
  });
});

describe('plb plan show --readings', () => {
  it('prints the readings a run would use on one line, with the borrowing ratios', async () => {
    expect(await logged(PlanShow, [])).toContain(
      '\nreadings: donors=mixed-first canonicalize=all reference=literal repair=target floors=classes lend=normal; borrow 1.5:2\n',
    );
    expect(await logged(PlanShow, ['--readings', 'plb'])).toContain(
      '\nreadings: donors=above-target canonicalize=borrowed reference=literal repair=target; borrow 1.5:2\n',
    );
    expect(await logged(PlanShow, ['--readings', 'paper', '--borrow', 'off'])).toContain(
      '\nreadings: donors=mixed-first canonicalize=all reference=literal repair=target floors=classes lend=normal; borrow off\n',
    );
  });
  it('replays the plan under the readings', async () => {
    const r = await runCommand(PlanShow, ['--readings', 'repair=shared', '--json']);
    const show = JSON.parse(r.stdout) as { rows: { target: unknown; replicas: { role: string }[] }[] };
    expect(show.rows[1]!.target).toEqual({ premium: 0, mixed: 4, freemium: 0 });
    expect(show.rows[1]!.replicas.slice(1).map((x) => x.role)).toEqual(['mixed', 'mixed', 'mixed', 'mixed']);
  });
  it('refuses --readings and --borrow for another strategy', async () => {
    const r = await runCommand(PlanShow, ['--strategy', 'rr', '--readings', 'paper']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('Error: --readings applies to --strategy plb only (got --strategy rr)\n');
  });
});

describe('bench --readings', () => {
  it('is checked where it is read, and again in executeBench (nothing started)', async () => {
    expect(() => checkBenchValue('readings', 'paper,repair=half')).toThrow(
      /^--readings: repair must be target or none or shared, got 'half'$/,
    );
    const out = join(root, 'bad');
    const lines: string[] = [];
    const code = await executeBench(benchFlagValues(out, 'plb-readings-test', 25532, { readings: 'nope' }), {
      log: () => undefined,
      warn: (l) => lines.push(l),
    });
    expect(code).toBe(1);
    expect(lines).toEqual([
      "Error: --readings: unknown preset 'nope' (presets: plb, paper; or key=value with donors, canonicalize, reference, repair, hold, floors, lend, reclaim)",
    ]);
    expect(existsSync(out)).toBe(false);
  });

  it('--driver sim: config.json records the readings, and events.jsonl shows them applied', async () => {
    const out = join(root, 'sim');
    const plan = join(root, 'one-down.yaml');
    writeFileSync(
      plan,
      'name: one-down\nduration: 20s\nwarmup: 2s\nreference: 8s\nreplicas: 5\nevents:\n  - { at: 10s, replica: r1, action: down }\n',
    );
    const lines: string[] = [];
    const code = await executeBench(
      benchFlagValues(out, 'plb-readings-test', 25532, {
        plan,
        driver: 'sim',
        seed: 3,
        clients: 16,
        json: true,
        readings: 'paper',
      }),
      { log: () => undefined, warn: (l) => lines.push(l) },
    );
    expect(code, lines.join('\n')).toBe(0);
    const dir = readdirSync(out)
      .map((d) => join(out, d))
      .find((d) => existsSync(join(d, 'config.json')))!;
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(config.driver).toBe('sim');
    expect(config.readings).toEqual({
      donors: 'mixed-first',
      canonicalize: 'all',
      reference: 'literal',
      repair: 'target',
      hold: 'none',
      floors: 'classes',
      lend: 'normal',
      reclaim: 'none',
    });
    // mixed-first: the mixed replica r3 takes premium's place (mixed's target is 0 at K+=4).
    const events = readFileSync(join(dir, 'events.jsonl'), 'utf8');
    // The role changes at the down event: canonicalize (every replica, by what it carries) then
    // repair to 2:0:2 (floors on the two classes only) with a mixed replica donating to premium first.
    const atDown = events
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            type: string;
            tMs: number;
            replica: string;
            from: string;
            to: string;
            reason: string;
          },
      )
      .filter((e) => e.type === 'role' && e.tMs === 10_000);
    expect(atDown[0]).toMatchObject({ replica: 'r1', from: 'premium', to: 'down', reason: 'down' });
    const roles = new Map([
      ['r2', 'premium'],
      ['r3', 'mixed'],
      ['r4', 'freemium'],
      ['r5', 'freemium'],
    ]);
    for (const e of atDown.slice(1)) {
      expect(['canonicalize', 'repair']).toContain(e.reason);
      roles.set(e.replica, e.to);
    }
    const count = (role: string) => [...roles.values()].filter((r) => r === role).length;
    expect([count('premium'), count('mixed'), count('freemium')]).toEqual([2, 0, 2]);
    expect(atDown.some((e) => e.reason === 'repair' && e.from === 'mixed' && e.to === 'premium')).toBe(true);
  });
});
