// Shared by the proxy integration tests: a local cluster in a temporary state folder, a proxy
// with test-sized defaults in front of it, node-postgres settings, and a self-signed certificate.
import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, it } from 'vitest';
import type { Connector } from '../../src/cluster/connector.js';
import type { Credentials, Endpoint } from '../../src/core/endpoint.js';
import { createLocalDriver, type LocalDriver } from '../../src/cluster/local/index.js';
import { bringUp, clusterSpec } from '../../src/cluster/select.js';
import { startProxy, type ProxyHandle, type ProxyOptions } from '../../src/proxy/proxy-server.js';

export interface ProxyTestCluster {
  stateDir: string;
  driver: LocalDriver;
  creds: Credentials;
  replicas: Endpoint[];
  /** What a proxy in front of it needs (startTestProxy). */
  proxyBase: { replicas: Endpoint[]; connector: Connector };
  /** node-postgres settings for a proxy (or replica) port. */
  pgConfig(port: number, extra?: Partial<pg.ClientConfig>): pg.ClientConfig;
  /** Stops the cluster and removes its state folder. */
  down(): Promise<void>;
}

/**
 * A local cluster (1 primary + `replicas` standbys) in a fresh temporary state folder, leftovers
 * of an earlier crashed run of the same name stopped first. `record`: as `plb cluster up` does,
 * so a command can find it by name.
 */
export async function upProxyCluster(opts: {
  name: string;
  replicas: number;
  basePort: number;
  maxConnections?: number;
  record?: boolean;
}): Promise<ProxyTestCluster> {
  const stateDir = mkdtempSync(join(tmpdir(), `${opts.name}-`));
  const spec = clusterSpec({
    name: opts.name,
    replicas: opts.replicas,
    basePort: opts.basePort,
    maxConnections: opts.maxConnections ?? 100,
    stateDir,
  });
  await createLocalDriver(spec).down();
  let driver: LocalDriver;
  if (opts.record) driver = (await bringUp({ driver: 'local', spec })).driver as LocalDriver;
  else {
    driver = createLocalDriver(spec);
    await driver.up(() => undefined);
  }
  const creds = await driver.credentials();
  const replicas = driver.endpoints().filter((e) => e.kind === 'replica');
  return {
    stateDir,
    driver,
    creds,
    replicas,
    proxyBase: { replicas, connector: driver.connector(creds) },
    pgConfig: (port, extra = {}) => ({
      host: '127.0.0.1',
      port,
      user: creds.user,
      password: creds.password,
      database: creds.database,
      connectionTimeoutMillis: 10_000,
      ...extra,
    }),
    down: async () => {
      await driver.down();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

/** A proxy over the cluster's replicas: plb, 2:1:2, no borrowing, quick health checks, no stats lines. */
export function startTestProxy(
  over: Partial<ProxyOptions> & Pick<ProxyOptions, 'replicas' | 'connector' | 'ports' | 'log'>,
): Promise<ProxyHandle> {
  return startProxy({
    host: '127.0.0.1',
    classFrom: 'off',
    strategy: 'plb',
    reference: { premium: 2, mixed: 1, freemium: 2 },
    partition: { premium: 1, freemium: 1 },
    slowStartMs: 0,
    borrowing: false,
    health: { intervalMs: 500, timeoutMs: 500, fall: 3, rise: 2, hangMs: 5000 },
    statsEveryS: 0,
    ...over,
  });
}

/**
 * A self-signed certificate and key (openssl) in dir, for CN 127.0.0.1; owned like `ownerOf`
 * when given (a server that runs as another user must be able to read its key).
 */
export function selfSignedCert(dir: string, base: string, ownerOf?: string): { cert: string; key: string } {
  const cert = join(dir, `${base}.crt`);
  const key = join(dir, `${base}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  chmodSync(key, 0o600); // PostgreSQL refuses a key others can read
  if (ownerOf !== undefined) {
    const st = statSync(ownerOf);
    for (const f of [cert, key]) chownSync(f, st.uid, st.gid);
  }
  return { cert, key };
}

/**
 * With CI=true a missing dependency fails (a suite of one failing test); elsewhere the suite that
 * needs it skips by itself.
 */
export function failInCiWithout(have: boolean, what: string): void {
  describe.runIf(process.env.CI === 'true' && !have)(`${what} (CI)`, () => {
    it('has what it needs', () => {
      throw new Error(`CI=true and ${what} cannot run here: it must run in CI`);
    });
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Until cond holds or `ms` passed (a deadline for a busy host; nothing timed is asserted). */
export async function until(cond: () => boolean, ms = 30_000): Promise<void> {
  for (const t0 = Date.now(); !cond() && Date.now() - t0 < ms; ) await sleep(50);
}

/**
 * Until a backend on one of the replicas at `ports` runs a statement that starts with `sql`
 * (seen in pg_stat_activity), or `done` says it is over already; a replica down is skipped.
 */
export async function untilRunning(
  cluster: Pick<ProxyTestCluster, 'pgConfig'>,
  sql: string,
  ports: number[],
  done = (): boolean => false,
): Promise<void> {
  const direct = await Promise.all(
    ports.map(async (p) => {
      const c = new pg.Client(cluster.pgConfig(p, { connectionTimeoutMillis: 2000 }));
      c.on('error', () => undefined);
      return c.connect().then(
        () => c,
        () => undefined,
      );
    }),
  );
  const seen = async (): Promise<boolean> => {
    for (const c of direct) {
      const r = await c
        ?.query<{
          n: number;
        }>("select count(*)::int as n from pg_stat_activity where state = 'active' and query like $1", [
          `${sql}%`,
        ])
        .catch(() => undefined);
      if ((r?.rows[0]?.n ?? 0) > 0) return true;
    }
    return false;
  };
  try {
    for (const t0 = Date.now(); !done() && !(await seen()); await sleep(50))
      if (Date.now() - t0 > 30_000) throw new Error(`never saw "${sql}" running`);
  } finally {
    for (const c of direct) await c?.end().catch(() => undefined);
  }
}

/**
 * psql -XAtc `sql` against a port, asynchronously: a proxy in the test's own process would be
 * blocked by a synchronous child. Never rejects: the exit code and both outputs, trimmed.
 */
export function runPsql(
  bin: string,
  creds: Credentials,
  port: number,
  sql: string,
  conninfo = '',
  password = creds.password,
): Promise<{ code: number; out: string; err: string }> {
  const target = `host=127.0.0.1 port=${port} user=${creds.user} dbname=${creds.database} ${conninfo}`;
  const env = { ...process.env, PGPASSWORD: password, PGCONNECT_TIMEOUT: '10' };
  return new Promise((resolve) => {
    execFile(
      join(bin, 'psql'),
      [target, '-XAtc', sql],
      { env, encoding: 'utf8', timeout: 20_000 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
          out: stdout.trim(),
          err: stderr.trim(),
        }),
    );
  });
}

/**
 * ssl = on with the server.crt/server.key already in the replica's data folder, taken at a reload
 * (PostgreSQL 10 and later); resolves once the replica says so (throws after ~5 s).
 */
export async function sslOnAtReload(cluster: ProxyTestCluster, data: string, port: number): Promise<void> {
  appendFileSync(
    join(data, 'plb.conf'),
    "\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n",
  );
  const c = new pg.Client(cluster.pgConfig(port));
  await c.connect();
  try {
    await c.query('select pg_reload_conf()');
    for (let i = 0; (await c.query<{ ssl: string }>('show ssl')).rows[0]!.ssl !== 'on'; i++) {
      if (i >= 50) throw new Error(`ssl is not on at port ${port} after a reload`);
      await sleep(100);
    }
  } finally {
    await c.end();
  }
}
