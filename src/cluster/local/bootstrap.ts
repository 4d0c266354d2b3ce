// Making a local cluster: initdb of the primary, its settings, the database, then a base backup
// and a replication slot per standby (in parallel), each started and streaming before up returns.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ClusterSpec } from '../../run-format/cluster-record.js';
import { type ServerId } from '../../core/replica-ids.js';
import { type Credentials, type Endpoint } from '../../core/endpoint.js';
import { createReplicationSlot, waitAccepting, withClient } from '../pg-util.js';
import { HBA, serverConf, slotName } from './server-conf.js';

/** What the bootstrap needs of the driver: its folders, its tools and how it starts a server. */
export interface LocalServers {
  spec: ClusterSpec;
  dataRoot: string;
  binDir: string;
  dir(id: ServerId): string;
  /** Gives a file to the postgres OS user (when plb runs as root). */
  own(path: string): void;
  tool(tool: string, args: string[], env?: Record<string, string>): Promise<unknown>;
  start(id: ServerId): Promise<void>;
  waitReady(id: ServerId, timeoutMs: number): Promise<void>;
}

export async function createServers(
  s: LocalServers,
  creds: Credentials,
  primary: Endpoint,
  replicas: readonly Endpoint[],
  log: (line: string) => void,
): Promise<void> {
  const { spec } = s;
  // initdb: the password goes through a 0600 temp file that is deleted right after.
  const pwfile = join(s.dataRoot, '.pwfile');
  writeFileSync(pwfile, creds.password + '\n', { mode: 0o600 });
  s.own(pwfile);
  try {
    log(`initdb primary (binaries: ${s.binDir})`);
    await s.tool('initdb', [
      '-D',
      s.dir('primary'),
      '-U',
      creds.user,
      '--pwfile',
      pwfile,
      '--auth',
      'scram-sha-256',
      '-E',
      'UTF8',
      '--no-locale',
      '--no-sync',
      // 1 MiB WAL segments: six data dirs stay small, so base backups and down are quick.
      '--wal-segsize',
      '1',
    ]);
  } finally {
    rmSync(pwfile, { force: true });
  }
  // Our settings live in plb.conf, included last, so a standby only needs its own copy rewritten.
  const pdir = s.dir('primary');
  writeFileSync(join(pdir, 'postgresql.conf'), "\ninclude_if_exists = 'plb.conf'\n", { flag: 'a' });
  writeFileSync(join(pdir, 'plb.conf'), serverConf(spec, primary.port));
  writeFileSync(join(pdir, 'pg_hba.conf'), HBA);
  s.own(join(pdir, 'plb.conf'));

  log(`starting primary on 127.0.0.1:${primary.port}`);
  await s.start('primary');
  await waitAccepting(primary, { ...creds, database: 'postgres' }, 60_000);
  await withClient(
    primary,
    creds,
    async (c) => {
      const r = await c.query('select 1 from pg_database where datname = $1', [creds.database]);
      if (r.rowCount === 0) await c.query(`create database ${creds.database}`);
    },
    { database: 'postgres' },
  );

  // Standbys are made in parallel; allSettled so nothing is still running when a failure cleans up.
  const makeStandby = async (r: Endpoint): Promise<void> => {
    log(`base backup for ${r.id} (slot ${slotName(r.id)})`);
    await createReplicationSlot(primary, creds, slotName(r.id));
    await s.tool(
      'pg_basebackup',
      [
        '-h',
        primary.host,
        '-p',
        String(primary.port),
        '-U',
        creds.user,
        '-D',
        s.dir(r.id),
        '-R',
        '-S',
        slotName(r.id),
        '-X',
        'stream',
        '-c',
        'fast',
        '--no-sync',
        '-w',
      ],
      // PGPASSWORD, not argv: never visible in ps. -R writes it into the standby's primary_conninfo.
      { PGPASSWORD: creds.password },
    );
    writeFileSync(join(s.dir(r.id), 'plb.conf'), serverConf(spec, r.port, r.id));
    s.own(join(s.dir(r.id), 'plb.conf'));
    log(`starting ${r.id} on 127.0.0.1:${r.port}`);
    await s.start(r.id);
    await s.waitReady(r.id, 120_000);
  };
  const results = await Promise.allSettled(replicas.map(makeStandby));
  const failed = results.find((x): x is PromiseRejectedResult => x.status === 'rejected');
  if (failed) throw failed.reason;
  log('ready: primary accepting, every standby streaming');
}
