/**
 * The hang path on the local driver: plans/guide/partitioned-replica.yaml, shortened, with
 * --shutdown-sessions. The summary has the partitioned replica's hang path (marked down), the
 * session share of every phase, and the sessions plb ended on it when it was marked down; the
 * report shows both tables; no rule of plb's is left. Needs root and iptables (network faults):
 * skipped without them, a failure in CI. Traffic only to 127.0.0.1; about a minute.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { downCluster } from '../../src/cluster/select.js';
import { writeReports } from '../../src/report/report.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { benchFlagValues, haveServerBinaries } from '../helpers/fixtures.js';

const NAME = 'plbtest-hang';
const BASE_PORT = 23640;

function haveIptables(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('iptables', ['-S', 'INPUT'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const canRun = haveServerBinaries && haveIptables();
if (process.env.CI === 'true' && !canRun)
  throw new Error('the hang path test needs postgres server binaries, root and iptables in CI');

/** Lines of iptables-save that name plb. */
function plbRules(): string[] {
  return execFileSync('iptables-save', { encoding: 'utf8' })
    .split('\n')
    .filter((l) => /plb/i.test(l));
}

/** The shipped plan with its times cut down: r2 partitioned at 10 s, healed at 22 s, 30 s in all. */
function shortPlan(): string {
  const text = readFileSync(join(import.meta.dirname, '../../plans/guide/partitioned-replica.yaml'), 'utf8');
  const short = text
    .replace(/^duration: .*$/m, 'duration: 30s')
    .replace(/^warmup: .*$/m, 'warmup: 3s')
    .replace(/^reference: .*$/m, 'reference: 6s')
    .replace(/at: 40s/, 'at: 10s')
    .replace(/at: 70s/, 'at: 22s');
  expect(short).toMatch(/at: 10s, replica: r2, action: partition/);
  expect(short).toMatch(/at: 22s, replica: r2, action: heal/);
  return short;
}

describe.skipIf(!canRun)('the hang path on the local driver', () => {
  let work = '';
  let saved: string | undefined;

  beforeAll(() => {
    saved = process.env.PLB_STATE_DIR;
    work = mkdtempSync(join(tmpdir(), 'plb-hang-it-'));
    chmodSync(work, 0o755); // the postgres OS user must reach the state folder inside
    process.env.PLB_STATE_DIR = join(work, 'state');
  });

  afterAll(async () => {
    await downCluster(NAME, join(work, 'state'), { explicit: true }).catch(() => undefined);
    if (saved === undefined) delete process.env.PLB_STATE_DIR;
    else process.env.PLB_STATE_DIR = saved;
    if (work) rmSync(work, { recursive: true, force: true });
    expect(plbRules()).toEqual([]);
  }, 60_000);

  it('records the partitioned replica marked down, the shares, and the sessions shut down', async () => {
    const plan = join(work, 'plan.yaml');
    writeFileSync(plan, shortPlan());
    const out = join(work, 'runs');
    const lines: string[] = [];
    const code = await executeBench(
      benchFlagValues(out, NAME, BASE_PORT, {
        plan,
        strategies: 'rr',
        clients: 16,
        seed: 7,
        'queries-per-session': 20,
        'think-time': '20ms',
        'health-interval': '500ms',
        'hang-timeout': '3s',
        'shutdown-sessions': true,
      }),
      { log: () => undefined, warn: (l) => lines.push(l) },
    );
    expect(code, lines.join('\n')).toBe(0);
    expect(plbRules()).toEqual([]);
    const dir = readdirSync(out)
      .map((d) => join(out, d))
      .find((d) => existsSync(join(d, 'summary.json')))!;
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as RunSummary;
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(config['shutdownSessions']).toBe(true);

    const f = summary.hangPath?.faults.find((x) => x.replica === 'r2');
    expect(f?.action).toBe('partition');
    expect(f?.downMs, JSON.stringify(f)).not.toBeNull();
    // Ended by plb when r2 was marked down: the sessions on it and the connects hanging on it.
    expect((f?.shutdown ?? 0) + (f?.connectsShut ?? 0), JSON.stringify(f)).toBeGreaterThan(0);
    const events = readFileSync(join(dir, 'events.jsonl'), 'utf8');
    expect(events).toMatch(/"what":"shutdown-sessions","replica":"r2"/);

    expect(summary.sessionShare?.map((s) => s.phase)).toEqual(['ref', 'down-1', 'rejoin-1']);
    for (const s of summary.sessionShare ?? [])
      expect(Object.keys(s.replicas).sort()).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
    expect(summary.sessionShare?.[1]?.replicas['r2']?.weightShare).toBeNull();

    const report = await writeReports([dir], { html: false });
    expect(report.text).toMatch(/hang path/);
    expect(report.text).toMatch(/session share/);
  }, 240_000);
});
