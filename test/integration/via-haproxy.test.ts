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
import { createLocalDriver } from '../../src/cluster/local/index.js';
import { bringUp, clusterSpec, downCluster } from '../../src/cluster/select.js';
import HaproxyConfigCommand from '../../src/commands/haproxy-config.js';
import { haproxyBin, haveServerBinaries, listening, runCommand } from '../helpers/fixtures.js';
import { runPlbThenVia } from '../helpers/via-run.js';

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

    const { dirs, via, phase } = await runPlbThenVia({
      work,
      name: NAME,
      basePort: BASE_PORT,
      label: 'haproxy',
      via: `127.0.0.1:${LISTEN_PORT}`,
      context: () => haproxyErr,
    });
    const config = JSON.parse(readFileSync(join(dirs[1]!, 'config.json'), 'utf8')) as Record<string, unknown>;
    expect(config['strategy']).toBe('via:haproxy');
    expect(config['via']).toEqual({
      label: 'haproxy',
      endpoints: { premium: `127.0.0.1:${LISTEN_PORT}`, freemium: `127.0.0.1:${LISTEN_PORT}` },
    });
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
  }, 240_000);
});
