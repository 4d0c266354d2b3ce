/**
 * The delay of packets on a kernel without netem: plb-delayer (native/delayer.c) holds the packets
 * of one NFQUEUE queue `ms` (± a uniform `jitter`) and lets them go in each flow's order. plb starts
 * one per delayed replica, detached (its own session: a Ctrl-C on the terminal does not end it
 * before plb's restore does), records its pid in the cluster's record, and stops it on every ending.
 * A pid is only signalled once /proc/<pid>/cmdline shows it is plb's delayer for this cluster (its
 * `--tag plb:<clusterId>`): a recorded pid may have been reused by then.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PlbError } from '../../core/errors.js';
import { packageRoot } from '../../core/package-info.js';

const READY_TIMEOUT_MS = 5_000;
const STOP_TIMEOUT_MS = 3_000;
const NAMES = ['plb-delayer', 'plb-delayer-asan'];
export const DELAYER_HINT =
  'build it: `apt-get install libnetfilter-queue-dev`, then `node scripts/build-native.mjs` (or npm run build)';

/** The delayer binary: PLB_DELAYER (a sanitizer build), else native/build/plb-delayer. */
export function delayerPath(): string {
  return process.env.PLB_DELAYER || join(packageRoot(), 'native', 'build', 'plb-delayer');
}

export interface DelayerOptions {
  queue: number;
  ms: number;
  jitter?: number;
  clusterId: string;
}

export function delayerArgs(o: DelayerOptions): string[] {
  return [
    '--queue',
    String(o.queue),
    '--ms',
    String(o.ms),
    ...(o.jitter !== undefined && o.jitter > 0 ? ['--jitter', String(o.jitter)] : []),
    '--tag',
    `plb:${o.clusterId}`,
  ];
}

/** True when a command line (argv) is plb's delayer for the cluster. */
export function isDelayerOf(argv: readonly string[], clusterId: string): boolean {
  const tag = argv.indexOf('--tag');
  return NAMES.includes(basename(argv[0] ?? '')) && tag > 0 && argv[tag + 1] === `plb:${clusterId}`;
}

function cmdline(pid: number): string[] | null {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return raw.length === 0 ? null : raw.replace(/\0$/, '').split('\0');
  } catch {
    return null;
  }
}

/** Alive and not a zombie. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/**
 * Starts a delayer and resolves once its queue is bound (it said `ready`). `started` gets the pid
 * at once, before the wait, so the record holds it even if plb dies waiting.
 */
export function startDelayer(o: DelayerOptions, started: (pid: number) => void): Promise<number> {
  const path = delayerPath();
  if (!existsSync(path))
    return Promise.reject(
      new PlbError('BAD_INPUT', `delay: the delayer is not built (${path})`, { hint: DELAYER_HINT }),
    );
  const child = spawn(path, delayerArgs(o), { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const done = (error?: Error) => {
      clearTimeout(timer);
      child.stdout?.destroy();
      child.stderr?.destroy();
      child.removeAllListeners('exit');
      child.unref();
      if (error) reject(error);
      else resolve(child.pid as number);
    };
    const fail = (why: string) => {
      if (child.exitCode === null) child.kill('SIGKILL');
      done(new PlbError('BAD_INPUT', `delay: the delayer did not start: ${why}`, { hint: DELAYER_HINT }));
    };
    const timer = setTimeout(
      () => fail(`no "ready" within ${READY_TIMEOUT_MS} ms${err ? `: ${err.trim()}` : ''}`),
      READY_TIMEOUT_MS,
    );
    child.once('error', (e) => fail(e.message));
    child.once('exit', (code, signal) => fail(err.trim() || `exited (${signal ?? code})`));
    child.stderr?.on('data', (b: Buffer) => (err += b.toString()));
    child.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('ready\n')) done();
    });
    if (child.pid !== undefined) started(child.pid);
  });
}

/**
 * Stops the cluster's delayer `pid` (SIGTERM: it lets go what it holds; SIGKILL after a while);
 * false when that pid is not it (gone, or reused by another process).
 */
export async function stopDelayer(pid: number, clusterId: string): Promise<boolean> {
  const argv = cmdline(pid);
  if (argv === null || !isDelayerOf(argv, clusterId)) return false;
  for (const [signal, waitMs] of [
    ['SIGTERM', STOP_TIMEOUT_MS],
    ['SIGKILL', 1_000],
  ] as const) {
    try {
      process.kill(pid, signal);
    } catch {
      return true; // gone meanwhile
    }
    for (const deadline = Date.now() + waitMs; Date.now() < deadline; await sleep(10))
      if (!running(pid)) return true;
  }
  return !running(pid);
}

/** The pids of this cluster's delayers, found by their tag (what a record missed: a crash). */
export function delayersOf(clusterId: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const argv = cmdline(Number(name));
    if (argv !== null && isDelayerOf(argv, clusterId)) pids.push(Number(name));
  }
  return pids;
}
