/**
 * `--strategy via` through a real Pgpool-II (streaming replication mode, the replicas load-balanced,
 * health checks; from `plb pgpool-config`) on a local cluster, next to plb on the same plan: one
 * replica killed and started again. What holds wherever the kill lands: both runs complete and are
 * reported side by side; via sessions land on replicas only (never the primary, pgpool's backend 0
 * at weight 0), on more than one, and on the dead one at most once (a session it answered just
 * before the kill's phase began); pgpool detaches it and, once it streams again, attaches it
 * (auto_failback). Skips without pgpool or the PostgreSQL server binaries, except with CI=true,
 * where that is a failure (.ci/run installs both).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalDriver } from '../../src/cluster/local/index.js';
import { bringUp, clusterSpec, downCluster, openCluster } from '../../src/cluster/select.js';
import PgpoolConfigCommand from '../../src/commands/pgpool-config.js';
import { haveServerBinaries, listening, pgpoolBin, runCommand } from '../helpers/fixtures.js';
import { runPlbThenVia } from '../helpers/via-run.js';

const ci = process.env.CI === 'true';
const NAME = 'plbtest-via-pgpool';
const BASE_PORT = 28300; // primary; r1..r5 on 28301..28305 (below the ephemeral range)
const LISTEN_PORT = 28320;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const havePgpool = pgpoolBin !== null;

describe.runIf(ci && !(haveServerBinaries && havePgpool))('via pgpool (CI)', () => {
  it('has pgpool and the PostgreSQL server binaries', () => {
    throw new Error(
      'CI=true and pgpool or the PostgreSQL server binaries are missing: this test must run in CI',
    );
  });
});

describe.skipIf(!(haveServerBinaries && havePgpool))('via pgpool on a local cluster', () => {
  let work: string;
  let stateDir: string;
  let pgpool: ChildProcess | undefined;
  let pgpoolLog = '';
  let failedBack = false;
  const stateBefore = process.env.PLB_STATE_DIR;

  /** pgpool's view of its nodes (SHOW POOL_NODES through pgpool itself): port -> status. */
  async function poolNodes(): Promise<Map<number, string>> {
    const creds = await (await openCluster(NAME, stateDir)).credentials();
    const c = new pg.Client({ host: '127.0.0.1', port: LISTEN_PORT, ...creds });
    await c.connect();
    try {
      const r = await c.query<{ port: string; status: string }>('SHOW POOL_NODES');
      return new Map(r.rows.map((n) => [Number(n.port), n.status]));
    } finally {
      await c.end();
    }
  }

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'plb-via-pgpool-'));
    // Its own folder: the postgres OS user must reach the data directories (not inside work's 0700).
    stateDir = mkdtempSync(join(tmpdir(), 'plb-via-pgpool-state-'));
    process.env.PLB_STATE_DIR = stateDir;
    const spec = clusterSpec({ name: NAME, replicas: 5, basePort: BASE_PORT, maxConnections: 100, stateDir });
    await createLocalDriver(spec).down(); // leftovers of an earlier crashed run
    await bringUp({ driver: 'local', spec });
  });

  afterAll(async () => {
    if (pgpool?.pid !== undefined && pgpool.exitCode === null) {
      const exited = new Promise((r) => pgpool?.once('exit', r));
      // SIGINT: fast shutdown (SIGTERM would wait for every client to leave).
      process.kill(pgpool.pid, 'SIGINT');
      await exited;
    }
    await downCluster(NAME, stateDir, { explicit: true }).catch(() => undefined);
    if (stateBefore === undefined) delete process.env.PLB_STATE_DIR;
    else process.env.PLB_STATE_DIR = stateBefore;
    for (const d of [work, stateDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('plb and via:pgpool side by side: sessions on replicas only, none on the dead one', async () => {
    // The configuration from the cluster record, as a user would make it.
    const dir = join(work, 'pgpool');
    const cfg = await runCommand(PgpoolConfigCommand, [
      '--name',
      NAME,
      '--dir',
      dir,
      '--listen',
      `127.0.0.1:${LISTEN_PORT}`,
      '--children',
      '16',
      '--health-interval',
      '1s',
    ]);
    expect(cfg.code, cfg.stderr).toBe(0);
    const conf = readFileSync(join(dir, 'pgpool.conf'), 'utf8');
    expect(conf).toContain(`backend_port0 = ${BASE_PORT}\nbackend_weight0 = 0\n`);
    expect(conf).toContain(`backend_port5 = ${BASE_PORT + 5}\nbackend_weight5 = 1\n`);
    // In the foreground (-n), a child of this process: stopped by its pid. -D: no old node states.
    pgpool = spawn(
      pgpoolBin as string,
      [
        '-n',
        '-D',
        '-f',
        join(dir, 'pgpool.conf'),
        '-F',
        join(dir, 'pcp.conf'),
        '-a',
        join(dir, 'pool_hba.conf'),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    pgpool.stderr?.on('data', (b: Buffer) => {
      pgpoolLog = (pgpoolLog + b.toString()).slice(-20_000);
      if (/failback done/.test(b.toString())) failedBack = true;
    });
    for (let i = 0; i < 100 && !(await listening(LISTEN_PORT)); i++) await sleep(200);
    expect(await listening(LISTEN_PORT), pgpoolLog).toBe(true);

    const { phase } = await runPlbThenVia({
      work,
      name: NAME,
      basePort: BASE_PORT,
      label: 'pgpool',
      via: `127.0.0.1:${LISTEN_PORT}`,
      context: () => pgpoolLog.slice(-3000),
    });
    const ref = phase('ref');
    // Balanced over the replicas: a session the primary answered would not be counted (and fail).
    const landed = Object.entries(ref.replicas).filter(([, r]) => r.sessionsOpened > 0);
    expect(landed.length, JSON.stringify(ref.replicas)).toBeGreaterThanOrEqual(2);
    expect(Object.values(ref.replicas).reduce((n, r) => n + r.sessionsOpened, 0)).toBeGreaterThan(5);
    expect(ref.classes.premium.goodput + ref.classes.freemium.goodput).toBeGreaterThan(0);
    // A session is attributed only once the replica answered who it is: a dead one cannot.
    const down = phase('down-1');
    expect(down.replicas['r2']!.sessionsOpened, JSON.stringify(down.replicas)).toBeLessThanOrEqual(1);
    expect(down.classes.premium.goodput + down.classes.freemium.goodput).toBeGreaterThan(0);

    // pgpool detached r2 and, once it streamed from the primary again, attached it (auto_failback):
    // waited for, not timed.
    let nodes = await poolNodes();
    for (let i = 0; i < 120 && nodes.get(BASE_PORT + 2) !== 'up'; i++) {
      await sleep(500);
      nodes = await poolNodes();
    }
    expect(nodes.get(BASE_PORT + 2), pgpoolLog.slice(-3000)).toBe('up');
    expect(failedBack, pgpoolLog.slice(-3000)).toBe(true);
  }, 300_000);
});
