import type { VirtualClock } from '../../clock/virtual.js';
import type { Rng } from '../../core/rng.js';
import type { QueryKind } from '../../run-format/config.js';
import type { Direction, FaultFields, NetworkAction } from '../../run-format/fault-actions.js';
import { builtinSql } from '../templates.js';

/**
 * The network faults of one simulated replica's client port (the plan's partition, reset, loss,
 * delay, bandwidth; docs/simulator.md), as what they do to the messages of a connection:
 *
 * - a message is a TCP segment (every request and response here fits one on loopback, MSS 65483);
 *   a round trip is a request and its response: a query is one (the extended protocol's messages
 *   go in one flight), a connect four (TCP's handshake, the startup message, SCRAM's two steps);
 * - partition: a message its direction drops is held. After the heal it arrives at its sender's
 *   next retransmission (first sent at s, resent at s + rto·(2^k − 1), RTO doubling to 120 s), so
 *   a hung exchange ends at the client's timeout or at heal + that retransmission, whichever is
 *   first. A one-way partition still hangs the exchange: `in` holds requests (and SYNs), `out`
 *   responses (and SYN-ACKs; the query ran on the server);
 * - reset: the server refuses connects, and its connections end at once (the real drivers' `ss
 *   -K` does not wait for an idle one's next packet): SimServer.netFault;
 * - loss: each message is lost with the given probability and resent after Linux's RTO: 1 s for
 *   a SYN or SYN-ACK (TCP_TIMEOUT_INIT), for data the smoothed RTT + 200 ms (TCP_RTO_MIN as the
 *   variance's floor: 200 ms on loopback, more under a delay), doubling per loss of the segment; one lost past the retries is held like a
 *   partitioned one (100 % holds every message until the heal). ACKs are not modelled: a lost one
 *   is covered by the next segment;
 * - delay: every message held ms (uniform ± jitter, drawn per message), both ways, as the kernel
 *   drivers' delayer holds every packet to and from the port: a round trip takes 2·ms more;
 * - bandwidth: the replica's responses go out one after another at `rate` bits/s (a FIFO link:
 *   each response's bytes·8/rate starts when the previous one is out);
 * - a replication-only partition changes nothing a client sees (the model has no WAL): its
 *   staleness since the cut is what the driver's status shows.
 *
 * Faults stack; a heal ends one kind or every one. Random draws come from the server's own stream
 * and only while loss or jitter is in force, so a run without network faults is what it was.
 */

/** Initial RTO of a SYN or SYN-ACK (Linux TCP_TIMEOUT_INIT), ms. */
export const SYN_RTO_MS = 1000;
/** RTO of data on an established loopback connection (Linux TCP_RTO_MIN), ms. */
export const DATA_RTO_MS = 200;
/** Linux TCP_RTO_MAX: the backoff stops doubling there. */
const RTO_MAX_MS = 120_000;
/** Retransmissions before a connection gives up: tcp_syn_retries 6, tcp_retries2 15. */
const SYN_RETRIES = 6;
const DATA_RETRIES = 15;
/** Round trips of a connect: TCP's handshake, startup -> SASL, SASL initial -> continue, final. */
const CONNECT_ROUND_TRIPS = 4;
/** TCP/IP headers with timestamps and the link header htb counts on loopback, bytes a segment. */
const HEADER_BYTES = 66;
/**
 * What the server sends during a connect: SASL's three messages, AuthenticationOk, the
 * ParameterStatus messages, BackendKeyData and ReadyForQuery (a pg 15 connect, measured by size).
 */
const CONNECT_RESPONSE_BYTES = 560;

/** A message's way: toward the replica's port or from it. */
export type Way = 'request' | 'response';

/** A message a fault holds until a heal lets its retransmission through. */
interface Held {
  sentAt: number;
  rtoMs: number;
  way: Way;
  resend: () => void;
}

/** A message's extra time in flight, ms; undefined: it does not arrive while the faults last. */
export type Transit = number | undefined;

export class SimNet {
  private partition: Direction | undefined;
  private resetting = false;
  /** Probability that a message is lost. */
  private loss = 0;
  private delay: { ms: number; jitter: number } | undefined;
  /** Bits per second of the replica's link (undefined: loopback's, no limit). */
  private rate: number | undefined;
  /** When the link has sent every response queued so far. */
  private linkFreeAt = 0;
  /** Since when the replica's WAL stream is cut (undefined: it is not). */
  private replicationCutAt: number | undefined;
  private readonly held = new Set<Held>();
  /** A fault in force that changes what a client sees: the server's paths ask this first. */
  active = false;

  constructor(
    private readonly clock: VirtualClock,
    private readonly rng: Rng,
  ) {}

  /** New connects are refused and connections reset (a reset in force). */
  get refusing(): boolean {
    return this.resetting;
  }

  /** Seconds since the WAL stream was cut, or undefined. */
  stalenessS(): number | undefined {
    return this.replicationCutAt === undefined
      ? undefined
      : (this.clock.now() - this.replicationCutAt) / 1000;
  }

  /** The faults in force, by kind (for tests and status). */
  inForce(): NetworkAction[] {
    const out: NetworkAction[] = [];
    if (this.partition !== undefined) out.push('partition');
    if (this.replicationCutAt !== undefined) out.push('partition-replication');
    if (this.resetting) out.push('reset');
    if (this.loss > 0) out.push('loss');
    if (this.delay !== undefined) out.push('delay');
    if (this.rate !== undefined) out.push('bandwidth');
    return out;
  }

  apply(action: NetworkAction, a: FaultFields): void {
    if (action === 'partition') this.partition = a.direction ?? 'both';
    else if (action === 'partition-replication') this.replicationCutAt ??= this.clock.now();
    else if (action === 'reset') this.resetting = true;
    else if (action === 'loss') this.loss = Math.min(1, Math.max(0, (a.percent ?? 0) / 100));
    else if (action === 'delay') this.delay = { ms: a.ms ?? 0, jitter: a.jitter ?? 0 };
    else this.rate = a.rate;
    this.changed();
  }

  /** Ends one kind (`partition` ends both links' partitions) or, without `what`, every one. */
  heal(what?: NetworkAction): void {
    const all = what === undefined;
    if (all || what === 'partition') this.partition = undefined;
    if (all || what === 'partition' || what === 'partition-replication') this.replicationCutAt = undefined;
    if (all || what === 'reset') this.resetting = false;
    if (all || what === 'loss') this.loss = 0;
    if (all || what === 'delay') this.delay = undefined;
    if (all || what === 'bandwidth') this.rate = undefined;
    this.changed();
    // What the faults held goes on at its sender's next retransmission.
    const now = this.clock.now();
    for (const h of [...this.held]) {
      if (this.blocks(h.way)) continue;
      this.held.delete(h);
      this.clock.after(nextRetransmission(h.sentAt, h.rtoMs, now) - now, h.resend);
    }
  }

  private changed(): void {
    this.active =
      this.partition !== undefined ||
      this.resetting ||
      this.loss > 0 ||
      this.delay !== undefined ||
      this.rate !== undefined ||
      // Responses still queued on a link whose limit was healed.
      this.linkFreeAt > this.clock.now();
  }

  /** Whether a message that way is dropped every time (a partition of its direction, 100 % loss). */
  blocks(way: Way): boolean {
    const d = this.partition;
    if (d === 'both' || (d === 'in' && way === 'request') || (d === 'out' && way === 'response')) return true;
    return this.loss >= 1;
  }

  /** Keeps a message first sent at `sentAt` until a heal lets it through; then `resend()`. */
  hold(sentAt: number, rtoMs: number, way: Way, resend: () => void): void {
    this.held.add({ sentAt, rtoMs, way, resend });
  }

  /** Messages held now (tests). */
  get heldCount(): number {
    return this.held.size;
  }

  /** A connect's handshake: its four round trips' extra time (SYN and SYN-ACK at the initial RTO). */
  connectTransit(): Transit {
    if (this.partition !== undefined) return undefined;
    let ms = this.linkMs(CONNECT_RESPONSE_BYTES);
    for (let i = 0; i < CONNECT_ROUND_TRIPS; i++) {
      const rto = i === 0 ? SYN_RTO_MS : this.dataRtoMs();
      const retries = i === 0 ? SYN_RETRIES : DATA_RETRIES;
      const there = this.lossMs(rto, retries);
      const back = this.lossMs(rto, retries);
      if (there === undefined || back === undefined) return undefined;
      ms += there + back + this.delayMs() + this.delayMs();
    }
    return ms;
  }

  /** A query's request on its way to the server: its delay and its own loss. */
  requestTransit(): Transit {
    if (this.blocks('request')) return undefined;
    const lost = this.lossMs(this.dataRtoMs(), DATA_RETRIES);
    return lost === undefined ? undefined : lost + this.delayMs();
  }

  /** A response of `bytes` on its way back: the link's queue, its delay and its own loss. */
  responseTransit(bytes: number): Transit {
    if (this.blocks('response')) return undefined;
    const lost = this.lossMs(this.dataRtoMs(), DATA_RETRIES);
    return lost === undefined ? undefined : lost + this.linkMs(bytes) + this.delayMs();
  }

  /**
   * How long a graceful close waits for the server's FIN, within the client's bound: all of it
   * under a partition (it never comes), the Terminate's and the FIN's delays under a delay.
   */
  closeWaitMs(boundMs: number): number {
    if (this.partition !== undefined) return boundMs;
    return this.delay === undefined ? 0 : Math.min(boundMs, 2 * this.delay.ms);
  }

  /** The retransmission waits of one segment: a sum of backed-off RTOs, undefined past the retries. */
  private lossMs(rtoMs: number, retries: number): Transit {
    if (this.loss <= 0) return 0;
    if (this.loss >= 1) return undefined;
    let waited = 0;
    let rto = rtoMs;
    for (let k = 0; k <= retries; k++) {
      if (this.rng.next() >= this.loss) return waited;
      waited += rto;
      rto = Math.min(2 * rto, RTO_MAX_MS);
    }
    return undefined;
  }

  /** Linux's RTO for data: srtt + rttvar, rttvar at least TCP_RTO_MIN; srtt a delay's 2·ms. */
  private dataRtoMs(): number {
    return DATA_RTO_MS + (this.delay === undefined ? 0 : 2 * this.delay.ms);
  }

  /** One message's added delay: uniform in ms ± jitter, never negative. */
  private delayMs(): number {
    const d = this.delay;
    if (d === undefined) return 0;
    if (d.jitter <= 0) return d.ms;
    return Math.max(0, d.ms + (2 * this.rng.next() - 1) * d.jitter);
  }

  /** Queues `bytes` on the replica's link: the wait until they are all out, ms. */
  private linkMs(bytes: number): number {
    const now = this.clock.now();
    if (this.rate === undefined) {
      // Healed with responses still queued: they go out first, then loopback's speed.
      if (this.linkFreeAt > now) return this.linkFreeAt - now;
      this.changed();
      return 0;
    }
    const segments = Math.max(1, Math.ceil(bytes / 65_483));
    const start = Math.max(now, this.linkFreeAt);
    this.linkFreeAt = start + ((bytes + segments * HEADER_BYTES) * 8 * 1000) / this.rate;
    return this.linkFreeAt - now;
  }
}

/** The first retransmission, at or after `now`, of a segment first sent at `sentAt`. */
export function nextRetransmission(sentAt: number, rtoMs: number, now: number): number {
  let t = sentAt;
  let rto = rtoMs;
  do {
    t += rto;
    rto = Math.min(2 * rto, RTO_MAX_MS);
  } while (t < now);
  return t;
}

/**
 * The bytes of a statement's response: the simulator runs no SQL, so for plb's three templates
 * they are counted from what PostgreSQL sends for their rows over plb_items (ParseComplete,
 * BindComplete, RowDescription, the DataRows as text, CommandComplete, ReadyForQuery): point one
 * row of four columns (id, grp, val, a 32-character md5 payload), range one row of three
 * aggregates, scan one row per group (grp is id % 100: 100 rows of three columns). Anything else
 * (a workload file's template, the health check) is taken as one row of about 100 bytes.
 */
const KIND_BYTES: Readonly<Record<QueryKind, number>> = { point: 210, range: 160, scan: 4300 };
const OTHER_BYTES = 100;
let bytesByText: ReadonlyMap<string, number> | undefined;

export function responseBytes(text: string): number {
  bytesByText ??= new Map(
    Object.entries(builtinSql()).map(([k, sql]) => [sql, KIND_BYTES[k as QueryKind]] as const),
  );
  return bytesByText.get(text) ?? OTHER_BYTES;
}
