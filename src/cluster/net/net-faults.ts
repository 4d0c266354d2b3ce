/**
 * Network faults on loopback: iptables rules on `lo` only, scoped to one replica's port, in a
 * chain of plb's own named after the cluster's id (PLB-<id8>) that INPUT and OUTPUT jump to with
 * the comment `plb:<clusterId>`. Removing that chain and its jumps removes everything plb added,
 * and nothing else: the chain goes once no fault is left, on `cluster down`, and on `up`.
 */
import { execFile, execFileSync } from 'node:child_process';
import { PlbError } from '../../core/errors.js';
import type { Direction, NetworkAction } from '../../run-format/fault-actions.js';

const IPTABLES_TIMEOUT_MS = 10_000;
const INSTALL_HINT =
  'network faults need root and iptables: `apt-get install iptables`, then run plb as root';

/**
 * Before anything starts (bench resolution): root, and an iptables that answers. A rule that the
 * kernel refuses is still only known when it is added (the first fault), where it is a clear error.
 */
export function checkNetFaultsPossible(_actions: ReadonlySet<NetworkAction>): void {
  if (process.getuid?.() !== 0)
    throw new PlbError('BAD_INPUT', 'network faults need root (iptables rules on lo)', {
      hint: INSTALL_HINT,
    });
  try {
    execFileSync('iptables', ['--version'], { stdio: 'ignore', timeout: IPTABLES_TIMEOUT_MS });
  } catch {
    throw new PlbError('BAD_INPUT', 'network faults: iptables not found', { hint: INSTALL_HINT });
  }
}

/** The fields a network fault takes (the plan event's). */
export interface NetFaultArgs {
  direction?: Direction;
  percent?: number;
  ms?: number;
  jitter?: number;
  rate?: number;
}

/**
 * What a replica's network faults are scoped to: its client port; for its WAL stream, the
 * primary's port and the match that tells the replica's own packets apart.
 */
export interface NetTarget {
  port: number;
  primaryPort: number;
  /** iptables match arguments selecting the replica's processes' packets (its cgroup), if known. */
  ownPackets?: string[];
}

function run(cmd: string, args: readonly string[]): Promise<{ ok: boolean; out: string }> {
  return new Promise((resolve) => {
    execFile(cmd, [...args], { timeout: IPTABLES_TIMEOUT_MS }, (err, stdout, stderr) => {
      resolve({ ok: err === null, out: `${stdout}${stderr}`.trim() || (err?.message ?? '') });
    });
  });
}

/** The chain of a cluster: PLB- and the id's first 8 characters (a chain name is at most 28). */
export function chainName(clusterId: string): string {
  return `PLB-${clusterId.slice(0, 8)}`;
}

/** The jump from a built-in chain into the cluster's chain, tagged with its id. */
function jump(clusterId: string): string[] {
  return ['-m', 'comment', '--comment', `plb:${clusterId}`, '-j', chainName(clusterId)];
}

/** The rules of one fault on a port: toward it (`-i lo --dport`) and from it (`-o lo --sport`). */
export function faultRules(action: NetworkAction, port: number, a: NetFaultArgs): string[][] {
  if (action === 'delay' || action === 'bandwidth' || action === 'partition-replication')
    throw new PlbError('BAD_INPUT', `${action}: not applied by this driver yet`);
  const inbound = ['-i', 'lo', '-d', '127.0.0.1', '-p', 'tcp', '--dport', String(port)];
  const outbound = ['-o', 'lo', '-s', '127.0.0.1', '-p', 'tcp', '--sport', String(port)];
  if (action === 'partition') {
    const dir = a.direction ?? 'both';
    return [
      ...(dir !== 'out' ? [[...inbound, '-j', 'DROP']] : []),
      ...(dir !== 'in' ? [[...outbound, '-j', 'DROP']] : []),
    ];
  }
  if (action === 'reset') {
    // Not on a RST: the reset REJECT sends leaves through OUTPUT too, and must reach the client.
    const rst = ['!', '--tcp-flags', 'RST', 'RST', '-j', 'REJECT', '--reject-with', 'tcp-reset'];
    return [
      [...inbound, ...rst],
      [...outbound, ...rst],
    ];
  }
  // Dropped by iptables, the sender retransmits (a qdisc drop on lo is reported back, not lost).
  const p = ((a.percent ?? 0) / 100).toFixed(4);
  const drop = ['-m', 'statistic', '--mode', 'random', '--probability', p, '-j', 'DROP'];
  return [
    [...inbound, ...drop],
    [...outbound, ...drop],
  ];
}

/** The faults in force on one cluster, by replica and kind, with the rules each added. */
export class NetFaults {
  private readonly inForce = new Map<string, Map<NetworkAction, string[][]>>();
  private chainMade = false;

  /** `clusterId`: read when first needed (the record is written by `up`); `changed`: after each change. */
  constructor(
    private readonly clusterId: () => string,
    private readonly changed: (inForce: string[]) => void,
  ) {}

  /** The faults in force, `r1: partition, loss` (for status). */
  list(): string[] {
    return [...this.inForce]
      .filter(([, m]) => m.size > 0)
      .map(([id, m]) => `${id}: ${[...m.keys()].join(', ')}`);
  }

  async apply(id: string, target: NetTarget, action: NetworkAction, a: NetFaultArgs): Promise<void> {
    const { port } = target;
    await this.ensureChain();
    const chain = chainName(this.clusterId());
    const rules = faultRules(action, port, a);
    const mine = this.inForce.get(id) ?? new Map<NetworkAction, string[][]>();
    this.inForce.set(id, mine);
    const added: string[][] = [];
    mine.set(action, added);
    for (const r of rules) {
      const res = await run('iptables', ['-w', '-A', chain, ...r]);
      if (!res.ok) {
        await this.heal(id, action);
        throw new PlbError('BAD_INPUT', `${action} ${id}: iptables refused a rule: ${res.out}`, {
          hint: INSTALL_HINT,
        });
      }
      added.push(r);
    }
    // Idle connections would see the rule only when they next send: reset ends them now.
    if (action === 'reset') {
      await run('ss', ['-K', 'src', '127.0.0.1', 'sport', '=', String(port)]);
      await run('ss', ['-K', 'dst', '127.0.0.1', 'dport', '=', String(port)]);
    }
    this.changed(this.list());
  }

  /** Ends one kind of fault of a replica, or every one; the chain goes with the last fault. */
  async heal(id: string, what?: NetworkAction): Promise<void> {
    const mine = this.inForce.get(id);
    const chain = chainName(this.clusterId());
    for (const action of what === undefined ? [...(mine?.keys() ?? [])] : [what]) {
      for (const r of mine?.get(action) ?? []) await run('iptables', ['-w', '-D', chain, ...r]);
      mine?.delete(action);
    }
    if ([...this.inForce.values()].every((m) => m.size === 0)) await this.removeAll();
    this.changed(this.list());
  }

  /** Pre-flight and the chain with its two jumps, once. */
  private async ensureChain(): Promise<void> {
    if (this.chainMade) return;
    if (process.getuid?.() !== 0)
      throw new PlbError('BAD_INPUT', 'network faults need root (iptables rules on lo)', {
        hint: INSTALL_HINT,
      });
    const v = await run('iptables', ['--version']);
    if (!v.ok) throw new PlbError('BAD_INPUT', `iptables not found: ${v.out}`, { hint: INSTALL_HINT });
    const id = this.clusterId();
    await removeNetFaults(id); // a crashed run's leftovers
    const steps = [
      ['-w', '-N', chainName(id)],
      ['-w', '-I', 'INPUT', ...jump(id)],
      ['-w', '-I', 'OUTPUT', ...jump(id)],
    ];
    for (const s of steps) {
      const res = await run('iptables', s);
      if (!res.ok) {
        await removeNetFaults(id);
        throw new PlbError('BAD_INPUT', `iptables ${s.slice(1).join(' ')} failed: ${res.out}`, {
          hint: INSTALL_HINT,
        });
      }
    }
    this.chainMade = true;
  }

  private async removeAll(): Promise<void> {
    await removeNetFaults(this.clusterId());
    this.inForce.clear();
    this.chainMade = false;
  }
}

/**
 * Removes the cluster's chain and the jumps to it, whatever a run left (a SIGKILLed one included);
 * nothing else. A machine without iptables has nothing of plb's to remove.
 */
export async function removeNetFaults(clusterId: string): Promise<void> {
  const chain = chainName(clusterId);
  const listed = await run('iptables', ['-w', '-S', chain]);
  const jumps = await run('iptables-save', []);
  if (!listed.ok && !jumps.out.includes(`plb:${clusterId}`)) return;
  for (const builtin of ['INPUT', 'OUTPUT'])
    for (let i = 0; i < 100; i++) {
      const r = await run('iptables', ['-w', '-D', builtin, ...jump(clusterId)]);
      if (!r.ok) break;
    }
  if (listed.ok) {
    await run('iptables', ['-w', '-F', chain]);
    await run('iptables', ['-w', '-X', chain]);
  }
}
