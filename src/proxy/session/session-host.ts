/** What a session (session-core.ts) needs from the proxy around it (proxy-server.ts). */
import type { SecureContext } from 'node:tls';
import type { ServiceClass } from '../../core/service-class.js';
import type { CancelKeys } from '../protocol/cancel-keys.js';
import type { ClassFrom } from '../protocol/startup-packet.js';
import type { ProxyStats } from '../stats.js';
import type { ServerTlsMode } from '../protocol/tls-server.js';
import type { PacedStartup } from '../admission/paced-intake.js';
import type { ServerKeepalive } from './server-keepalive.js';
import type { HostShare } from '../admission/host-share.js';

/**
 * What the proxy keeps of a client's session (its core, session-core.ts), on Node's sockets
 * (node-session.ts) or the native front door's (native-session.ts) alike.
 */
export interface ClientSession {
  readonly phase: string;
  /** The listener's class, or the one its startup packet named (--class-from). */
  readonly cls: ServiceClass;
  readonly replica: string | undefined;
  /** Resolves when both sides are closed and the router released. */
  readonly done: Promise<void>;
  /** Graceful stop ran out of time: tell the client (57P01, at a boundary) and close both sides. */
  shutdown(): void;
  /** The health checker took its replica for dead: tell the client (08006) and drop the backend. */
  replicaDown(cause: string): void;
}

/** Where a session connects. */
export interface SessionTarget {
  readonly replica: string;
  readonly host: string;
  readonly port: number;
}

export interface SessionHost {
  readonly classFrom: ClassFrom;
  /** The client must send its startup packet within this. */
  readonly startupTimeoutMs: number;
  /** TCP connect to a replica must succeed within this. */
  readonly connectTimeoutMs: number;
  /** Replicas tried for one session when connecting fails (each failure is reported). */
  readonly connectAttempts: number;
  /**
   * Keepalive and TCP_USER_TIMEOUT of every replica connection (--hang-timeout,
   * server-keepalive.ts); absent: none.
   */
  readonly serverKeepalive?: ServerKeepalive | undefined;
  readonly cancelKeys: CancelKeys;
  readonly stats: ProxyStats;
  /** With a certificate (--tls-cert/--tls-key): SSLRequest is answered 'S' and TLS ends here. */
  readonly tls?: SecureContext | undefined;
  /** TLS on the replica leg (--server-tls, tls-server.ts). */
  readonly serverTls: ServerTlsMode;
  /** The CA of --server-tls verify-ca/verify-full (--server-ca, server-verify.ts). */
  readonly serverCa?: Buffer | undefined;
  /**
   * A replica for a session of cls: at once when one has room, else a promise of one after a wait
   * for a slot (admission-gate.ts). Throws (or rejects) PlbError NO_REPLICA when none may take it,
   * ADMISSION_FULL or ADMISSION_TIMEOUT when the session could not get a slot. source: the
   * client's host (the waiting hosts of a class take turns).
   */
  acquire(cls: ServiceClass, ticket: object, source?: string): SessionTarget | Promise<SessionTarget>;
  /**
   * The slots held before ReadyForQuery, per client host: another host's waiting session makes
   * them yield (--startup-yield, host-share.ts). Absent: they never yield.
   */
  readonly share?: HostShare | undefined;
  /**
   * A replica for a connection opened before the startup packet (early-connect.ts): only when a
   * slot is free now and few are held so; counted until earlyEnded(). Absent: never early.
   */
  earlyTarget?: ((cls: ServiceClass) => SessionTarget | undefined) | undefined;
  earlyEnded?: (() => void) | undefined;
  /** The session's client left while it waited for a slot: stop waiting (acquire rejects). */
  cancelWait(ticket: object): void;
  /** The slot given back; established: the session had reached ReadyForQuery. */
  release(replica: string, cls: ServiceClass, established: boolean): void;
  /** The session on replica reached ReadyForQuery (the replica view counts it as seen from then). */
  established?: ((replica: string, cls: ServiceClass) => void) | undefined;
  /**
   * The application_name the replica is given (the client's, marked with the class:
   * markApplicationName); absent: the client's startup packet goes on as it came.
   */
  markClass?: boolean | undefined;
  /** What a session is told (57P03) when no server may take it; absent: no replica available. */
  noServer?: ((cls: ServiceClass) => string) | undefined;
  /** What its clients are told the servers are ("replica" when absent; the primary listener's: "server"). */
  serverNoun?: string | undefined;
  /** A passive failure signal for the health checker. */
  reportFailure(replica: string, err: unknown, via: 'connect' | 'session'): void;
  log(line: string): void;
  /** A freemium startup, read: routed now or in a later loop turn (paced-intake.ts); absent: now. */
  pace?: ((s: PacedStartup) => void) | undefined;
}
