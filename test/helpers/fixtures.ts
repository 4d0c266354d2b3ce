// Shared by the test files: what the machine has, bench flags with test-sized defaults, and a
// command run in-process with its output captured.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, vi } from 'vitest';
import type { BenchFlagValues } from '../../src/bench/options/flags.js';
import { findBinDir } from '../../src/cluster/local/binaries.js';

const PACKAGE_JSON = join(import.meta.dirname, '../../package.json');

/**
 * Runs an oclif command in this process, capturing stdout and stderr (and silencing Node's
 * warnings, e.g. oclif's deprecations); returns its exit code (0 when it returned).
 */
export async function runCommand(
  cmd: { run(argv: string[], root: string): Promise<unknown> },
  argv: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((c: string | Uint8Array) => {
    stdout += String(c);
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((c: string | Uint8Array) => {
    stderr += String(c);
    return true;
  });
  const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  let code = 0;
  try {
    await cmd.run(argv, PACKAGE_JSON);
  } catch (e) {
    code = (e as { oclif?: { exit?: number } }).oclif?.exit ?? -1;
  } finally {
    out.mockRestore();
    err.mockRestore();
    warn.mockRestore();
    process.exitCode = undefined;
  }
  return { code, stdout, stderr };
}

/** True when the PostgreSQL server binaries are installed (local-driver suites skip otherwise). */
export const haveServerBinaries: boolean = (() => {
  try {
    findBinDir();
    return true;
  } catch {
    return false;
  }
})();

/** Every bench flag, small: 4 clients, 1000 rows, the local driver on the given port. */
export function benchFlagValues(
  out: string,
  name: string,
  basePort: number,
  over: Partial<BenchFlagValues> = {},
): BenchFlagValues {
  return {
    strategies: 'plb',
    mixes: '25:75',
    repeat: 1,
    clients: 4,
    model: 'closed',
    rate: '20',
    out,
    'dataset-rows': 1000,
    'queries-per-session': 5,
    'think-time': '10ms',
    'target-cpu': '0.7',
    'hang-timeout': '5s',
    reference: '2:1:2',
    partition: '3:2',
    'slow-start': '10s',
    borrow: '1.5:2',
    'health-interval': '1s',
    fall: 2,
    rise: 2,
    oracle: false,
    progress: 0,
    name,
    driver: 'local',
    'base-port': basePort,
    'keep-cluster': false,
    json: false,
    ...over,
  };
}

/** The first of `bins` that runs (on PATH, or Debian's /usr/sbin when PATH lacks it), or null. */
function installed(bins: string[], versionFlag: string): string | null {
  for (const bin of bins) {
    try {
      execFileSync(bin, [versionFlag], { stdio: 'ignore' });
      return bin;
    } catch {
      // not this one
    }
  }
  return null;
}

/** The haproxy binary, or null. */
export const haproxyBin: string | null = installed(['haproxy', '/usr/sbin/haproxy'], '-v');

/** Pgpool-II's binary, or null. */
export const pgpoolBin: string | null = installed(['pgpool', '/usr/sbin/pgpool'], '--version');

/** PgBouncer's binary, or null. */
export const pgbouncerBin: string | null = installed(['pgbouncer', '/usr/sbin/pgbouncer'], '-V');

/** A scratch folder removed after the test file, and a writer of named files into it. */
export function scratchFolder(prefix: string): {
  root: string;
  file: (name: string, text: string) => string;
} {
  const root = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  return {
    root,
    file: (name, text) => {
      const p = join(root, name);
      writeFileSync(p, text);
      return p;
    },
  };
}

/** The message of what a call throws; 'no error' when it returns. */
export function thrownMessage(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    return (err as Error).message;
  }
  return 'no error';
}

/** Whether something accepts TCP connections on 127.0.0.1:port (a server or balancer the test started). */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
