/**
 * One exclusive lock per cluster: <stateDir>/<cluster>/lock, created with O_EXCL ('wx') and
 * holding the holder's pid, start time and command. `bench` (for its whole series), `cluster up`
 * and `cluster down` take it, so two of them never inject faults into, create or remove one
 * cluster at the same time. A lock whose pid is gone (kill(pid, 0) -> ESRCH), or now names another
 * process (pid reused, checked by boot id and start tick), is stale and taken over; anything else
 * fails at once naming the holder.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PlbError } from '../core/errors.js';
import { escapeControl } from '../core/text.js';
import { ensureClusterDir } from './state.js';

interface LockHolder {
  pid: number;
  startedAt: string;
  command: string;
  /** Random per acquisition: release removes the file only while it is still this one. */
  token: string;
  /** processIdentity of the holder, to tell a reused pid from the holder (absent off Linux). */
  bootId?: string;
  procStart?: number;
}

export interface ClusterLock {
  readonly file: string;
  readonly holder: LockHolder;
  /** Removes the lock if it is still ours. Idempotent. */
  release(): void;
}

export function lockFile(stateDir: string, name: string): string {
  return join(ensureClusterDir(stateDir, name), 'lock');
}

/** The command line of this process, for the lock ("plb bench run --name x ..."). */
function currentCommand(argv: readonly string[] = process.argv): string {
  return ['plb', ...argv.slice(2)].join(' ').slice(0, 200);
}

function readHolder(file: string): LockHolder | null {
  try {
    const h = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockHolder>;
    if (typeof h.pid !== 'number' || !Number.isInteger(h.pid) || h.pid <= 0) return null;
    return {
      pid: h.pid,
      startedAt: String(h.startedAt ?? '?'),
      command: String(h.command ?? '?'),
      token: String(h.token ?? ''),
      ...(typeof h.bootId === 'string' ? { bootId: h.bootId } : {}),
      ...(typeof h.procStart === 'number' ? { procStart: h.procStart } : {}),
    };
  } catch {
    return null;
  }
}

/** True unless the kernel says no such process (EPERM: alive, another user's). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * Which process a pid is, exactly: the boot (boot_id) and its start in clock ticks after boot
 * (/proc/<pid>/stat field 22). Raw ticks, not wall time, so a clock step cannot fake a change.
 * Null where /proc cannot tell (not Linux).
 */
export function processIdentity(pid: number): { bootId: string; start: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name before the fields may hold spaces: count from its closing parenthesis.
    const start = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return Number.isFinite(start) && bootId !== '' ? { bootId, start } : null;
  } catch {
    return null;
  }
}

/**
 * The holder still holds: its pid is alive and is the same process. After a reboot, or when the
 * pid now names a process that started at another tick, the holder died and its pid was reused.
 */
function holderAlive(h: LockHolder, alive: (pid: number) => boolean): boolean {
  if (!alive(h.pid)) return false;
  if (h.bootId === undefined || h.procStart === undefined) return true;
  const now = processIdentity(h.pid);
  if (now === null) return true;
  return now.bootId === h.bootId && now.start === h.procStart;
}

function describeHolder(h: LockHolder): string {
  return `pid ${h.pid}, started ${h.startedAt}, ${escapeControl(h.command)}`;
}

/**
 * Takes the lock of cluster `name` or throws CLUSTER_LOCKED naming the holder. The lock is also
 * removed when the process exits (a second Ctrl-C exits without running finally blocks).
 */
export function acquireClusterLock(
  stateDir: string,
  name: string,
  command: string = currentCommand(),
  alive: (pid: number) => boolean = processAlive,
): ClusterLock {
  const file = lockFile(stateDir, name);
  const holder: LockHolder = {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    command,
    token: randomBytes(8).toString('hex'),
  };
  const me = processIdentity(process.pid);
  if (me) {
    holder.bootId = me.bootId;
    holder.procStart = me.start;
  }
  const text = JSON.stringify(holder) + '\n';
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, text, { flag: 'wx', mode: 0o600 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const other = readHolder(file);
    // Unreadable: another process is between create and write; treat it as held.
    if (other && !holderAlive(other, alive) && attempt < 3) {
      takeOverStale(file, other);
      continue;
    }
    throw new PlbError(
      'CLUSTER_LOCKED',
      `cluster ${name} is locked by ${other ? describeHolder(other) : 'another plb process'}`,
      { hint: `wait for it to finish, or remove ${file} if that process is gone` },
    );
  }
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    process.off('exit', release);
    if (readHolder(file)?.token === holder.token) rmSync(file, { force: true });
  };
  process.on('exit', release);
  return { file, holder, release };
}

/**
 * Removes a stale lock only if it is still the one we judged stale: moved aside first, and put
 * back when a live process has taken it over in the meantime.
 */
function takeOverStale(file: string, stale: LockHolder): void {
  const aside = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.stale`;
  try {
    renameSync(file, aside);
  } catch {
    return; // someone else moved it: retry the create
  }
  const moved = readHolder(aside);
  if (moved && (moved.token !== stale.token || moved.pid !== stale.pid)) {
    try {
      linkSync(aside, file); // fails when a new lock is already there: then that one stands
    } catch {
      // a newer lock holds the place
    }
  }
  rmSync(aside, { force: true });
}

/** Runs fn holding the cluster's lock; released on every way out of fn. */
export async function withClusterLock<T>(
  stateDir: string,
  name: string,
  fn: () => Promise<T>,
  command?: string,
): Promise<T> {
  const lock = acquireClusterLock(stateDir, name, command);
  try {
    return await fn();
  } finally {
    lock.release();
  }
}
