// What a network fault is given: the plan event's fields and what the replica's rules are scoped to.
import type { Direction } from '../../run-format/fault-actions.js';

/** The fields a network fault takes (the plan event's). */
export interface NetFaultArgs {
  direction?: Direction;
  percent?: number;
  ms?: number;
  jitter?: number;
  /** Bits per second. */
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
  /** Why there is no `ownPackets` (the replication link cannot be cut alone). */
  whyNoOwnPackets?: string;
}

/** What plb added to the kernel besides its chain, as the cluster's record keeps it. */
export interface NetKernelRecord {
  /** The handle of lo's root qdisc plb added (htb), e.g. `5a3c`. */
  qdisc?: string;
  /** The pids of the delayers plb started. */
  delayers: number[];
}
