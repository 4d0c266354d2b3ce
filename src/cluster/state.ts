/**
 * The state folder shared by both drivers and the benchmark runner:
 *
 *   <stateRoot>/<cluster>/password      generated at up, mode 0600; removed by down with the cluster
 *   <stateRoot>/<cluster>/cluster.json  which driver made the cluster and with which spec
 *   <stateRoot>/<cluster>/lock          held by bench, up and down (see lock.ts)
 *   <stateRoot>/<cluster>/data/<id>/    local driver only: the data directories
 *
 * The state root is per user ($XDG_STATE_HOME/plb or ~/.local/state/plb), never the cwd.
 * The password is never printed or logged; nothing here puts it in an error message.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { DEFAULT_CLUSTER } from './driver.js';
import { type Credentials } from '../core/endpoint.js';
import { PlbError } from '../core/errors.js';
import { makeDirs } from '../core/safe-write.js';
import { clusterRecordSchema } from '../run-format/cluster-record.js';
import { firstIssue } from '../core/zod-issue.js';
import type { ClusterRecord } from '../run-format/cluster-record.js';

export const PLB_USER = 'plb';
export const PLB_DATABASE = 'plb';
/** @deprecated DEFAULT_CLUSTER.name (the commands still import this name). */
export const DEFAULT_CLUSTER_NAME = DEFAULT_CLUSTER.name;

export type DriverKind = 'docker' | 'local';

/**
 * PLB_STATE_DIR, else $XDG_STATE_HOME/plb, else ~/.local/state/plb (root: /var/lib/plb): per user,
 * never the cwd (two folders must not see two sets of clusters, nor a checkout hold passwords).
 * Root's default is /var/lib/plb because the local driver's postgres user must traverse the
 * folders to its data, and /root is closed to it.
 */
export function defaultStateDir(
  env: NodeJS.ProcessEnv = process.env,
  home: string = homedir(),
  uid: number = process.getuid?.() ?? -1,
): string {
  const own = env.PLB_STATE_DIR;
  if (own && own.trim() !== '') return resolve(own);
  // The XDG spec says a relative value is to be ignored.
  const xdg = env.XDG_STATE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, 'plb');
  if (uid === 0) return '/var/lib/plb';
  return join(home, '.local', 'state', 'plb');
}

/** A new cluster id: 12 hex characters (48 random bits). */
export function newClusterId(): string {
  return randomBytes(6).toString('hex');
}

const NAME_RE = /^[a-z0-9][a-z0-9_-]{0,39}$/;

/** Cluster names end up in paths, container names and labels: keep them boring. */
export function validateClusterName(name: string): string {
  if (!NAME_RE.test(name)) {
    throw new PlbError('BAD_INPUT', `name: "${name}" is not a valid cluster name`, {
      hint: 'use 1-40 characters of a-z, 0-9, "-" or "_", starting with a letter or digit',
    });
  }
  return name;
}

export function clusterDir(stateDir: string, name: string): string {
  return join(stateDir, validateClusterName(name));
}

/** Creates the per-cluster folder (0700) and returns it. */
export function ensureClusterDir(stateDir: string, name: string): string {
  const dir = clusterDir(stateDir, name);
  makeDirs(dir, 'state dir (PLB_STATE_DIR)', 0o700);
  return dir;
}

export function passwordFile(stateDir: string, name: string): string {
  return join(clusterDir(stateDir, name), 'password');
}

/** Returns the cluster's password, generating it (0600 file) on first use. Refuses a symlink. */
export function ensurePassword(stateDir: string, name: string): string {
  const file = passwordFile(stateDir, name);
  if (existsSync(file) || isSymlink(file)) {
    let fd: number;
    try {
      // O_NOFOLLOW: a symlink planted here must not make us read (or chmod) another file.
      fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (cause) {
      throw new PlbError('BAD_INPUT', `password file ${file} is a symlink or unreadable; refusing it`, {
        hint: 'remove it; plb generates a new one',
        cause,
      });
    }
    try {
      if (!fstatSync(fd).isFile()) {
        throw new PlbError('BAD_INPUT', `password file ${file} is not a regular file; refusing it`);
      }
      // Tighten the mode in case someone loosened it.
      if ((fstatSync(fd).mode & 0o077) !== 0) fchmodSync(fd, 0o600);
      const pw = readFileSync(fd, 'utf8').trim();
      if (pw !== '') return pw;
    } finally {
      closeSync(fd);
    }
  }
  ensureClusterDir(stateDir, name);
  // Hex: safe in connection strings, env vars and pwfiles without quoting.
  const pw = randomBytes(16).toString('hex');
  writeNew(file, pw + '\n');
  return pw;
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Writes through a fresh temp file ('wx': never through a planted link) renamed over `file`. */
function writeNew(file: string, content: string): void {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, content, { mode: 0o600, flag: 'wx' });
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** Removes the password file (not through a link: rm unlinks the link itself). True if one was there. */
export function removePassword(stateDir: string, name: string): boolean {
  const file = passwordFile(stateDir, name);
  const there = existsSync(file) || isSymlink(file);
  rmSync(file, { force: true });
  return there;
}

/** Credentials of the cluster: user and database `plb`, the generated password (created once). */
export function loadCredentials(stateDir: string, name: string): Credentials {
  return { user: PLB_USER, password: ensurePassword(stateDir, name), database: PLB_DATABASE };
}

export function recordFile(stateDir: string, name: string): string {
  return join(clusterDir(stateDir, name), 'cluster.json');
}

export function writeClusterRecord(stateDir: string, record: ClusterRecord): void {
  ensureClusterDir(stateDir, record.name);
  writeNew(recordFile(stateDir, record.name), JSON.stringify(record, null, 2) + '\n');
}

/** The record, or null when no cluster of that name was brought up from this state folder. */
export function readClusterRecord(stateDir: string, name: string): ClusterRecord | null {
  const file = recordFile(stateDir, name);
  if (!existsSync(file)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (cause) {
    throw new PlbError('INTERNAL', `cluster record ${file} is not valid JSON`, {
      hint: `run \`plb cluster down --name ${name}\` to clean up`,
      cause,
    });
  }
  const hint = `run \`plb cluster down --name ${name}\` to clean up`;
  const r = clusterRecordSchema.safeParse(parsed);
  if (r.success) return r.data;
  // Without an id nothing can be proven ours: only an explicit down by name removes it.
  if (r.error.issues[0]?.path[0] === 'id') {
    throw new PlbError('INTERNAL', `cluster record ${file} has no cluster id (made by an older plb)`, {
      hint,
    });
  }
  throw new PlbError(
    'INTERNAL',
    `cluster record ${file} has an unknown format: ${firstIssue(r.error, parsed)}`,
    {
      hint,
      cause: r.error,
    },
  );
}

/** Read-modify-write of the record; no-op when there is none. */
export function updateClusterRecord(
  stateDir: string,
  name: string,
  change: (r: ClusterRecord) => ClusterRecord,
): ClusterRecord | null {
  const r = readClusterRecord(stateDir, name);
  if (!r) return null;
  const next = change(r);
  writeClusterRecord(stateDir, next);
  return next;
}

export function removeClusterRecord(stateDir: string, name: string): void {
  rmSync(recordFile(stateDir, name), { force: true });
}

/** Local driver data folder of one server. */
export function dataDir(stateDir: string, name: string, id: string): string {
  return join(clusterDir(stateDir, name), 'data', id);
}
