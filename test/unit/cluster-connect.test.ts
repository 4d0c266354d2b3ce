import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import ClusterStatus from '../../src/commands/cluster/status.js';
import { connectInfo, dsn, psqlLine, shellWord } from '../../src/cluster/connect-info.js';
import { createLocalDriver } from '../../src/cluster/local/index.js';
import { clusterSpec, downCluster, removeOwned } from '../../src/cluster/select.js';
import { ensurePassword, passwordFile, writeClusterRecord } from '../../src/cluster/state.js';
import { haveServerBinaries, runCommand } from '../helpers/fixtures.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'plb-connect-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A recorded local cluster with a data folder of its id and a password; nothing running. */
function recorded(name: string, id = 'aaaaaaaaaaaa') {
  const spec = clusterSpec({ name, stateDir: dir, replicas: 2, basePort: 26610 });
  mkdirSync(join(dir, name, 'data', 'primary'), { recursive: true });
  writeFileSync(join(dir, name, 'data', '.plb-id'), `${id}\n`);
  writeClusterRecord(dir, {
    version: 1,
    name,
    id,
    driver: 'local',
    spec,
    createdAt: new Date().toISOString(),
  });
  ensurePassword(dir, name);
  return { ...spec, id };
}

describe('connection details', () => {
  it('a psql line that reads the password from its file, and a URI without it', () => {
    expect(psqlLine('/var/lib/plb/plb/password', '127.0.0.1', 25433)).toBe(
      'PGPASSWORD="$(cat /var/lib/plb/plb/password)" psql "host=127.0.0.1 port=25433 user=plb dbname=plb"',
    );
    expect(dsn('127.0.0.1', 25433)).toBe('postgresql://plb@127.0.0.1:25433/plb');
    expect(dsn('::1', 6432)).toBe('postgresql://plb@[::1]:6432/plb');
  });

  it('quotes a path the shell would split or expand', () => {
    expect(shellWord('/home/a b/plb/password')).toBe("'/home/a b/plb/password'");
    expect(shellWord("/tmp/it's")).toBe(`'/tmp/it'\\''s'`);
    expect(shellWord('/tmp/$HOME')).toBe("'/tmp/$HOME'");
  });

  it('names user, database and password file, and one line per server', () => {
    const spec = clusterSpec({ name: 'c1', stateDir: dir, replicas: 2, basePort: 26610 });
    const info = connectInfo(dir, 'c1', createLocalDriver(spec).endpoints());
    expect(info).toMatchObject({ user: 'plb', database: 'plb', passwordFile: passwordFile(dir, 'c1') });
    expect(info.servers.map((s) => [s.id, s.port, s.dsn])).toEqual([
      ['primary', 26610, 'postgresql://plb@127.0.0.1:26610/plb'],
      ['r1', 26611, 'postgresql://plb@127.0.0.1:26611/plb'],
      ['r2', 26612, 'postgresql://plb@127.0.0.1:26612/plb'],
    ]);
  });
});

describe.skipIf(!haveServerBinaries)('plb cluster status shows how to connect', () => {
  const status = async (args: string[]) => {
    const prev = process.env.PLB_STATE_DIR;
    process.env.PLB_STATE_DIR = dir;
    try {
      return await runCommand(ClusterStatus, args);
    } finally {
      if (prev === undefined) delete process.env.PLB_STATE_DIR;
      else process.env.PLB_STATE_DIR = prev;
    }
  };

  it('--json: user, database, password file, and a DSN and psql line per server', async () => {
    recorded('c1');
    const r = await status(['--name', 'c1', '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, unknown> & { servers: Record<string, unknown>[] };
    const file = passwordFile(dir, 'c1');
    expect(out).toMatchObject({
      name: 'c1',
      driver: 'local',
      user: 'plb',
      database: 'plb',
      passwordFile: file,
    });
    expect(out.servers.map((s) => [s.id, s.port, s.up, s.dsn, s.psql])).toEqual(
      [26610, 26611, 26612].map((port, i) => [
        i === 0 ? 'primary' : `r${i}`,
        port,
        false,
        `postgresql://plb@127.0.0.1:${port}/plb`,
        `PGPASSWORD="$(cat ${file})" psql "host=127.0.0.1 port=${port} user=plb dbname=plb"`,
      ]),
    );
    expect(r.stdout).not.toContain(ensurePassword(dir, 'c1'));
  });

  it('the table is followed by the password file and a line to paste per server and for plb proxy', async () => {
    recorded('c1');
    // this.log goes through console.log, which vitest captures before process.stdout.
    const lines: string[] = [];
    const log = vi
      .spyOn(console, 'log')
      .mockImplementation((...a: unknown[]) => void lines.push(a.join(' ')));
    const r = await status(['--name', 'c1']).finally(() => log.mockRestore());
    r.stdout += lines.join('\n');
    expect(r.code).toBe(0);
    const file = passwordFile(dir, 'c1');
    expect(r.stdout).toContain(`user plb, database plb, password in ${file} (cluster down removes it)`);
    expect(r.stdout).toContain(
      `  r2       PGPASSWORD="$(cat ${file})" psql "host=127.0.0.1 port=26612 user=plb dbname=plb"`,
    );
    expect(r.stdout).toContain(
      `through plb proxy: PGPASSWORD="$(cat ${file})" psql "host=127.0.0.1 port=6432 user=plb dbname=plb" (premium; port 6433 freemium)`,
    );
    expect(r.stdout).not.toContain(ensurePassword(dir, 'c1'));
  });
});

describe('cluster down removes the password file with the cluster', () => {
  it('the owner removes data, record and password', async () => {
    const spec = recorded('c1');
    await removeOwned(createLocalDriver(spec));
    expect(existsSync(join(dir, 'c1', 'data'))).toBe(false);
    expect(existsSync(join(dir, 'c1', 'cluster.json'))).toBe(false);
    expect(existsSync(passwordFile(dir, 'c1'))).toBe(false);
  });

  it('a driver of another id leaves the password (and the rest) alone', async () => {
    const spec = recorded('c1');
    await removeOwned(createLocalDriver({ ...spec, id: 'bbbbbbbbbbbb' }));
    expect(existsSync(passwordFile(dir, 'c1'))).toBe(true);
    expect(existsSync(join(dir, 'c1', 'cluster.json'))).toBe(true);
  });

  it('plb cluster down: the recorded cluster and its password are gone', async () => {
    recorded('c1');
    const lines = await downCluster('c1', dir);
    expect(lines[0]).toMatch(/^removed cluster c1 \(local driver, id aaaaaaaaaaaa\)/);
    expect(existsSync(passwordFile(dir, 'c1'))).toBe(false);
  });

  it('a password file left by an older plb (no record) is removed and said so', async () => {
    ensurePassword(dir, 'c2');
    expect(await downCluster('c2', dir)).toEqual([`removed the password file of cluster c2 in ${dir}`]);
    expect(existsSync(passwordFile(dir, 'c2'))).toBe(false);
    expect(await downCluster('c2', dir)).toEqual([`no cluster c2 in ${dir}; nothing to remove`]);
  });

  it('an unreadable record keeps its password (the cluster may still need it)', async () => {
    ensurePassword(dir, 'c3');
    writeFileSync(join(dir, 'c3', 'cluster.json'), '{ not json');
    await downCluster('c3', dir);
    expect(existsSync(passwordFile(dir, 'c3'))).toBe(true);
  });

  it('a symlink in place of the password file is removed, not its target', async () => {
    mkdirSync(join(dir, 'c4'), { recursive: true });
    writeFileSync(join(dir, 'target'), 'keep\n');
    symlinkSync(join(dir, 'target'), passwordFile(dir, 'c4'));
    await downCluster('c4', dir);
    expect(existsSync(join(dir, 'target'))).toBe(true);
    expect(existsSync(passwordFile(dir, 'c4'))).toBe(false);
  });
});
