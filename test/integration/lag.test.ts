/**
 * Writes and lag on a local-process cluster: `plb bench run --write-rate 200` with a plan that
 * pauses r1's WAL replay and resumes it. r1's measured lag rises while paused (r2's does not) and
 * falls after the resume; the run completes and the cluster is taken down. Skips only when the
 * server binaries are not installed.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { downCluster } from '../../src/cluster/select.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { benchFlagValues, haveServerBinaries } from '../helpers/fixtures.js';

const NAME = 'plbtest-lag';
const PORT = 26760; // below the ephemeral range (32768-60999), where a client source port can take it

describe.skipIf(!haveServerBinaries)('writes and replication lag (local driver)', () => {
  let work = '';
  let savedStateDir: string | undefined;

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'plb-lag-it-'));
    // The postgres OS user must traverse the state folder (mkdtemp makes it 0700).
    chmodSync(work, 0o755);
    savedStateDir = process.env['PLB_STATE_DIR'];
    process.env['PLB_STATE_DIR'] = join(work, 'state');
  });

  afterAll(async () => {
    await downCluster(NAME, join(work, 'state'), { explicit: true }).catch(() => undefined);
    if (savedStateDir === undefined) delete process.env['PLB_STATE_DIR'];
    else process.env['PLB_STATE_DIR'] = savedStateDir;
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('r1 lags while its replay is paused and catches up after the resume', async () => {
    const plan = join(work, 'lag.yaml');
    writeFileSync(
      plan,
      [
        'name: lag-it',
        'duration: 30s',
        'warmup: 4s',
        'reference: 4s',
        'replicas: 2',
        'events:',
        '  - { at: 10s, replica: r1, action: pause-replay }',
        '  - { at: 18s, replica: r1, action: resume-replay }',
        '',
      ].join('\n'),
    );
    const out = join(work, 'runs');
    const lines: string[] = [];
    const code = await executeBench(benchFlagValues(out, NAME, PORT, { plan, seed: 7, 'write-rate': 200 }), {
      log: (l) => lines.push(l),
      warn: (l) => lines.push(l),
    });
    expect(code, lines.join('\n')).toBe(0);
    console.log(lines.filter((l) => /replication lag|write workload/.test(l)).join('\n'));
    const dir = readdirSync(out).find((d) => !d.endsWith('.html'));
    expect(dir).toBeDefined();
    const summary = JSON.parse(readFileSync(join(out, dir as string, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.complete).toBe(true);
    const phase = (name: string) => summary.phases.find((p) => p.name === name);
    const paused = phase('pause-replay-1');
    const resumed = phase('resume-replay-1');
    // Paused 8 s with 200 rows/s going in: the lag reaches seconds, and WAL piles up.
    const r1Paused = paused?.replicas['r1']?.lag;
    expect(r1Paused?.maxMs).toBeGreaterThan(3000);
    expect(r1Paused?.bytesMax).toBeGreaterThan(64 * 1024);
    // Lagging is not down: K+ stays 2.
    expect(paused?.survivors).toBe(2);
    // The replica that replays lags less than the paused one (how little is the host's speed's).
    expect(paused?.replicas['r2']?.lag?.p50Ms).toBeLessThan(r1Paused?.p50Ms ?? 0);
    const r1Resumed = resumed?.replicas['r1']?.lag;
    expect(r1Resumed?.p50Ms).toBeLessThan(r1Paused?.maxMs ?? 0);
  }, 240_000);

  it('with writes on, a throttled standby shows its replay lag in the figures (recorded, not asserted: it depends on the host)', async () => {
    const plan = join(work, 'throttle.yaml');
    writeFileSync(
      plan,
      [
        'name: lag-throttle-it',
        'duration: 24s',
        'warmup: 4s',
        'reference: 4s',
        'replicas: 2',
        'events:',
        '  - { at: 10s, replica: r2, action: throttle, cpus: 0.02 }',
        '',
      ].join('\n'),
    );
    const out = join(work, 'runs-throttle');
    const lines: string[] = [];
    const code = await executeBench(
      benchFlagValues(out, NAME, PORT, {
        plan,
        seed: 8,
        'write-rate': 1000,
        'lag-weights': '200ms:800ms:10%',
      }),
      { log: (l) => lines.push(l), warn: (l) => lines.push(l) },
    );
    expect(code, lines.join('\n')).toBe(0);
    console.log(lines.filter((l) => /replication lag|write workload/.test(l)).join('\n'));
    const dir = readdirSync(out).find((d) => !d.endsWith('.html'));
    const summary = JSON.parse(readFileSync(join(out, dir as string, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.phases.find((p) => p.name === 'throttle-1')?.replicas['r2']?.lag?.samples).toBeGreaterThan(
      0,
    );
  }, 240_000);
});
