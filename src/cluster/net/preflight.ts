/**
 * Before anything starts (bench resolution): can this machine apply the plan's network faults, and
 * how. Each missing piece is a one-line error with what to install: root (or CAP_NET_ADMIN), the
 * tools (iptables, tc, ss, the delayer), and the kernel's features, tried by adding each action's
 * rules to a scratch chain nothing jumps to (so no packet ever sees them) and removing it.
 * Resolves to one line per action saying the mechanism it will use.
 */
import { existsSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { PlbError } from '../../core/errors.js';
import type { NetworkAction } from '../../run-format/fault-actions.js';
import { cgroup2Root, cgroupMatch } from './cgroup2.js';
import { DELAYER_HINT, delayerPath } from './delayer.js';
import { runSync } from './exec.js';
import { faultRules, IPTABLES_HINT } from './iptables.js';
import { parseRootQdisc, TC_HINT } from './tc.js';
import type { NetTarget } from './types.js';

const CAP_NET_ADMIN = 12;
const IPROUTE_HINT = '`apt-get install iproute2`';

/** What each action needs of the kernel, for the error when a rule of it is refused. */
const KERNEL_FEATURE: Record<NetworkAction, string> = {
  partition: 'iptables DROP',
  reset: 'iptables REJECT (CONFIG_IP_NF_TARGET_REJECT)',
  loss: 'the statistic match (CONFIG_NETFILTER_XT_MATCH_STATISTIC)',
  delay: 'the NFQUEUE target (CONFIG_NETFILTER_XT_TARGET_NFQUEUE, CONFIG_NETFILTER_NETLINK_QUEUE)',
  bandwidth: 'htb and u32 (CONFIG_NET_SCH_HTB, CONFIG_NET_CLS_U32)',
  'partition-replication':
    'the cgroup and connmark matches and the CONNMARK target (CONFIG_NETFILTER_XT_MATCH_CGROUP, CONFIG_NETFILTER_XT_CONNMARK)',
};

function fail(message: string, hint: string): never {
  throw new PlbError('BAD_INPUT', message, { hint });
}

/** This kernel's build options (`CONFIG_X` -> y, m), or null when /proc/config.gz is not there. */
function kernelConfig(): Map<string, string> | null {
  try {
    const text = gunzipSync(readFileSync('/proc/config.gz')).toString('utf8');
    return new Map(
      text
        .split('\n')
        .map((l) => /^(CONFIG_\w+)=(.*)$/.exec(l))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => [m[1] as string, m[2] as string]),
    );
  } catch {
    return null;
  }
}

function hasNetAdmin(): boolean {
  if (process.getuid?.() === 0) return true;
  try {
    const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m !== null && (BigInt(`0x${m[1]}`) & (1n << BigInt(CAP_NET_ADMIN))) !== 0n;
  } catch {
    return false;
  }
}

/** Adds every action's rules to a scratch chain (never jumped to), then removes it. */
function probeRules(actions: readonly NetworkAction[]): void {
  const chain = `PLBP-${process.pid}`;
  const dummy: NetTarget = { port: 9, primaryPort: 9, ownPackets: cgroupMatch('/') };
  const made = runSync('iptables', ['-w', '-N', chain]);
  if (!made.ok) fail(`network faults: iptables cannot make a chain: ${made.out}`, IPTABLES_HINT);
  try {
    for (const action of actions)
      for (const rule of faultRules(action, dummy, { percent: 1 })) {
        const res = runSync('iptables', ['-w', '-A', chain, ...rule]);
        if (!res.ok)
          fail(
            `${action}: this kernel refused a rule, it needs ${KERNEL_FEATURE[action]}: ${res.out}`,
            IPTABLES_HINT,
          );
      }
  } finally {
    runSync('iptables', ['-w', '-F', chain]);
    runSync('iptables', ['-w', '-X', chain]);
  }
}

/**
 * Refuses, one line each, what stops the actions on this machine; else one line per action with
 * its mechanism (the bench may print them). `driver`: whose servers' packets are told apart.
 */
export function checkNetFaultsPossible(
  actions: ReadonlySet<NetworkAction>,
  driver: 'local' | 'docker' = 'local',
): string[] {
  if (actions.size === 0) return [];
  if (!hasNetAdmin()) fail('network faults need root (or CAP_NET_ADMIN): rules on lo', 'run plb as root');
  if (!runSync('iptables', ['--version']).ok) fail('network faults: iptables not found', IPTABLES_HINT);
  const config = kernelConfig();
  const has = (option: string) => config === null || ['y', 'm'].includes(config.get(option) ?? '');
  const lines: string[] = [];
  for (const action of actions) lines.push(`${action}: ${mechanism(action, driver, has)}`);
  probeRules([...actions]);
  return lines;
}

/** Checks what the action needs besides its iptables rules; says how it is applied. */
function mechanism(
  action: NetworkAction,
  driver: 'local' | 'docker',
  has: (option: string) => boolean,
): string {
  switch (action) {
    case 'partition':
      return "iptables DROP on lo, the replica's port (per direction)";
    case 'reset':
      if (!runSync('ss', ['-V']).ok) fail('reset: ss not found (it ends idle connections)', IPROUTE_HINT);
      return "iptables REJECT with tcp-reset on lo, the replica's port, and ss -K for idle connections";
    case 'loss':
      return 'iptables statistic (random) DROP on lo: the sender retransmits';
    case 'delay': {
      const path = delayerPath();
      if (!existsSync(path)) fail(`delay: the delayer is not built (${path})`, DELAYER_HINT);
      const v = runSync(path, ['--version']);
      if (!v.ok) fail(`delay: the delayer does not run: ${v.out}`, DELAYER_HINT);
      const netem = has('CONFIG_NET_SCH_NETEM') ? '' : ' (this kernel has no netem)';
      return `iptables NFQUEUE (--queue-bypass) on lo, both directions of the replica's port, to plb-delayer${netem}`;
    }
    case 'bandwidth': {
      if (!runSync('tc', ['-V']).ok) fail('bandwidth: tc not found', TC_HINT);
      if (!has('CONFIG_NET_SCH_HTB') || !has('CONFIG_NET_CLS_U32'))
        fail(`bandwidth: this kernel has no ${KERNEL_FEATURE.bandwidth}`, 'a kernel with htb and u32');
      const root = parseRootQdisc(runSync('tc', ['qdisc', 'show', 'dev', 'lo']).out);
      // htb may be a crashed run's of this very cluster (removed when it starts); the rest is another's.
      if (root !== null && root.kind !== 'noqueue' && root.kind !== 'htb')
        fail(
          `bandwidth: lo's root qdisc is ${root.kind} ${root.handle}:, another owner's; plb needs htb as lo's root and never replaces another's`,
          'remove it (`tc qdisc del dev lo root`) if nothing needs it, or run without bandwidth faults',
        );
      return "htb as lo's root qdisc, a class of the rate per direction of the replica's port (u32 filters)";
    }
    case 'partition-replication':
      if (cgroup2Root() === null)
        fail(
          "partition (link replication): no cgroup v2 hierarchy (/sys/fs/cgroup/unified or /sys/fs/cgroup) to tell the replica's packets apart",
          'a kernel with cgroup v2 mounted',
        );
      return `iptables on the WAL stream to the primary's port: the replica's packets by its ${driver === 'docker' ? "container's " : ''}cgroup (v2), the primary's by CONNMARK`;
  }
}
