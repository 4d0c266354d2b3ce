/**
 * Finding the PostgreSQL server binaries and running them, as the `postgres` OS user when plb runs
 * as root (initdb and postgres refuse to run as root).
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { PlbError } from '../../core/errors.js';

const NEEDED = ['initdb', 'pg_ctl', 'pg_basebackup', 'postgres'] as const;

/** True when this process may access `path` in `mode` (fs.constants.X_OK, W_OK, ...). */
export function hasAccess(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

const isExecutable = (path: string): boolean => hasAccess(path, constants.X_OK);

function hasAll(dir: string): boolean {
  return NEEDED.every((b) => isExecutable(join(dir, b)));
}

/** Version number of a /usr/lib/postgresql/<v>/bin folder, for picking the newest. */
export function versionOf(dir: string): number {
  const m = /postgresql\/(\d+(?:\.\d+)?)\//.exec(dir + '/');
  return m?.[1] ? Number(m[1]) : 0;
}

/**
 * The folder holding initdb, pg_ctl, pg_basebackup and postgres: from PATH (following symlinks, as
 * Debian links only some of them into /usr/local/bin or /usr/bin), else the newest
 * /usr/lib/postgresql/<v>/bin.
 */
export function findBinDir(
  pathEnv: string = process.env.PATH ?? '',
  libRoot = '/usr/lib/postgresql',
): string {
  for (const d of pathEnv.split(delimiter)) {
    if (!d) continue;
    const initdb = join(d, 'initdb');
    if (!isExecutable(initdb)) continue;
    const real = dirname(realpathSync(initdb));
    if (hasAll(real)) return real;
    if (hasAll(d)) return d;
  }
  const candidates = existsSync(libRoot)
    ? readdirSync(libRoot)
        .map((v) => join(libRoot, v, 'bin'))
        .filter(hasAll)
        .sort((a, b) => versionOf(b) - versionOf(a))
    : [];
  const best = candidates[0];
  if (best) return best;
  throw new PlbError(
    'BINARIES_MISSING',
    'PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) not found',
    {
      hint: 'apt-get install postgresql-15 (or put its bin folder on PATH)',
    },
  );
}

export interface RunAs {
  uid: number;
  gid: number;
}

/** When root, the uid/gid of the `postgres` user to run the server as; undefined otherwise. */
export function serverUser(): RunAs | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const parts = line?.split(':');
  const uid = Number(parts?.[2]);
  const gid = Number(parts?.[3]);
  if (!parts || !Number.isInteger(uid) || !Number.isInteger(gid)) {
    throw new PlbError('BINARIES_MISSING', 'running as root needs a `postgres` OS user to run the servers', {
      hint: 'apt-get install postgresql-15 (creates the user), or run plb as a normal user',
    });
  }
  return { uid, gid };
}

/** A clean environment: no inherited PG* variables steering the tools somewhere else. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PG')) env[k] = v;
  return { ...env, LC_ALL: 'C', LANG: 'C', ...extra };
}

export interface RunResult {
  stdout: string;
  stderr: string;
}

/** Runs a server tool (optionally as the postgres user); rejects with its stderr on failure. */
export function runTool(
  binDir: string,
  tool: string,
  args: string[],
  opts: { cwd: string; runAs?: RunAs; env?: Record<string, string>; timeoutMs?: number },
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      join(binDir, tool),
      args,
      {
        cwd: opts.cwd,
        env: childEnv(opts.env ?? {}),
        timeout: opts.timeoutMs ?? 120_000,
        maxBuffer: 4 * 1024 * 1024,
        ...(opts.runAs ? { uid: opts.runAs.uid, gid: opts.runAs.gid } : {}),
      },
      (err, stdout, stderr) => {
        if (err) {
          const msg = String(stderr).trim().split('\n').slice(-3).join(' / ') || err.message;
          reject(new Error(`${tool} failed: ${msg}`, { cause: err }));
        } else resolve({ stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}
