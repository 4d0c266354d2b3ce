// A process's CPU from /proc, and plb proxy's by thread (the relay threads name themselves plb-relay-N).
import { readdirSync, readFileSync } from 'node:fs';
import { parseStat, processTree, readStat, treeTicks } from '../../src/cluster/local/procfs.js';

/** CPU seconds (user + system) a process has used so far, from /proc (ticks of 10 ms). */
export const procCpuS = (pid: number): number => (readStat(pid)?.ticks ?? NaN) / 100;

export type Threads = Record<'main' | 'relay' | 'rest', number>;
/** plb proxy's CPU seconds so far by thread: Node's main thread, the relay threads, the rest (V8's, libuv's). */
export function threadsCpuS(pid: number): Threads {
  const t: Threads = { main: 0, relay: 0, rest: 0 };
  for (const tid of readdirSync(`/proc/${pid}/task`).map(Number)) {
    // The task's own counters (/proc/<tid>/stat would be the whole process's).
    const dir = `/proc/${pid}/task/${tid}`;
    const ticks = parseStat(readFileSync(`${dir}/stat`, 'utf8'))?.ticks ?? 0;
    const comm = readFileSync(`${dir}/comm`, 'utf8');
    t[tid === pid ? 'main' : comm.startsWith('plb-relay') ? 'relay' : 'rest'] += ticks / 100;
  }
  return t;
}

/** CPU seconds of a process and every descendant (live, and reaped ones), from one /proc snapshot. */
export const treeCpuS = (pid: number): number => treeTicks(processTree(pid)) / 100;
