/**
 * `--strategy via` through a real HAProxy (leastconn + slowstart, from `plb haproxy-config`) on a
 * local cluster, next to plb on the same plan: one replica killed and started again. Sessions are
 * attributed to the replicas they landed on, none to the dead one while it is down, and the two
 * strategies are reported side by side. Skips without haproxy or the PostgreSQL server binaries,
 * except with CI=true, where that is a failure (.ci/run installs both).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { createLocalDriver } from '../../src/cluster/local/index.js';
import { bringUp, clusterSpec, downCluster } from '../../src/cluster/select.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import HaproxyConfigCommand from '../../src/commands/haproxy-config.js';
import {
  benchFlagValues,
  haproxyBin,
  haveServerBinaries,
  listening,
  runCommand,
} from '../helpers/fixtures.js';

const ci = process.env.CI === 'true';
const NAME = 'plbtest-via';
const BASE_PORT = 26932; // below the ephemeral range, so no client source port can hold it
const LISTEN_PORT = 26790; // below the ephemeral range (32768-60999)
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const haveHaproxy = haproxyBin !== null;

describe.runIf(ci && !(haveServerBinaries && haveHaproxy))('via haproxy (CI)', () => {
  it('has haproxy and the PostgreSQL server binaries', () => {
    throw new Error(
      'CI=true and haproxy or the PostgreSQL server binaries are missing: this test must run in CI',
    );
  });
});

describe.skipIf(!(haveServerBinaries && haveHaproxy))('via haproxy on a local cluster', () => {
  let work: string;
  let stateDir: string;
  let haproxy: ChildProcess | undefined;
  let haproxyErr = '';
  const stateBefore = process.env.PLB_STATE_DIR;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'plb-via-it-'));
    // Its own folder: the postgres OS user must reach the data directories (not inside work's 0700).
    stateDir = mkdtempSync(join(tmpdir(), 'plb-via-state-'));
    process.env.PLB_STATE_DIR = stateDir;
    const spec = clusterSpec({ name: NAME, replicas: 5, basePort: BASE_PORT, maxConnections: 100, stateDir });
    await createLocalDriver(spec).down(); // leftovers of an earlier crashed run
    await bringUp({ driver: 'local', spec });
  });

  afterAll(async () => {
    if (haproxy?.pid !== undefined && haproxy.exitCode === null) {
      const exited = new Promise((r) => haproxy?.once('exit', r));
      process.kill(haproxy.pid, 'SIGTERM');
      await exited;
    }
    await downCluster(NAME, stateDir, { explicit: true }).catch(() => undefined);
    if (stateBefore === undefined) delete process.env.PLB_STATE_DIR;
    else process.env.PLB_STATE_DIR = stateBefore;
    for (const d of [work, stateDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('plb and via:haproxy side by side: sessions land on several replicas, none on the dead one', async () => {
    // The configuration from the cluster record, as a user would make it.
    const cfg = await runCommand(HaproxyConfigCommand, [
      '--name',
      NAME,
      '--listen',
      `127.0.0.1:${LISTEN_PORT}`,
      '--balance',
      'leastconn',
      '--slow-start',
      '5s',
      '--health-interval',
      '500ms',
    ]);
    expect(cfg.code, cfg.stderr).toBe(0);
    expect(cfg.stdout).toContain(`server r5 127.0.0.1:${BASE_PORT + 5}`);
    const cfgFile = join(work, 'haproxy.cfg');
    writeFileSync(cfgFile, cfg.stdout);
    // In the foreground (-db), a child of this process: stopped by its pid.
    haproxy = spawn(haproxyBin as string, ['-db', '-f', cfgFile], { stdio: ['ignore', 'ignore', 'pipe'] });
    haproxy.stderr?.on('data', (b: Buffer) => (haproxyErr += b.toString()));
    for (let i = 0; i < 50 && !(await listening(LISTEN_PORT)); i++) await sleep(100);
    expect(await listening(LISTEN_PORT), haproxyErr).toBe(true);

    const plan = join(work, 'plan.yaml');
    writeFileSync(
      plan,
      [
        'name: via-it',
        'duration: 24s',
        'warmup: 4s',
        'reference: 6s',
        'replicas: 5',
        'events:',
        '  - { at: 10s, replica: r2, action: down }',
        '  - { at: 17s, replica: r2, action: rejoin }',
        '',
      ].join('\n'),
    );
    const out: string[] = [];
    const warn: string[] = [];
    const code = await executeBench(
      benchFlagValues(join(work, 'runs'), NAME, BASE_PORT, {
        plan,
        strategies: 'plb,via',
        via: `127.0.0.1:${LISTEN_PORT}`,
        'via-label': 'haproxy',
        seed: 7,
        clients: 6,
        'health-interval': '500ms',
        'hang-timeout': '2s',
      }),
      { log: (l) => out.push(l), warn: (l) => warn.push(l) },
    );
    expect(code, warn.join('\n')).toBe(0);
    const dirs = warn.flatMap((l) => /^run directory: (\S+)$/.exec(l)?.[1] ?? []);
    expect(dirs).toHaveLength(2);
    const summaries = dirs.map(
      (d) => JSON.parse(readFileSync(join(d, 'summary.json'), 'utf8')) as RunSummary,
    );
    expect(summaries.map((s) => s.strategy)).toEqual(['plb', 'via:haproxy']);
    expect(summaries.every((s) => s.complete)).toBe(true);
    const config = JSON.parse(readFileSync(join(dirs[1]!, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(config['strategy']).toBe('via:haproxy');
    expect(config['via']).toEqual({
      label: 'haproxy',
      endpoints: { premium: `127.0.0.1:${LISTEN_PORT}`, freemium: `127.0.0.1:${LISTEN_PORT}` },
    });

    const via = summaries[1]!;
    for (const s of summaries)
      console.log(
        `${s.strategy} sessions opened per phase and replica: ${s.phases
          .map(
            (p) =>
              `${p.name} ${Object.values(p.replicas)
                .map((r) => r.sessionsOpened)
                .join('/')}`,
          )
          .join(', ')}`,
      );
    const phase = (name: string) => via.phases.find((p) => p.name === name)!;
    const ref = phase('ref');
    const landed = Object.entries(ref.replicas).filter(([, r]) => r.sessionsOpened > 0);
    expect(landed.length, JSON.stringify(ref.replicas)).toBeGreaterThanOrEqual(3);
    const opened = Object.values(ref.replicas).reduce((n, r) => n + r.sessionsOpened, 0);
    expect(opened).toBeGreaterThan(10);
    // A session is attributed only once the replica answered who it is: a dead one cannot. At
    // most one may have connected between the kill's issue (the phase boundary) and its end.
    const down = phase('down-1');
    expect(down.replicas['r2']!.sessionsOpened, JSON.stringify(down.replicas)).toBeLessThanOrEqual(1);
    expect(down.classes.premium.goodput + down.classes.freemium.goodput).toBeGreaterThan(0);
    // The health checker still runs on a via run: the kill was detected.
    expect(via.detection.find((d) => d.replica === 'r2' && d.action === 'down')?.detectedMs).toBeGreaterThan(
      0,
    );

    // Side by side: both strategies in the one table.
    const text = out.join('\n');
    expect(text).toContain('via:haproxy');
    expect(text).toMatch(/plb/);
  }, 240_000);
});
