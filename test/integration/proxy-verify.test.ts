/**
 * --server-tls verify-ca and verify-full (--server-ca) against a local cluster whose standbys have
 * ssl=on with certificates signed by a test CA: r1's names 127.0.0.1 (the address the proxy dials),
 * r2's only db.example. verify-full with the CA connects to r1 (TLS, as pg_stat_ssl says) and its
 * health checks keep it up; with another CA, or to r2 (a host name not in the certificate), the
 * client is refused with the reason and the log names the verification failure; verify-ca takes
 * r2; the command with --server-ca reads max_connections over the same verification. Skips without the server binaries, except with CI=true (a failure there).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataDir } from '../../src/cluster/state.js';
import type { ProxyHandle, ProxyOptions } from '../../src/proxy/proxy-server.js';
import { parseLimitFlags } from '../../src/proxy/admission/limit-options.js';
import { readConnectionSettings } from '../../src/cluster/server-limits.js';
import { checkTls } from '../../src/proxy/protocol/server-verify.js';
import { spawnProxy } from '../helpers/proxy-command.js';
import { haveServerBinaries } from '../helpers/fixtures.js';
import {
  failInCiWithout,
  sleep,
  sslOnAtReload,
  startTestProxy,
  upProxyCluster,
  type ProxyTestCluster,
} from '../helpers/proxy-setup.js';
import { signedCert, testCa } from '../helpers/test-ca.js';

const NAME = 'plbtest-proxy-verify';
const BASE_PORT = 15200;
let nextPort = 15260;

failInCiWithout(haveServerBinaries, 'the proxy verify-full test (no PostgreSQL server binaries)');

describe('--server-tls verify-ca/verify-full and --server-ca', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plb-server-ca-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the CA for the verify modes; every misuse is one line naming the flag', () => {
    const ca = testCa(dir, 'ca');
    const c = parseLimitFlags({ 'server-tls': 'verify-full', 'server-ca': ca.cert }, 'plb');
    expect(c.serverTls).toBe('verify-full');
    expect(c.serverCa?.toString()).toBe(readFileSync(ca.cert, 'utf8'));
    expect(parseLimitFlags({ 'server-tls': 'Verify-CA', 'server-ca': ca.cert }, 'plb').serverTls).toBe(
      'verify-ca',
    );
    expect(() => parseLimitFlags({ 'server-tls': 'verify-full' }, 'plb')).toThrow(
      /^--server-tls verify-full: needs --server-ca/,
    );
    expect(() => parseLimitFlags({ 'server-tls': 'require', 'server-ca': ca.cert }, 'plb')).toThrow(
      /^--server-ca: only with --server-tls verify-ca or verify-full/,
    );
    expect(() =>
      parseLimitFlags({ 'server-tls': 'verify-ca', 'server-ca': join(dir, 'none.pem') }, 'plb'),
    ).toThrow(/^--server-ca: cannot read .*none\.pem \(ENOENT\)/);
    writeFileSync(join(dir, 'empty.pem'), 'not a certificate\n');
    expect(() =>
      parseLimitFlags({ 'server-tls': 'verify-ca', 'server-ca': join(dir, 'empty.pem') }, 'plb'),
    ).toThrow(/^--server-ca: .*empty\.pem holds no PEM certificate/);
    expect(() => parseLimitFlags({ 'server-tls': 'verify' }, 'plb')).toThrow(
      /^--server-tls: must be disable, prefer, require, verify-ca or verify-full/,
    );
  });
});

describe.skipIf(!haveServerBinaries)('plb proxy --server-tls verify-full on a local cluster', () => {
  let cluster: ProxyTestCluster;
  const proxies: ProxyHandle[] = [];
  let ca: Buffer;
  let otherCa: Buffer;

  /** A proxy over one replica; its premium port and its log. */
  async function proxyTo(
    id: 'r1' | 'r2',
    over: Partial<ProxyOptions>,
  ): Promise<{ port: number; logs: string[] }> {
    const port = nextPort++;
    const logs: string[] = [];
    proxies.push(
      await startTestProxy({
        ...cluster.proxyBase,
        replicas: cluster.replicas.filter((r) => r.id === id),
        ports: { premium: port },
        log: (l) => logs.push(l),
        ...over,
      }),
    );
    return { port, logs };
  }

  async function sslOf(port: number): Promise<boolean> {
    const c = new pg.Client(cluster.pgConfig(port));
    c.on('error', () => undefined);
    await c.connect();
    try {
      const r = await c.query<{ ssl: boolean }>('select ssl from pg_stat_ssl where pid = pg_backend_pid()');
      return r.rows[0]!.ssl;
    } finally {
      await c.end();
    }
  }

  /** Waits (up to 20 s, not a timing assertion) for a log line matching re. */
  async function logged(logs: string[], re: RegExp): Promise<string | undefined> {
    for (let i = 0; i < 200; i++) {
      const l = logs.find((x) => re.test(x));
      if (l) return l;
      await sleep(100);
    }
    return undefined;
  }

  beforeAll(async () => {
    cluster = await upProxyCluster({ name: NAME, replicas: 2, basePort: BASE_PORT, record: true });
    const caFiles = testCa(cluster.stateDir, 'ca');
    ca = readFileSync(caFiles.cert);
    otherCa = readFileSync(testCa(cluster.stateDir, 'other-ca').cert);
    for (const [id, alt] of [
      ['r1', 'IP:127.0.0.1'],
      ['r2', 'DNS:db.example'],
    ] as const) {
      const data = dataDir(cluster.stateDir, NAME, id);
      signedCert(data, 'server', caFiles, alt, data);
      await sslOnAtReload(cluster, data, cluster.replicas.find((e) => e.id === id)!.port);
    }
  }, 120_000);

  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.stop(1000)));
    await cluster?.down();
  }, 60_000);

  it('verify-full with the CA: TLS to r1, and its health checks (over the same verification) keep it up', async () => {
    const { port, logs } = await proxyTo('r1', { serverTls: 'verify-full', serverCa: ca });
    expect(await sslOf(port)).toBe(true);
    // Several rounds of checks (500 ms apart) over TLS: r1 stays healthy, nothing failed.
    await sleep(2000);
    expect(proxies.at(-1)!.router.snapshot()[0]!.healthy).toBe(true);
    expect(logs.filter((l) => /r1 down|verification/.test(l))).toEqual([]);
    expect(await sslOf(port)).toBe(true);
    // The checks' own connection is on TLS, as the server sees it.
    const r1 = cluster.replicas.find((r) => r.id === 'r1')!;
    const direct = new pg.Client(cluster.pgConfig(r1.port));
    await direct.connect();
    try {
      const r = await direct.query<{ n: number; ssl: boolean }>(
        "select count(*)::int as n, bool_and(s.ssl) as ssl from pg_stat_activity a join pg_stat_ssl s using (pid) where a.application_name = 'plb-health'",
      );
      expect(r.rows[0]).toEqual({ n: 1, ssl: true });
    } finally {
      await direct.end();
    }
    // The read of max_connections (--admission-limit auto) verifies alike.
    const settings = await readConnectionSettings(
      r1,
      cluster.creds,
      5000,
      checkTls('verify-full', ca, r1.host),
    );
    expect(settings.maxConnections).toBeGreaterThan(0);
    await expect(
      readConnectionSettings(r1, cluster.creds, 5000, checkTls('verify-full', otherCa, r1.host)),
    ).rejects.toThrow();
  }, 60_000);

  it('verify-full with another CA: the health checks take r1 down, naming the failure; then a client is refused', async () => {
    const { port, logs } = await proxyTo('r1', { serverTls: 'verify-full', serverCa: otherCa });
    // No client yet: the health checks (node-postgres) verify as the sessions do.
    const down = await logged(logs, /^r1 down \(/);
    expect(down).toMatch(
      /^r1 down \(health: unreachable: certificate of 127\.0\.0\.1 failed verification \(--server-tls verify-full\): .*\(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)\)$/,
    );
    await expect(sslOf(port)).rejects.toMatchObject({ code: '57P03' });
  }, 60_000);

  it('verify-full to r2, whose certificate names only db.example: refused, the host name said; verify-ca takes it', async () => {
    const full = await proxyTo('r2', { serverTls: 'verify-full', serverCa: ca });
    const err = await sslOf(full.port).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    // The client told why (or, had the checks been quicker, that no replica may take it).
    expect(err?.message).toMatch(
      /certificate of 127\.0\.0\.1 failed verification \(--server-tls verify-full\): .*127\.0\.0\.1 is not in the cert's list|no replica/,
    );
    expect(await logged(full.logs, /^r2 down \(.*127\.0\.0\.1 is not in the cert's list/)).toBeDefined();
    const ca2 = await proxyTo('r2', { serverTls: 'verify-ca', serverCa: ca });
    expect(await sslOf(ca2.port)).toBe(true);
  }, 60_000);

  it('the command: --server-tls verify-full --server-ca reaches r1 over TLS (max_connections read so too), stops with 0', async () => {
    const caFile = join(cluster.stateDir, 'ca.crt');
    const port = nextPort++;
    const proxy = spawnProxy(NAME, cluster.stateDir, [
      '--premium-port',
      String(port),
      '--freemium-port',
      '0',
      '--server-tls',
      'verify-full',
      '--server-ca',
      caFile,
      '--stats-every',
      '0',
    ]);
    try {
      const out = await proxy.logged(`premium: listening on 127.0.0.1:${port}`);
      // Each replica's max_connections read over TLS, verified: r1's read, r2's refused for its name.
      expect(out).toMatch(/^r1: admission limit \d+ \(max_connections 100 /m);
      expect(out).toMatch(/^r2: max_connections not read \(.*127\.0\.0\.1 is not in the cert's list/m);
      // r2's certificate does not name 127.0.0.1: whichever replica a session lands on, it is r1.
      for (let i = 0; i < 3; i++) {
        const c = new pg.Client(cluster.pgConfig(port));
        c.on('error', () => undefined);
        try {
          await c.connect();
          const r = await c.query<{ ssl: boolean; port: number }>(
            'select ssl, inet_server_port() as port from pg_stat_ssl where pid = pg_backend_pid()',
          );
          expect(r.rows[0]).toEqual({ ssl: true, port: cluster.replicas.find((e) => e.id === 'r1')!.port });
        } catch (err) {
          // Refused only for r2's name, never r1's.
          expect(String(err)).toMatch(/127\.0\.0\.1 is not in the cert's list/);
        } finally {
          await c.end().catch(() => undefined);
        }
      }
    } finally {
      proxy.child.kill('SIGTERM');
    }
    expect(await proxy.exited).toBe(0);
  }, 120_000);
});
