/**
 * `--strategy via` through real PgBouncers (session pooling) on a local cluster, next to plb on the
 * same plan: one replica killed and started again. PgBouncer 1.18 balances over a host list only
 * when every host shares one port (here each server has its own), so this is PgBouncer per replica,
 * one per class: premium's in front of r1, freemium's in front of r2 (`--via premium=..,freemium=..`),
 * and r2 is the one killed. What holds wherever the kill lands: both runs complete and are reported
 * side by side; each class's sessions land on its PgBouncer's replica only; none on r2 while it is
 * down beyond one answered just before the kill's phase began; premium, on r1, keeps its goodput.
 * Skips without pgbouncer or the PostgreSQL server binaries, except with CI=true, where that is a
 * failure (.ci/run installs both).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalDriver } from '../../src/cluster/local/index.js';
import { bringUp, clusterSpec, downCluster, openCluster } from '../../src/cluster/select.js';
import { haveServerBinaries, listening, pgbouncerBin } from '../helpers/fixtures.js';
import { runPlbThenVia } from '../helpers/via-run.js';

const ci = process.env.CI === 'true';
const NAME = 'plbtest-via-pgbouncer';
const BASE_PORT = 28330; // primary; r1..r5 on 28331..28335 (below the ephemeral range)
const LISTEN = { premium: 28350, freemium: 28351 };
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const havePgbouncer = pgbouncerBin !== null;

describe.runIf(ci && !(haveServerBinaries && havePgbouncer))('via pgbouncer (CI)', () => {
  it('has pgbouncer and the PostgreSQL server binaries', () => {
    throw new Error(
      'CI=true and pgbouncer or the PostgreSQL server binaries are missing: this test must run in CI',
    );
  });
});

describe.skipIf(!(haveServerBinaries && havePgbouncer))('via pgbouncer on a local cluster', () => {
  let work: string;
  let stateDir: string;
  const bouncers: ChildProcess[] = [];
  let log = '';
  const stateBefore = process.env.PLB_STATE_DIR;

  /** A PgBouncer in session pooling mode in front of one server, in the foreground, by pid. */
  async function startBouncer(label: string, listen: number, serverPort: number): Promise<void> {
    const creds = await (await openCluster(NAME, stateDir)).credentials();
    const ini = join(work, `${label}.ini`);
    const users = join(work, `${label}-users.txt`);
    // SCRAM with the client; the password in the userlist lets it log in to the server.
    writeFileSync(users, `"${creds.user}" "${creds.password}"\n`, { mode: 0o600 });
    writeFileSync(
      ini,
      [
        '[databases]',
        `${creds.database} = host=127.0.0.1 port=${serverPort} dbname=${creds.database}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${listen}`,
        'unix_socket_dir =',
        'auth_type = scram-sha-256',
        `auth_file = ${users}`,
        'pool_mode = session',
        'default_pool_size = 20',
        'max_client_conn = 200',
        // A server that refused a login is tried again after 1 s (default 15 s).
        'server_login_retry = 1',
        '',
      ].join('\n'),
    );
    // PgBouncer refuses to run as root: as the server's user, which owns these files.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
      for (const f of [ini, users]) chownSync(f, uid, 0);
    }
    const child = spawn(pgbouncerBin as string, asRoot ? ['-u', 'postgres', ini] : [ini], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    bouncers.push(child);
    child.stderr?.on('data', (b: Buffer) => (log = (log + `${label}: ${b.toString()}`).slice(-20_000)));
    for (let i = 0; i < 100 && !(await listening(listen)); i++) await sleep(100);
    expect(await listening(listen), log).toBe(true);
  }

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'plb-via-pgbouncer-'));
    chmodSync(work, 0o755); // PgBouncer, as postgres, reads its files here
    // Its own folder: the postgres OS user must reach the data directories.
    stateDir = mkdtempSync(join(tmpdir(), 'plb-via-pgbouncer-state-'));
    process.env.PLB_STATE_DIR = stateDir;
    const spec = clusterSpec({ name: NAME, replicas: 5, basePort: BASE_PORT, maxConnections: 100, stateDir });
    await createLocalDriver(spec).down(); // leftovers of an earlier crashed run
    await bringUp({ driver: 'local', spec });
  });

  afterAll(async () => {
    await Promise.all(
      bouncers
        .filter((c) => c.pid !== undefined && c.exitCode === null)
        .map((c) => {
          const exited = new Promise((r) => c.once('exit', r));
          process.kill(c.pid as number, 'SIGINT'); // safe shutdown, at once when idle
          return exited;
        }),
    );
    await downCluster(NAME, stateDir, { explicit: true }).catch(() => undefined);
    if (stateBefore === undefined) delete process.env.PLB_STATE_DIR;
    else process.env.PLB_STATE_DIR = stateBefore;
    for (const d of [work, stateDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  it('plb and via:pgbouncer side by side: each class on its replica, none on the dead one', async () => {
    await startBouncer('premium', LISTEN.premium, BASE_PORT + 1);
    await startBouncer('freemium', LISTEN.freemium, BASE_PORT + 2);
    const { via, phase } = await runPlbThenVia({
      work,
      name: NAME,
      basePort: BASE_PORT,
      label: 'pgbouncer',
      via: `premium=127.0.0.1:${LISTEN.premium},freemium=127.0.0.1:${LISTEN.freemium}`,
      mixes: '50:50',
      context: () => log.slice(-3000),
    });
    // Each PgBouncer has one server: no session anywhere else, in any phase.
    for (const p of via.phases)
      for (const id of ['r3', 'r4', 'r5']) expect(p.replicas[id]!.sessionsOpened, `${p.name} ${id}`).toBe(0);
    const ref = phase('ref');
    expect(ref.replicas['r1']!.sessionsOpened).toBeGreaterThan(0);
    expect(ref.replicas['r2']!.sessionsOpened).toBeGreaterThan(0);
    // A session is attributed only once the replica answered who it is: a dead one cannot.
    const down = phase('down-1');
    expect(down.replicas['r2']!.sessionsOpened, JSON.stringify(down.replicas)).toBeLessThanOrEqual(1);
    expect(down.classes.premium.goodput).toBeGreaterThan(0);
  }, 300_000);
});
