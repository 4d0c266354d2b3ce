// The baselines' processes as benchmarks run them: PgBouncer (session pooling) and Pgpool-II (the
// `plb pgpool-config` setup), each in the foreground, a child of the benchmark, stopped by its pid.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { pgpoolConfig } from '../../src/baselines/pgpool.js';
import type { Credentials, HostPort } from '../../src/core/endpoint.js';
import { DEFAULT_HEALTH } from '../../src/cluster/health.js';

/** The first of `names` that runs with `versionFlag`, or undefined. */
export function which(names: string[], versionFlag: string): string | undefined {
  for (const n of names) {
    try {
      execFileSync(n, [versionFlag], { stdio: 'ignore' });
      return n;
    } catch {
      // not this one
    }
  }
  return undefined;
}

export async function listening(port: number, timeoutMs = 10_000): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port });
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() - t0 > timeoutMs) throw new Error(`nothing listens on ${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const logs = new WeakMap<ChildProcess, () => string>();

/** The end of what a pooler started here wrote to stderr (for an error that names it). */
export function lastWords(child: ChildProcess | undefined): string {
  return (child && logs.get(child)?.()) ?? '';
}

/** Waits for the listener; on failure the error carries the process's last words. */
async function started(child: ChildProcess, name: string, port: number, timeoutMs?: number): Promise<void> {
  let log = '';
  child.stderr?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  logs.set(child, () => log);
  await listening(port, timeoutMs).catch((err: unknown) => {
    throw new Error(`${name}: ${String(err)}\n${log}`);
  });
}

export interface PoolerTarget {
  work: string;
  creds: Credentials;
  listen: number;
  /** Sessions the benchmark runs at once (pool and child counts are sized from it). */
  clients: number;
}

/** PgBouncer, session pooling, SCRAM with the client (the userlist's password logs in to the server). */
export async function startPgbouncer(bin: string, t: PoolerTarget, server: HostPort): Promise<ChildProcess> {
  const { creds } = t;
  const ini = join(t.work, 'pgbouncer.ini');
  const users = join(t.work, 'userlist.txt');
  writeFileSync(users, `"${creds.user}" "${creds.password}"\n`, { mode: 0o600 });
  writeFileSync(
    ini,
    [
      '[databases]',
      `${creds.database} = host=${server.host} port=${server.port} dbname=${creds.database}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${t.listen}`,
      'unix_socket_dir =',
      'auth_type = scram-sha-256',
      `auth_file = ${users}`,
      'pool_mode = session',
      `default_pool_size = ${t.clients * 2}`,
      'max_client_conn = 1000',
      '',
    ].join('\n'),
  );
  // PgBouncer refuses to run as root: as the server's user, which can read these files.
  const asRoot = process.getuid?.() === 0;
  if (asRoot)
    for (const f of [ini, users]) chownSync(f, Number(execFileSync('id', ['-u', 'postgres']).toString()), 0);
  const child = spawn(bin, asRoot ? ['-u', 'postgres', ini] : [ini], { stdio: ['ignore', 'ignore', 'pipe'] });
  await started(child, 'pgbouncer', t.listen);
  return child;
}

/**
 * Pgpool-II as `plb pgpool-config --name <cluster>` writes it: the primary as backend 0 at weight 0,
 * the replicas balanced, plb's health checks, a child per session (twice the clients).
 */
export async function startPgpool(
  bin: string,
  t: PoolerTarget,
  servers: { primary: HostPort; replicas: Array<{ id: string } & HostPort> },
): Promise<ChildProcess> {
  const dir = join(t.work, 'pgpool');
  mkdirSync(dir, { recursive: true });
  const files = pgpoolConfig({
    cluster: 'benchmark',
    primary: servers.primary,
    replicas: servers.replicas.map((r) => ({ ...r, application: `plb-${r.id}` })),
    listen: { host: '127.0.0.1', port: t.listen },
    children: t.clients * 2,
    health: DEFAULT_HEALTH,
    ...t.creds,
    runDir: dir,
  });
  for (const [name, text] of Object.entries(files))
    writeFileSync(join(dir, name), text, { mode: name === 'pool_passwd' ? 0o600 : 0o644 });
  const f = (n: string): string => join(dir, n);
  const child = spawn(
    bin,
    ['-n', '-D', '-f', f('pgpool.conf'), '-F', f('pcp.conf'), '-a', f('pool_hba.conf')],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  await started(child, 'pgpool', t.listen, 30_000);
  return child;
}
