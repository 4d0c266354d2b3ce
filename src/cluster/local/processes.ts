// Signals to a local server's processes: postmaster and every descendant, and waiting for them to go.
import { setTimeout as sleep } from 'node:timers/promises';
import { PlbError } from '../../core/errors.js';
import { processesUnder, processTree, readStat, signalTree } from './procfs.js';

/**
 * Signals the postmaster and every descendant. Not the process group: each postgres child calls
 * setsid() itself, so a group signal would only reach the postmaster.
 */
export function signalServer(pid: number, signal: NodeJS.Signals): void {
  // Postmaster first: once stopped it cannot fork a child the tree snapshot would miss.
  try {
    process.kill(pid, signal);
  } catch {
    // gone
  }
  signalTree(pid, signal);
}

/** Waits until the postmaster and every child are gone (a restart needs the shared memory free). */
async function waitGone(pid: number, pids: number[], timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const alive = () => [pid, ...pids].some((p) => readStat(p) !== null && readStat(p)?.state !== 'Z');
  while (alive()) {
    if (Date.now() > deadline) throw new PlbError('TIMEOUT', `processes of server pid ${pid} did not exit`);
    await sleep(50);
  }
}

/**
 * SIGKILL of the postmaster and its children; resolves when all are gone. The postmaster is
 * stopped first and the tree read once it is: a backend it forks between reading the tree and
 * the kill would outlive it, holding the shared memory a restart needs.
 */
export async function killServer(pid: number): Promise<void> {
  await freeze(pid);
  const tree = processTree(pid).map((s) => s.pid);
  for (const p of [pid, ...tree]) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  await waitGone(pid, tree);
}

/**
 * SIGSTOP of the postmaster and every descendant, resolved once it took (like docker pause: a
 * status read right after sees it paused). The tree is read once the postmaster is stopped, so a
 * backend it was forking is paused too.
 */
export async function pauseServer(pid: number): Promise<void> {
  await freeze(pid);
  signalTree(pid, 'SIGSTOP');
}

/** SIGSTOP, then wait until it is stopped (a fork under way has then finished), gone, or 1 s. */
async function freeze(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGSTOP');
  } catch {
    return; // gone
  }
  const deadline = Date.now() + 1000;
  for (;;) {
    const state = readStat(pid)?.state;
    if (state === undefined || state === 'T' || state === 't' || state === 'Z') return;
    if (Date.now() > deadline) return;
    await sleep(2);
  }
}

/**
 * A plb killed half-way (SIGKILL, power loss) leaves children no pid file names: an initdb, a
 * pg_basebackup, a postmaster still starting. They work in the cluster's folder: end them.
 * One scan is not enough: a stray forking between the scan and its kill (initdb starting its
 * `postgres --check`) leaves a child the scan missed, so scan again until none is left.
 */
export async function killStrays(root: string, rounds = 10): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    const strays = processesUnder(root);
    if (strays.length === 0) return;
    for (const p of strays) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    await waitGone(strays[0] as number, strays.slice(1));
  }
  const left = processesUnder(root);
  if (left.length > 0)
    throw new PlbError(
      'TIMEOUT',
      `processes under ${root} still running after ${rounds} rounds: ${left.join(' ')}`,
    );
}
