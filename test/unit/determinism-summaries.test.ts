// Determinism as a check: fixed-seed simulated runs of the demo (as `npm run demo` runs it) and of
// RQ3 (as `plb paper run rq3` runs it, one repeat) must write summary.json byte for byte as the
// committed files in test/fixtures/determinism/. A simulated summary holds nothing that varies
// from run to run (virtual start time and run ids, no host, path or version), so the whole file is
// compared. A change that moves it: `npm run determinism:update`, and commit the files in the same
// commit with the reason in its message (CONTRIBUTING.md).
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO, simSeries } from '../helpers/sim-series.js';

const FIXTURES = join(REPO, 'test/fixtures/determinism');
const UPDATE = process.env.PLB_DETERMINISM_UPDATE === '1';
const root = mkdtempSync(join(tmpdir(), 'plb-determinism-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const CASES = [
  {
    name: 'demo',
    cmd: 'bench run',
    args: ['--plan', join(REPO, 'plans/demo.yaml'), '--strategy', 'plb,rr,static', '--seed', '7'],
  },
  // The experiment as shipped (plan, T=600, plb, the three mixes) with one repeat: a repeat is the
  // same run as alone with its seed (sim-determinism.test.ts), so more add time, not coverage.
  { name: 'rq3', cmd: 'paper run', args: ['rq3', '--seed', '7', '--repeat', '1'] },
] as const;

/** The first line at which two texts differ, for a message that says where. */
function firstDiff(a: string, b: string): string {
  const x = a.split('\n');
  const y = b.split('\n');
  const i = x.findIndex((l, k) => l !== y[k]);
  const at = i === -1 ? Math.min(x.length, y.length) : i;
  return `line ${at + 1}: committed ${JSON.stringify(x[at] ?? '(end)')}, now ${JSON.stringify(y[at] ?? '(end)')}`;
}

describe('fixed-seed simulated runs write the committed summaries', () => {
  it('refuses to update the committed files in CI', () => {
    expect(UPDATE && process.env.CI === 'true').toBe(false);
  });

  for (const c of CASES)
    it(`${c.name}: every summary.json byte for byte`, { timeout: 300_000 }, async () => {
      const out = join(root, c.name);
      const runs = await simSeries(c.cmd, [...c.args], out);
      const dir = join(FIXTURES, c.name);
      const name = (run: string): string => `${run}.summary.json`;
      if (UPDATE) {
        rmSync(dir, { recursive: true, force: true });
        mkdirSync(dir, { recursive: true });
        for (const run of runs)
          writeFileSync(join(dir, name(run)), readFileSync(join(out, run, 'summary.json')));
        return;
      }
      const hint = 'if the change is meant: npm run determinism:update, and commit the files with the reason';
      expect(existsSync(dir), `${dir} missing: ${hint}`).toBe(true);
      expect(runs.map(name), hint).toEqual(readdirSync(dir).sort());
      for (const run of runs) {
        const committed = readFileSync(join(dir, name(run)), 'utf8');
        const now = readFileSync(join(out, run, 'summary.json'), 'utf8');
        expect(now === committed, `${c.name}/${name(run)} ${firstDiff(committed, now)}; ${hint}`).toBe(true);
      }
    });
});
