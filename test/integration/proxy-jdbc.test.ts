/**
 * pgJDBC (Debian's libpostgresql-jdbc-java, JDK 17) through `plb proxy` on a local cluster of
 * three standbys, as an application uses it: the extended protocol with 20 prepared executions, a
 * server error (22012) and the session going on, Statement.cancel (57014), many sessions over
 * the three replicas, and the class taken from ApplicationName (with assumeMinServerVersion=9.0,
 * so it is in the startup packet) and from options=-c plb.class=... Without
 * assumeMinServerVersion pgJDBC sends the name after startup: the proxy counts that session as a
 * late class and warns once (also seen with node-postgres doing SET application_name). The Java
 * program (test/fixtures/jdbc/JdbcProbe.java) is compiled here with javac. Skips without the
 * server binaries or a JDK and the driver, except with CI=true (a failure there).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyHandle } from '../../src/proxy/proxy-server.js';
import { haveServerBinaries } from '../helpers/fixtures.js';
import { startTestProxy, upProxyCluster, type ProxyTestCluster } from '../helpers/proxy-setup.js';

const ci = process.env.CI === 'true';
const JDBC_JAR = '/usr/share/java/postgresql.jar';
const SOURCE = join(import.meta.dirname, '../fixtures/jdbc/JdbcProbe.java');
const BASE_PORT = 22100;
/** A short-lived client: the quick JIT and the simple collector start fastest. */
const JVM_FLAGS = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-Xshare:auto'];
const PORTS = { byName: [22160, 22161], byOption: [22162, 22163], spread: [22164, 22165] } as const;

const haveJdk = existsSync(JDBC_JAR) && existsSync('/usr/bin/javac') && existsSync('/usr/bin/java');

describe.runIf(ci && !(haveServerBinaries && haveJdk))('plb proxy with pgJDBC (CI)', () => {
  it('has the server binaries, a JDK (javac) and the PostgreSQL JDBC driver', () => {
    throw new Error(
      `CI=true and no ${haveServerBinaries ? 'JDK or ' + JDBC_JAR : 'PostgreSQL server binaries'}: the JDBC test must run in CI`,
    );
  });
});

function run(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({
        code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
        out: stdout,
        err: stderr,
      }),
    );
  });
}

describe.skipIf(!haveServerBinaries || !haveJdk)('plb proxy with pgJDBC', () => {
  let cluster: ProxyTestCluster;
  let classDir: string;
  /** Class from application_name (static 2:1, so a class has its own replicas). */
  let byName: ProxyHandle;
  /** Class from options=-c plb.class=... */
  let byOption: ProxyHandle;
  /** Least connections over all three (every replica takes either class). */
  let spread: ProxyHandle;
  const logs: string[] = [];

  const url = (port: number, params = ''): string =>
    `jdbc:postgresql://127.0.0.1:${port}/${cluster.creds.database}${params ? `?${params}` : ''}`;
  const idOfPort = (port: number): string => cluster.replicas.find((r) => r.port === port)?.id ?? `?${port}`;

  /** Runs the probe; returns its lines as [key, ...values]. */
  async function probe(...args: string[]): Promise<string[][]> {
    const r = await run('java', [...JVM_FLAGS, '-cp', `${JDBC_JAR}:${classDir}`, 'JdbcProbe', ...args], {
      ...process.env,
      PGUSER: cluster.creds.user,
      PGPASSWORD: cluster.creds.password,
    });
    expect(r.code, `JdbcProbe ${args[0]}: ${r.err}`).toBe(0);
    return r.out
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
  }

  beforeAll(async () => {
    classDir = mkdtempSync(join(tmpdir(), 'plb-jdbc-'));
    // Compiled while the cluster comes up.
    const [c, javac] = await Promise.all([
      upProxyCluster({ name: 'plbtest-proxy-jdbc', replicas: 3, basePort: BASE_PORT }),
      run('javac', ['-d', classDir, '-cp', JDBC_JAR, SOURCE]),
    ]);
    cluster = c;
    if (javac.code !== 0) throw new Error(`javac failed: ${javac.err}`);
    const staticSplit = { strategy: 'static' as const, partition: { premium: 2, freemium: 1 } };
    const log = (l: string): void => void logs.push(l);
    byName = await startTestProxy({
      ...cluster.proxyBase,
      ...staticSplit,
      ports: { premium: PORTS.byName[0], freemium: PORTS.byName[1] },
      classFrom: 'application_name',
      log,
    });
    byOption = await startTestProxy({
      ...cluster.proxyBase,
      ...staticSplit,
      ports: { premium: PORTS.byOption[0], freemium: PORTS.byOption[1] },
      classFrom: 'option',
      log,
    });
    spread = await startTestProxy({
      ...cluster.proxyBase,
      strategy: 'lc',
      ports: { premium: PORTS.spread[0], freemium: PORTS.spread[1] },
      log,
    });
  }, 120_000);

  afterAll(async () => {
    await Promise.all([byName, byOption, spread].map((p) => p?.stop(1000)));
    await cluster?.down();
    if (classDir) rmSync(classDir, { recursive: true, force: true });
  });

  /** The probe's lines, all modes in one JVM (run once, in the first test). */
  let lines: string[][] | undefined;
  let lateBefore = 0;
  async function probeAll(): Promise<string[][]> {
    if (lines) return lines;
    lateBefore = byName.stats.lateClass;
    lines = await probe(
      'session',
      url(PORTS.byName[0]),
      '--',
      'many',
      url(PORTS.spread[0]),
      '100',
      '50',
      '--',
      'where',
      url(PORTS.byName[0], 'ApplicationName=freemium&assumeMinServerVersion=9.0'),
      url(PORTS.byName[1], 'ApplicationName=premium&assumeMinServerVersion=9.0'),
      url(PORTS.byOption[0], 'options=-c%20plb.class%3Dfreemium'),
      url(PORTS.byOption[1], 'options=-c%20plb.class%3Dpremium'),
      // Without assumeMinServerVersion: the name is sent after startup.
      url(PORTS.byName[0], 'ApplicationName=freemium'),
    );
    return lines;
  }
  const get = (all: string[][], k: string): string[] => all.find((l) => l[0] === k)?.slice(1) ?? [];

  it('extended protocol: 20 prepared executions, 22012 and the session goes on, Statement.cancel (57014)', async () => {
    const all = await probeAll();
    expect(['r1', 'r2']).toContain(idOfPort(Number(get(all, 'port')[0])));
    // 2 * (1 + ... + 20)
    expect(get(all, 'prepared')).toEqual(['20', '420']);
    expect(get(all, 'error')).toEqual(['22012']);
    expect(get(all, 'after-error')).toEqual(['42']);
    expect(get(all, 'cancel')[0]).toBe('57014');
    expect(get(all, 'after-cancel')).toEqual(['still-here']);
    expect(byName.stats.cancels).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it('100 sessions, 50 at a time, over the three replicas: none fails', async () => {
    const all = await probeAll();
    expect(all.filter((l) => l[0] === 'failure').map((l) => l.join(' '))).toEqual([]);
    expect(get(all, 'failed')).toEqual(['0']);
    const served = get(all, 'served').map((s) => s.split(':').map(Number));
    expect(served.map(([p]) => idOfPort(p as number)).sort()).toEqual(['r1', 'r2', 'r3']);
    expect(served.reduce((n, [, k]) => n + (k as number), 0)).toBe(100);
  }, 60_000);

  it('the class from ApplicationName (with assumeMinServerVersion=9.0) and from options=-c plb.class', async () => {
    const where = (await probeAll())
      .filter((l) => l[0] === 'where')
      .map((l) => [idOfPort(Number(l[1])), l[2]]);
    expect(where).toHaveLength(5);
    expect(where[0]).toEqual(['r3', 'freemium']);
    expect(where[1]![1]).toBe('premium');
    expect(['r1', 'r2']).toContain(where[1]![0]);
    expect(where[2]![0]).toBe('r3');
    expect(['r1', 'r2']).toContain(where[3]![0]);
  }, 60_000);

  it('without assumeMinServerVersion the name comes after routing: counted and warned once', async () => {
    const where = (await probeAll()).filter((l) => l[0] === 'where');
    const [id, name] = [idOfPort(Number(where[4]![1])), where[4]![2]];
    // Routed by its port (premium), before the server heard the name.
    expect(['r1', 'r2']).toContain(id);
    expect(name).toBe('freemium');
    // Only that session: the others named their class in the startup packet.
    expect(byName.stats.lateClass).toBe(lateBefore + 1);
    const warning = logs.filter((l) => l.includes('set application_name to freemium'));
    expect(warning).toHaveLength(1);
    expect(warning[0]).toMatch(/assumeMinServerVersion=9\.0/);
    expect(warning[0]).toMatch(/options=-c plb\.class=freemium/);
  }, 60_000);

  it('node-postgres: SET application_name to another class warns once per session; another name does not', async () => {
    const before = byName.stats.lateClass;
    const warned = logs.length;
    const c = new pg.Client(cluster.pgConfig(PORTS.byName[1]));
    c.on('error', () => undefined);
    await c.connect();
    try {
      await c.query("set application_name = 'reporting'");
      expect(byName.stats.lateClass).toBe(before);
      await c.query("set application_name = 'premium'");
      await c.query("set application_name = 'Premium'");
      const r = await c.query<{ p: number }>('select inet_server_port() as p');
      expect(idOfPort(Number(r.rows[0]!.p))).toBe('r3');
    } finally {
      await c.end();
    }
    expect(byName.stats.lateClass).toBe(before + 1);
    const fresh = logs.slice(warned).filter((l) => l.includes('set application_name to premium'));
    expect(fresh).toHaveLength(1);
    expect(byName.statsLine()).toMatch(/late-class \d+/);
  }, 30_000);
});
