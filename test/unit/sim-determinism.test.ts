// Same seed, same bytes: every file of a simulated run directory (config, events, timeline,
// per-second histograms, summary, report) repeats exactly, with plb borrowing under hold=dwell and
// a calibration that models host contention.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { loadCalibration } from '../../src/cluster/sim/calibration.js';
import { benchFlagValues } from '../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'plb-sim-determinism-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

/** A simulated demo-cascade bench into `out` (48 clients, think 200 ms), with the flags given. */
async function simBench(out: string, flags: Record<string, string | number>): Promise<void> {
  const lines: string[] = [];
  const code = await executeBench(
    benchFlagValues(out, 'plb-sim-det', 25432, {
      plan: 'plans/demo-cascade.yaml',
      clients: 48,
      'think-time': '200ms',
      driver: 'sim',
      json: true,
      ...flags,
    }),
    { log: () => undefined, warn: (l) => lines.push(l) },
  );
  expect(code, lines.join('\n')).toBe(0);
}

async function run(out: string, calibration: string): Promise<Map<string, string>> {
  await simBench(out, { seed: 5, strategies: 'plb', readings: 'hold=dwell', calibration });
  return new Map(files(out).map((f) => [relative(out, f), readFileSync(f, 'utf8')]));
}

describe('simulated runs are deterministic', () => {
  it('the same seed writes the same bytes in every file of the run directory', async () => {
    const cal = join(root, 'cal.json');
    writeFileSync(cal, JSON.stringify({ ...loadCalibration(), hostShare: 0.5 }));
    const a = await run(join(root, 'a'), cal);
    const b = await run(join(root, 'b'), cal);
    expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
    expect([...a.keys()].some((f) => f.endsWith('timeline.csv'))).toBe(true);
    for (const [f, text] of a) expect(b.get(f), f).toBe(text);
    const config = [...a].find(([f]) => f.endsWith('config.json'))?.[1] ?? '';
    expect(JSON.parse(config)).toMatchObject({
      readings: { hold: 'dwell' },
      simCalibration: { contents: { hostShare: 0.5 } },
    });
  });
});

describe('the runs of a simulated series are independent', () => {
  const bench = (out: string, strategies: string): Promise<void> => simBench(out, { seed: 9, strategies });
  /** The rr run's files that say what happened (the run id and start time aside). */
  const rrRun = (out: string): Record<string, unknown> => {
    const dir = readdirSync(out).find((d) => d.includes('-rr-'));
    if (dir === undefined) throw new Error(`no rr run in ${out}`);
    const read = (f: string): string => readFileSync(join(out, dir, f), 'utf8');
    const {
      startedAt: _,
      runId: __,
      ...summary
    } = JSON.parse(read('summary.json')) as Record<string, unknown>;
    return { summary, timeline: read('timeline.csv'), events: read('events.jsonl') };
  };

  it('a run after another is the same run as alone (nothing of the first goes on into it)', async () => {
    await bench(join(root, 'series'), 'plb,rr');
    await bench(join(root, 'alone'), 'rr');
    const after = rrRun(join(root, 'series'));
    const alone = rrRun(join(root, 'alone'));
    expect(after.summary).toEqual(alone.summary);
    expect(after.timeline).toBe(alone.timeline);
    expect(after.events).toBe(alone.events);
  });
});
