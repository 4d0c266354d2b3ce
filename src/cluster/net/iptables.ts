/**
 * The iptables rules of network faults: on `lo` only, scoped to one replica's port (or, for its WAL
 * stream, to the primary's port and the replica's own packets), in a chain of plb's named after the
 * cluster's id (PLB-<id8>) that INPUT and OUTPUT jump to with the comment `plb:<clusterId>`.
 * Removing that chain and its jumps removes every rule plb added, and nothing else.
 */
import { PlbError } from '../../core/errors.js';
import type { NetworkAction } from '../../run-format/fault-actions.js';
import { run } from './exec.js';
import type { NetFaultArgs, NetTarget } from './types.js';

export const IPTABLES_HINT =
  'network faults need root and iptables: `apt-get install iptables`, then run plb as root';

/** The chain of a cluster: PLB- and the id's first 8 characters (a chain name is at most 28). */
export function chainName(clusterId: string): string {
  return `PLB-${clusterId.slice(0, 8)}`;
}

/** The jump from a built-in chain into the cluster's chain, tagged with its id. */
function jump(clusterId: string): string[] {
  return ['-m', 'comment', '--comment', `plb:${clusterId}`, '-j', chainName(clusterId)];
}

/**
 * The NFQUEUE queue of a replica's delay: its port. A port has one listener at a time, so two
 * clusters that run at once never share a queue.
 */
export function delayQueue(port: number): number {
  return port;
}

/**
 * The connection mark of a replica's cut WAL stream: its port in the mark's upper 16 bits, only
 * those bits set or matched (the lower ones stay another's).
 */
export function replicationMark(port: number): string {
  return `0x${(port & 0xffff).toString(16)}0000/0xffff0000`;
}

/**
 * The rules of one fault. Client port: toward it (`-i lo --dport`, INPUT) and from it (`-o lo
 * --sport`, OUTPUT). A delay queues both directions in INPUT: there a packet is no longer its
 * sender's (loopback orphans it), so holding it slows the link, not the sender's socket.
 * A bandwidth fault has no iptables rule (tc.ts).
 */
export function faultRules(action: NetworkAction, t: NetTarget, a: NetFaultArgs): string[][] {
  const port = String(t.port);
  const inbound = ['-i', 'lo', '-d', '127.0.0.1', '-p', 'tcp', '--dport', port];
  const outbound = ['-o', 'lo', '-s', '127.0.0.1', '-p', 'tcp', '--sport', port];
  const dir = a.direction ?? 'both';
  switch (action) {
    case 'partition':
      return [
        ...(dir !== 'out' ? [[...inbound, '-j', 'DROP']] : []),
        ...(dir !== 'in' ? [[...outbound, '-j', 'DROP']] : []),
      ];
    case 'reset': {
      // Not on a RST: the reset REJECT sends leaves through OUTPUT too, and must reach the client.
      const rst = ['!', '--tcp-flags', 'RST', 'RST', '-j', 'REJECT', '--reject-with', 'tcp-reset'];
      return [
        [...inbound, ...rst],
        [...outbound, ...rst],
      ];
    }
    case 'loss': {
      // Dropped by iptables, the sender retransmits (a qdisc drop on lo is reported back, not lost).
      const p = ((a.percent ?? 0) / 100).toFixed(4);
      const drop = ['-m', 'statistic', '--mode', 'random', '--probability', p, '-j', 'DROP'];
      return [
        [...inbound, ...drop],
        [...outbound, ...drop],
      ];
    }
    case 'delay': {
      // --queue-bypass: with no delayer on the queue, packets pass (a dead delayer is no partition).
      const q = ['-j', 'NFQUEUE', '--queue-num', String(delayQueue(t.port)), '--queue-bypass'];
      return [
        [...inbound, ...q],
        ['-i', 'lo', '-s', '127.0.0.1', '-p', 'tcp', '--sport', port, ...q],
      ];
    }
    case 'bandwidth':
      return [];
    case 'partition-replication':
      return replicationRules(t, a);
  }
}

/**
 * The replica's WAL stream: its own packets to the primary's port (told apart by `ownPackets`, its
 * cgroup) are dropped (`out`, from the replica); toward the replica (`in`) they mark their
 * connection, whose packets from the primary are then dropped. In OUTPUT, where a packet still
 * has its socket (and so its cgroup). The mark rule comes before the drop (a DROP ends the chain).
 */
function replicationRules(t: NetTarget, a: NetFaultArgs): string[][] {
  if (t.ownPackets === undefined)
    throw new PlbError(
      'BAD_INPUT',
      `partition of the replication link: the replica's packets cannot be told apart from the other servers'${t.whyNoOwnPackets ? ` (${t.whyNoOwnPackets})` : ''}`,
    );
  const dir = a.direction ?? 'both';
  const primary = String(t.primaryPort);
  const toPrimary = ['-o', 'lo', '-d', '127.0.0.1', '-p', 'tcp', '--dport', primary, ...t.ownPackets];
  const fromPrimary = ['-o', 'lo', '-s', '127.0.0.1', '-p', 'tcp', '--sport', primary];
  const mark = replicationMark(t.port);
  return [
    ...(dir !== 'out'
      ? [
          [...toPrimary, '-j', 'CONNMARK', '--set-xmark', mark],
          [...fromPrimary, '-m', 'connmark', '--mark', mark, '-j', 'DROP'],
        ]
      : []),
    ...(dir !== 'in' ? [[...toPrimary, '-j', 'DROP']] : []),
  ];
}

/**
 * Adds a fault's rules to the chain. Drops and resets go first, as a block in their order; a delay's
 * queue last: a queued packet leaves the chain, so a drop after it would never see it.
 * Resolves to the rules added (all, or none: a refused rule takes back the ones before it).
 */
export async function addRules(chain: string, rules: string[][], last: boolean): Promise<string[][]> {
  const added: string[][] = [];
  const ordered = last ? rules : [...rules].reverse();
  for (const r of ordered) {
    const res = await run('iptables', ['-w', ...(last ? ['-A', chain] : ['-I', chain, '1']), ...r]);
    if (!res.ok) {
      await deleteRules(chain, added);
      throw new PlbError('BAD_INPUT', `iptables refused a rule (${r.join(' ')}): ${res.out}`, {
        hint: IPTABLES_HINT,
      });
    }
    added.push(r);
  }
  return added;
}

export async function deleteRules(chain: string, rules: readonly string[][]): Promise<void> {
  for (const r of rules) await run('iptables', ['-w', '-D', chain, ...r]);
}

/** The cluster's chain and the two jumps to it; a failure takes back what was made. */
export async function makeChain(clusterId: string): Promise<void> {
  const steps = [
    ['-w', '-N', chainName(clusterId)],
    ['-w', '-I', 'INPUT', ...jump(clusterId)],
    ['-w', '-I', 'OUTPUT', ...jump(clusterId)],
  ];
  for (const s of steps) {
    const res = await run('iptables', s);
    if (!res.ok) {
      await removeChain(clusterId);
      throw new PlbError('BAD_INPUT', `iptables ${s.slice(1).join(' ')} failed: ${res.out}`, {
        hint: IPTABLES_HINT,
      });
    }
  }
}

/**
 * Removes the cluster's chain and the jumps to it, whatever a run left (a SIGKILLed one included);
 * nothing else. A machine without iptables has nothing of plb's to remove.
 */
export async function removeChain(clusterId: string): Promise<void> {
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
