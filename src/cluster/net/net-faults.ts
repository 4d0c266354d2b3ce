/**
 * Network faults on loopback, in the kernel: iptables rules in a chain of the cluster's
 * (iptables.ts) for partitions, resets, loss and the cut of a replica's WAL stream; NFQUEUE and a
 * delayer plb starts (delayer.ts) for delay; htb as lo's root qdisc (tc.ts) for bandwidth. What
 * was added is recorded in the cluster's record (the chain by the id it is named after, the qdisc's
 * handle, the delayers' pids), and removed on every ending: a heal, a run's restore, and the next
 * `cluster down` or `up` after a run that could not (removeNetFaults).
 */
import { PlbError } from '../../core/errors.js';
import type { NetworkAction } from '../../run-format/fault-actions.js';
import { delayersOf, startDelayer, stopDelayer } from './delayer.js';
import { run } from './exec.js';
import {
  addRules,
  chainName,
  delayQueue,
  deleteRules,
  faultRules,
  makeChain,
  removeChain,
} from './iptables.js';
import { bandwidthCommands, bandwidthRemoval, ensureRoot, qdiscHandle, removeRoot, tc, tcAll } from './tc.js';
import type { NetFaultArgs, NetKernelRecord, NetTarget } from './types.js';

/** One fault in force: the rules it added, its delayer, the port its bandwidth classes limit. */
interface Applied {
  rules: string[][];
  delayer?: number;
  limitedPort?: number;
}

/** What the cluster's record keeps of its network faults (`extra.netFaults`, `extra.netKernel`). */
export interface NetRecord {
  /** `r1: partition, loss`, for `cluster status`. */
  netFaults: string[];
  netKernel: NetKernelRecord;
}

/** The faults in force on one cluster, by replica and kind, with what each added. */
export class NetFaults {
  private readonly inForce = new Map<string, Map<NetworkAction, Applied>>();
  private chainMade = false;
  /** The handle of lo's root qdisc this cluster added, while it is there. */
  private qdisc: string | undefined;

  /**
   * `clusterId`: read when first needed (the record is written by `up`); `changed`: after each
   * change; `recorded`: the record's `extra` as it is (a crashed run's, before the first fault).
   */
  constructor(
    private readonly clusterId: () => string,
    private readonly changed: (record: NetRecord) => void,
    private readonly recorded: () => Readonly<Record<string, unknown>> | undefined = () => undefined,
  ) {}

  /** The faults in force, `r1: partition, loss` (for status). */
  list(): string[] {
    return [...this.inForce]
      .filter(([, m]) => m.size > 0)
      .map(([id, m]) => `${id}: ${[...m.keys()].join(', ')}`);
  }

  private applied(): Applied[] {
    return [...this.inForce.values()].flatMap((m) => [...m.values()]);
  }

  private record(): void {
    const delayers = this.applied().flatMap((a) => (a.delayer !== undefined ? [a.delayer] : []));
    this.changed({
      netFaults: this.list(),
      netKernel: { ...(this.qdisc !== undefined ? { qdisc: this.qdisc } : {}), delayers },
    });
  }

  async apply(id: string, target: NetTarget, action: NetworkAction, a: NetFaultArgs): Promise<void> {
    try {
      await this.add(id, target, action, a);
    } catch (err) {
      if (!(err instanceof PlbError)) throw err;
      throw new PlbError(err.code, `${action} ${id}: ${err.message}`, {
        ...(err.hint !== undefined ? { hint: err.hint } : {}),
        cause: err,
      });
    }
  }

  private async add(id: string, target: NetTarget, action: NetworkAction, a: NetFaultArgs): Promise<void> {
    const rules = faultRules(action, target, a); // a fault that cannot be applied fails here, first
    await this.ensureChain();
    const clusterId = this.clusterId();
    const mine = this.inForce.get(id) ?? new Map<NetworkAction, Applied>();
    this.inForce.set(id, mine);
    const applied: Applied = { rules: [] };
    mine.set(action, applied);
    try {
      if (action === 'delay') {
        // The delayer first: its queue is bound before a packet is sent to it.
        const o = {
          queue: delayQueue(target.port),
          ms: a.ms ?? 0,
          clusterId,
          ...(a.jitter ? { jitter: a.jitter } : {}),
        };
        await startDelayer(o, (pid) => {
          applied.delayer = pid;
          this.record();
        });
      }
      if (action === 'bandwidth') await this.limit(applied, target.port, a.rate ?? 0);
      applied.rules = await addRules(chainName(clusterId), rules, action === 'delay');
    } catch (err) {
      await this.heal(id, action);
      throw err;
    }
    // Idle connections would see the rule only when they next send: reset ends them now.
    if (action === 'reset') {
      await run('ss', ['-K', 'src', '127.0.0.1', 'sport', '=', String(target.port)]);
      await run('ss', ['-K', 'dst', '127.0.0.1', 'dport', '=', String(target.port)]);
    }
    this.record();
  }

  /** htb on lo (recorded before it is added), then the port's classes. */
  private async limit(applied: Applied, port: number, rate: number): Promise<void> {
    const handle = qdiscHandle(this.clusterId());
    if (this.qdisc === undefined) {
      this.qdisc = handle;
      this.record();
      try {
        await ensureRoot(handle);
      } catch (err) {
        this.qdisc = undefined;
        throw err;
      }
    }
    applied.limitedPort = port;
    await tc(...bandwidthCommands(handle, port, rate));
  }

  /** Ends one kind of fault of a replica, or every one; the chain goes with the last fault. */
  async heal(id: string, what?: NetworkAction): Promise<void> {
    const mine = this.inForce.get(id);
    const clusterId = this.clusterId();
    for (const action of what === undefined ? [...(mine?.keys() ?? [])] : [what]) {
      const ap = mine?.get(action);
      if (ap === undefined) continue;
      // Rules first: a delay's packets pass again before its delayer lets go of the held ones.
      await deleteRules(chainName(clusterId), ap.rules);
      if (ap.delayer !== undefined) await stopDelayer(ap.delayer, clusterId);
      if (ap.limitedPort !== undefined && this.qdisc !== undefined)
        await tcAll(bandwidthRemoval(this.qdisc, ap.limitedPort));
      mine?.delete(action);
    }
    if (this.qdisc !== undefined && !this.applied().some((ap) => ap.limitedPort !== undefined)) {
      await removeRoot(this.qdisc);
      this.qdisc = undefined;
    }
    if (this.applied().length === 0) await this.removeAll();
    this.record();
  }

  /** Pre-flight and the chain with its two jumps, once. */
  private async ensureChain(): Promise<void> {
    if (this.chainMade) return;
    if (process.getuid?.() !== 0)
      throw new PlbError('BAD_INPUT', 'network faults need root (iptables rules on lo)', {
        hint: 'run plb as root',
      });
    const id = this.clusterId();
    await removeNetFaults(id, this.recorded()); // a crashed run's leftovers
    await makeChain(id);
    this.chainMade = true;
  }

  private async removeAll(): Promise<void> {
    await removeNetFaults(this.clusterId());
    this.inForce.clear();
    this.qdisc = undefined;
    this.chainMade = false;
  }
}

/** The kernel part of a cluster record's `extra` (what removeNetFaults is given), if it has one. */
function kernelRecord(extra: Readonly<Record<string, unknown>> | undefined): NetKernelRecord {
  const k = extra?.['netKernel'] as { delayers?: unknown; qdisc?: unknown } | undefined;
  const pids = Array.isArray(k?.delayers) ? k.delayers : [];
  return {
    ...(typeof k?.qdisc === 'string' ? { qdisc: k.qdisc } : {}),
    delayers: pids.filter((p): p is number => Number.isInteger(p) && (p as number) > 1),
  };
}

/**
 * Removes everything of the cluster's, whatever a run left (a SIGKILLed one included), and nothing
 * else: its chain and the jumps to it, its delayers (the record's pids and any found by their tag,
 * each checked to be this cluster's before it is signalled), and lo's root qdisc when the record
 * says the cluster added it and it still carries the cluster's handle (two ids may share a
 * handle: the record tells them apart). `extra`: the cluster record's (what the run recorded).
 */
export async function removeNetFaults(
  clusterId: string,
  extra?: Readonly<Record<string, unknown>>,
): Promise<void> {
  await removeChain(clusterId);
  const recorded = kernelRecord(extra);
  const pids = new Set([...recorded.delayers, ...delayersOf(clusterId)]);
  for (const pid of pids) await stopDelayer(pid, clusterId);
  const handle = qdiscHandle(clusterId);
  if (recorded.qdisc === handle) await removeRoot(handle);
}
