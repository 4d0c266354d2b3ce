/**
 * /proc helpers for the local driver: the postmaster pid, its process tree, stopped state and
 * CPU seconds. Linux only (the local driver is too).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';

export interface ProcStat {
  pid: number;
  state: string;
  ppid: number;
  pgid: number;
  /** utime + stime, clock ticks. */
  ticks: number;
  /** cutime + cstime: CPU of reaped children (ended backends), clock ticks. */
  childTicks: number;
}

/** Parses /proc/<pid>/stat; the command name may contain spaces and parentheses. */
export function parseStat(text: string): ProcStat | null {
  const close = text.lastIndexOf(')');
  const open = text.indexOf('(');
  if (open < 0 || close < 0) return null;
  const pid = Number(text.slice(0, open).trim());
  // Fields after the command: state(3) ppid(4) pgrp(5) ... utime(14) stime(15) cutime(16) cstime(17).
  const f = text
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  const n = (i: number) => Number(f[i - 3] ?? NaN);
  const stat: ProcStat = {
    pid,
    state: f[0] ?? '?',
    ppid: n(4),
    pgid: n(5),
    ticks: n(14) + n(15),
    childTicks: n(16) + n(17),
  };
  return Number.isFinite(stat.ticks) ? stat : null;
}

export function readStat(pid: number): ProcStat | null {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/** All processes (a snapshot of /proc). */
export function allStats(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const s = readStat(Number(e));
    if (s) out.push(s);
  }
  return out;
}

/** The process and all its descendants (from one /proc snapshot). */
export function processTree(rootPid: number, snapshot: ProcStat[] = allStats()): ProcStat[] {
  const byParent = new Map<number, ProcStat[]>();
  let root: ProcStat | undefined;
  for (const s of snapshot) {
    if (s.pid === rootPid) root = s;
    const list = byParent.get(s.ppid) ?? [];
    list.push(s);
    byParent.set(s.ppid, list);
  }
  if (!root) return [];
  const out: ProcStat[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const s = stack.pop()!;
    out.push(s);
    for (const c of byParent.get(s.pid) ?? []) stack.push(c);
  }
  return out;
}

/**
 * Cumulative CPU ticks of a server: the postmaster's own and reaped children's time plus every live
 * descendant's, so ended sessions still count (like a cgroup's cpuacct).
 */
export function treeTicks(tree: ProcStat[]): number {
  let t = 0;
  for (const s of tree) t += s.ticks + s.childTicks;
  return t;
}

let clockTick: number | undefined;
/** getconf CLK_TCK (almost always 100). */
export function clockTicksPerSecond(): number {
  if (clockTick === undefined) {
    try {
      clockTick = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTick = 100;
    }
  }
  return clockTick;
}

/**
 * The live postmaster pid of a data directory, or null. Checks that the pid from postmaster.pid
 * really is a postgres process on that data directory (pids get reused after a crash).
 */
export function postmasterPid(dataDir: string): number | null {
  const file = `${dataDir}/postmaster.pid`;
  if (!existsSync(file)) return null;
  let pid: number;
  try {
    pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  } catch {
    return null;
  }
  if (!Number.isInteger(pid) || pid <= 0) return null;
  const stat = readStat(pid);
  if (!stat || stat.state === 'Z') return null;
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const exe = readlinkSync(`/proc/${pid}/exe`);
    if (!/postgres/.test(exe)) return null;
    const dIdx = cmd.indexOf('-D');
    // pg_ctl starts `postgres -D <dir>`; compare resolved paths when given.
    if (dIdx >= 0 && cmd[dIdx + 1] && resolve(cmd[dIdx + 1]!) !== resolve(dataDir)) return null;
  } catch {
    return null;
  }
  return pid;
}

/** Sends a signal to every process of the tree (ignores the ones that are gone). */
export function signalTree(rootPid: number, signal: NodeJS.Signals): number {
  const tree = processTree(rootPid);
  for (const s of tree) {
    try {
      process.kill(s.pid, signal);
    } catch {
      // already gone
    }
  }
  return tree.length;
}

/** nattch of a SysV shared memory segment by id, or null when it does not exist. */
function shmAttachCount(shmid: number): number | null {
  try {
    const lines = readFileSync('/proc/sysvipc/shm', 'utf8').trim().split('\n').slice(1);
    for (const l of lines) {
      const f = l.trim().split(/\s+/);
      // key shmid perms size cpid lpid nattch ...
      if (Number(f[1]) === shmid) return Number(f[6]);
    }
  } catch {
    // no sysvipc view: unknown
  }
  return null;
}

/**
 * After a SIGKILL the postmaster may linger as a zombie (pid 1 here reaps lazily), and postgres
 * then refuses to start ("another postmaster running"). When no live postmaster owns the data dir
 * and no process is attached to its shared memory segment, the lock file is stale: remove the
 * segment and the file. With processes still attached we leave it, and postgres refuses (safely).
 */
export function clearStaleLock(dataDir: string): boolean {
  const file = `${dataDir}/postmaster.pid`;
  if (!existsSync(file) || postmasterPid(dataDir) !== null) return false;
  const lines = readFileSync(file, 'utf8').split('\n');
  const shmid = Number(lines[6]?.trim().split(/\s+/)[1]);
  if (Number.isInteger(shmid) && shmid >= 0 && lines[6]?.trim()) {
    const n = shmAttachCount(shmid);
    if (n !== null && n > 0) return false;
    if (n !== null) {
      try {
        execFileSync('ipcrm', ['-m', String(shmid)], { stdio: 'ignore' });
      } catch {
        // already gone
      }
    }
  }
  rmSync(file, { force: true });
  return true;
}

/**
 * Processes working in `dir` or naming a path inside it: what is left of a plb killed half-way
 * through (an initdb, a pg_basebackup, a postmaster still starting, whose pid file is not written
 * yet). `dir` is a folder plb made for one cluster id, so these are plb's own. Never this process.
 */
export function processesUnder(dir: string): number[] {
  const inside = (p: string): boolean => p === dir || p.startsWith(`${dir}/`);
  const out: number[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return out;
  }
  for (const entry of entries) {
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      // `-D /dir`, `-D/dir`, `--pgdata=/dir`: the path with its flag prefix taken off.
      if (inside(cwd) || args.some((a) => inside(a.replace(/^(-D|--[a-z-]+=)/, '')))) out.push(pid);
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}
