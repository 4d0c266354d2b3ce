import { Fifo } from '../../core/fifo.js';
import type { CpuTask, SimCpu } from './cfs-quota.js';

interface Waiting<T> {
  item: T;
  epoch: number;
}

/**
 * PostgreSQL's postmaster: one process that accepts and forks every connection, one at a time, on
 * the server's CPU among its backends (calibration `connect.postmasterCpuMs` a fork). While
 * connections wait it stays on the CPU and forks one after another within its time slice, as the
 * real one loops over its listen socket; with none left it sleeps, and the next arrival joins the
 * run queue like any woken process. Forking several a turn, not one, is what a real connect storm
 * on a busy replica shows (docs/simulator.md, fidelity).
 */
export class Postmaster<T> implements CpuTask {
  private readonly queue = new Fifo<Waiting<T>>();
  private onCpu = false;

  constructor(
    private readonly cpu: SimCpu,
    private readonly forkMs: number,
    private readonly forked: (item: T, epoch: number) => void,
  ) {}

  /** Connections accepted and not forked yet. */
  get waiting(): number {
    return this.queue.size;
  }

  /** Queues a connection of server life `epoch` for its fork. */
  fork(item: T, epoch: number): void {
    this.queue.push({ item, epoch });
    if (this.onCpu) return;
    this.onCpu = true;
    this.cpu.submitTask(this.forkMs, this);
  }

  more(): number {
    // Asked as the head's fork ends: another one waiting keeps the postmaster on the CPU.
    if (this.queue.size > 1) return this.forkMs;
    this.onCpu = false;
    return 0;
  }

  cpuDone(): void {
    const w = this.queue.shift();
    if (w !== undefined) this.forked(w.item, w.epoch);
  }

  /** The server died: nothing waits any more (its CPU drops the postmaster's job). */
  clear(): void {
    this.queue.clear();
    this.onCpu = false;
  }
}
