// The Python (psycopg 3) and Java (pgJDBC) probes of the conformance corpus, as the test runs
// them: each prints one JSON object, feature to result (test/fixtures/conformance/).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { run, type ClientTarget, type Feature, type Results } from './common.js';

const DIR = join(import.meta.dirname, '../../fixtures/conformance');
export const PYTHON = '/usr/bin/python3';
export const JDBC_JAR = '/usr/share/java/postgresql.jar';
/** A short-lived client: the quick JIT and the simple collector start fastest. */
const JVM_FLAGS = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-Xshare:auto'];

/** Why psycopg cannot run here, or undefined. */
export async function psycopgMissing(): Promise<string | undefined> {
  if (!existsSync(PYTHON)) return `no ${PYTHON}`;
  const r = await run(PYTHON, ['-c', 'import psycopg']);
  return r.code === 0 ? undefined : `${PYTHON} cannot import psycopg (Debian's python3-psycopg)`;
}

/** Why pgJDBC cannot run here, or undefined. */
export function jdbcMissing(): string | undefined {
  for (const f of ['/usr/bin/javac', '/usr/bin/java', JDBC_JAR]) if (!existsSync(f)) return `no ${f}`;
  return undefined;
}

export async function compileJava(classDir: string): Promise<void> {
  const r = await run('javac', ['-d', classDir, '-cp', JDBC_JAR, join(DIR, 'ConformanceProbe.java')]);
  if (r.code !== 0) throw new Error(`javac failed: ${r.err}`);
}

function args(t: ClientTarget, features: readonly Feature[]): string[] {
  const { host, port, tlsPort, primaryPort, database, user, password, authPassword } = t;
  return [
    host,
    String(port),
    String(tlsPort),
    String(primaryPort),
    database,
    user,
    password,
    authPassword,
    features.join(','),
  ];
}

async function parse(what: string, p: Promise<{ code: number; out: string; err: string }>): Promise<Results> {
  const r = await p;
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}: ${r.err.slice(0, 2000)}`);
  return JSON.parse(r.out) as Results;
}

/** The probes wait, as the test does for psql and node-postgres, until their sleep is active before they cancel it. */
export function psycopgResults(t: ClientTarget, features: readonly Feature[]): Promise<Results> {
  return parse('psycopg_probe.py', run(PYTHON, [join(DIR, 'psycopg_probe.py'), ...args(t, features)]));
}

export function jdbcResults(
  classDir: string,
  t: ClientTarget,
  features: readonly Feature[],
): Promise<Results> {
  return parse(
    'ConformanceProbe',
    run('java', [...JVM_FLAGS, '-cp', `${JDBC_JAR}:${classDir}`, 'ConformanceProbe', ...args(t, features)]),
  );
}
