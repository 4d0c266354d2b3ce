// `plb paper list|run`: the paper's experiments as presets of a bench series, run here on the
// simulator at --quick scale (a real-cluster run of each is in the closing notes, not a test).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import PaperList from '../../src/commands/paper/list.js';
import PaperRun from '../../src/commands/paper/run.js';
import {
  estimateWallS,
  PAPER_EXPERIMENTS,
  SERIES_OVERHEAD_S,
} from '../../src/bench/paper/paper-experiments.js';
import { runCommand } from '../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'plb-paper-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function configs(out: string): Record<string, unknown>[] {
  return readdirSync(out)
    .filter((d) => !d.endsWith('.html'))
    .map((d) => JSON.parse(readFileSync(join(out, d, 'config.json'), 'utf8')) as Record<string, unknown>);
}

describe('plb paper', () => {
  it('lists the four experiments with their scale and expected wall time', async () => {
    const { code, stdout } = await runCommand(PaperList, ['--json']);
    expect(code).toBe(0);
    const rows = JSON.parse(stdout) as {
      id: string;
      clients: number;
      plan: string;
      wallS: { repeat1: number };
    }[];
    expect(rows.map((r) => r.id)).toEqual(['rq1', 'rq2', 'fig5', 'rq3']);
    expect(rows.map((r) => r.clients)).toEqual([1000, 1000, 1000, 600]);
    expect(rows.find((r) => r.id === 'rq1')?.plan).toBe('paper-rq1');
    // RQ1 one repeat: 6 runs of the 240 s plan, plus what a series costs besides.
    expect(rows.find((r) => r.id === 'rq1')?.wallS.repeat1).toBe(
      6 * (240 + SERIES_OVERHEAD_S.perRun) + SERIES_OVERHEAD_S.once,
    );
  });

  it('--dry-run prints the series, the wall time and the equivalent bench command, and runs nothing', async () => {
    const out = join(root, 'dry');
    const { code, stderr } = await runCommand(PaperRun, ['rq3', '--dry-run', '--out', out]);
    expect(code).toBe(0);
    expect(stderr).toContain(
      '9 run(s): plb x 25:75,50:50,75:25 x 3 repeat(s), T=600, plan paper-rq3 (360 s)',
    );
    expect(stderr).toMatch(/expected wall time: about \d+ min/);
    expect(stderr).toContain('--clients 600 --think-time auto');
    expect(() => readdirSync(out)).toThrow();
  });

  // Two simulated runs of RQ2's quick plan: seconds alone, more beside other CPU-heavy work.
  it('runs RQ2 --quick on the simulator: the paper strategies, a fifth of T, the quick plan', async () => {
    const out = join(root, 'rq2');
    const { code, stderr } = await runCommand(PaperRun, [
      'rq2',
      '--quick',
      '--driver',
      'sim',
      '--repeat',
      '1',
      '--seed',
      '5',
      '--progress',
      '0',
      '--out',
      out,
    ]);
    expect(code, stderr).toBe(0);
    const cfg = configs(out);
    expect(cfg.map((c) => c.strategy).sort()).toEqual(['plb', 'rr']);
    for (const c of cfg) {
      expect(c.clients).toBe(PAPER_EXPERIMENTS.rq2.clients / 5);
      expect((c.plan as { name: string }).name).toBe('paper-rq2-quick');
      expect(c.mix).toEqual({ premium: 25, freemium: 75 });
    }
  }, 120_000);

  it('a flag given on the command line wins over the experiment', async () => {
    const out = join(root, 'over');
    const { code, stderr } = await runCommand(PaperRun, [
      'rq1',
      '--quick',
      '--driver',
      'sim',
      '--repeat',
      '1',
      '--strategy',
      'plb',
      '--mix',
      '50:50',
      '--clients',
      '40',
      '--think-time',
      '500ms',
      '--progress',
      '0',
      '--out',
      out,
    ]);
    expect(code, stderr).toBe(0);
    const [c] = configs(out);
    expect(c?.strategy).toBe('plb');
    expect(c?.clients).toBe(40);
    expect(c?.mix).toEqual({ premium: 50, freemium: 50 });
    expect(
      (c?.workload as { classes: { premium: { thinkTimeMs: number } } }).classes.premium.thinkTimeMs,
    ).toBe(500);
  });

  it('an unknown experiment is one line naming the choices, exit 1, nothing run', async () => {
    const { code, stderr } = await runCommand(PaperRun, ['rq9', '--out', join(root, 'bad')]);
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain('rq1, rq2, fig5, rq3');
  });

  it('estimates a simulated series in seconds, a real one with its per-run cost', () => {
    expect(estimateWallS({ duration: 360 }, 3, 'sim')).toBeLessThan(60);
    expect(estimateWallS({ duration: 360 }, 3, 'docker')).toBe(3 * (360 + 20) + 60);
  });
});
