// Two simulated series hold the same run ids (each counts virtual time from 0): the report must
// still pool them as two runs, not one run's seconds twice.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { writeReports } from '../../src/report/report.js';
import { benchFlagValues } from '../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'plb-report-ids-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function series(out: string, seed: number): Promise<void> {
  const lines: string[] = [];
  const code = await executeBench(
    benchFlagValues(out, 'plb-report-ids', 25432, {
      plan: 'plans/demo-cascade.yaml',
      clients: 32,
      seed,
      strategies: 'plb',
      driver: 'sim',
      json: true,
    }),
    { log: () => undefined, warn: (l) => lines.push(l) },
  );
  expect(code, lines.join('\n')).toBe(0);
}

const downOne = async (paths: string[]) => {
  const { groups } = await writeReports(paths, { format: 'json', html: false });
  const [g] = groups;
  const cell = g?.evidence?.phases.find((p) => p.name === 'down-1')?.classes.premium;
  return { runIds: g?.runIds ?? [], cell };
};

describe('report: run ids that repeat across directories', () => {
  it('pools two series of the same ids as two runs', async () => {
    const [a, b] = [join(root, 'seed-3'), join(root, 'seed-4')];
    await series(a, 3);
    await series(b, 4);
    const one = await downOne([a]);
    const two = await downOne([a, b]);
    const [id] = one.runIds;
    expect(two.runIds).toEqual([id, `${id}~2`]);
    expect(two.cell?.perRun?.map((r) => r.runId)).toEqual([id, `${id}~2`]);
    const [ra, rb] = two.cell?.perRun ?? [];
    expect(ra?.p95.value).not.toBe(rb?.p95.value);
    expect(two.cell?.seconds).toBe(2 * (one.cell?.seconds ?? 0));
  }, 180_000); // two simulated 90 s runs: seconds on a quiet machine, more beside a busy one
});
