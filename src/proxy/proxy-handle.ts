/** What startProxy (proxy-server.ts) is given, and the handle it returns. */
import type { SecureContext } from 'node:tls';
import type { Clock } from '../clock/index.js';
import type { Connector } from '../cluster/connector.js';
import type { HealthChecker } from '../cluster/health.js';
import type { ConnectionSettings } from '../cluster/server-limits.js';
import type { Endpoint } from '../core/endpoint.js';
import type { ServiceClass } from '../core/service-class.js';
import type { BorrowingOptions, Partition, RoleVector, Router, StrategyName } from '../router/types.js';
import type { HealthOptions } from '../run-format/config.js';
import type { PacerCounters, PacerOptions } from './admission/accept-pacer.js';
import type { AdmissionGate } from './admission/admission-gate.js';
import type { AdmissionSettings, ReplicaViewOptions } from './admission/replica-limits.js';
import type { ClientTable } from './admin/client-table.js';
import type { RelayChoice } from './native/native-relay.js';
import type { ProcessUsage } from './process-usage.js';
import type { ClassFrom } from './protocol/startup-packet.js';
import type { ServerTlsMode } from './protocol/tls-server.js';
import type { ProxyStats } from './stats.js';

export interface ProxyOptions {
  /** The read pool: every replica's loopback endpoint. */
  replicas: readonly Endpoint[];
  /** Health checks (and nothing else) go through this. */
  connector: Connector;
  /** Listener address (127.0.0.1 by default). */
  host: string;
  /** Port per class; 0 picks a free one. A class without a port has no listener. */
  ports: Partial<Record<ServiceClass, number>>;
  classFrom: ClassFrom;
  strategy: StrategyName;
  reference: RoleVector;
  partition: Partition;
  slowStartMs: number;
  borrowing: BorrowingOptions | false;
  health: HealthOptions;
  /**
   * Replica connections whose replica acknowledges nothing this long are ended by the kernel (TCP
   * keepalive and TCP_USER_TIMEOUT, server-keepalive.ts), their clients told 08006; 0: neither is
   * set. Default: health.hangMs (--hang-timeout means both).
   */
  serverHangMs?: number;
  /** Seconds between stats lines (0: none). */
  statsEveryS: number;
  log: (line: string) => void;
  connectTimeoutMs?: number;
  /** To the startup packet, and from a replica slot to ReadyForQuery (session-core.ts). */
  startupTimeoutMs?: number;
  /**
   * How long a session before ReadyForQuery holds its slot before it yields to another client
   * host's waiting session (host-share.ts); 0: never. Default DEFAULT_STARTUP_YIELD_MS.
   */
  startupYieldMs?: number;
  connectAttempts?: number;
  clock?: Clock;
  /** Client connections at once, any phase (default: from the descriptor limit, process-usage.ts). */
  maxClientConn?: number;
  /**
   * Per-replica session limit and the queue in front of it (router/admission/admission.ts). Absent: no
   * limit, except for the plb-admit and lc-queue strategies, which bring their own defaults.
   * limit 'auto': each replica's from its max_connections less `reserve` (default-limit.ts), read
   * with `settingsOf`. premiumReserve: the share of a premium replica freemium may not take
   * (default 0.1, as the flag).
   */
  admission?: AdmissionSettings;
  /** A replica's connection settings (for limit 'auto'); absent: PostgreSQL's defaults are assumed. */
  settingsOf?: (replica: string) => Promise<ConnectionSettings>;
  /**
   * The replica view (replica-limits.ts): every replica's sessions of every proxy read every
   * interval, limits enforced on them, and the class marked in each session's application_name.
   */
  view?: ReplicaViewOptions;
  /** Certificate and key for clients' TLS (tls-client.ts); absent: SSLRequest answered 'N'. */
  tls?: SecureContext;
  /** TLS to the replicas (tls-server.ts); default disable. */
  serverTls?: ServerTlsMode;
  /** The CA of --server-tls verify-ca/verify-full (server-verify.ts); the health checks verify too. */
  serverCa?: Buffer;
  /**
   * Startup backpressure for freemium sessions (paced-intake.ts, accept-pacer.ts; default
   * DEFAULT_PACER); false: each is routed as soon as its startup packet is in. Premium never waits.
   */
  freemiumPacing?: PacerOptions | false;
  /**
   * Who serves plain-TCP clients: 'native' (the native front door, native-relay.ts, this many
   * threads; the default where it is built) or 'js' (Node's sockets, node-session.ts). TLS on either
   * leg is always Node's.
   */
  relay?: RelayChoice;
  /**
   * Connect to the replica at a client's SSLRequest, before its startup packet (early-connect.ts;
   * default true). Only on Node's sockets, with --class-from off and plain TCP to the replicas.
   */
  earlyConnect?: boolean;
  /** A cluster file's static weights (absent: 1) and zones (every replica, or none); --zone. */
  weights?: Readonly<Record<string, number>>;
  zones?: Readonly<Record<string, string>>;
  zone?: string;
}

export interface ProxyHandle {
  /** The ports actually bound, per class. */
  readonly ports: Partial<Record<ServiceClass, number>>;
  readonly router: Router;
  readonly stats: ProxyStats;
  readonly health: HealthChecker;
  readonly gate: AdmissionGate;
  /** Per-replica limits in force (undefined: no admission limits). */
  limits(): Record<string, number> | undefined;
  /** The client limit in force (--max-client-conn). */
  readonly maxClientConn: number;
  /** Who serves the clients: "native, N thread(s)" (the native front door) or "js". */
  readonly relay: string;
  /** RSS and descriptors now, and their peaks. */
  usage(): ProcessUsage;
  /** Open client connections (any phase, the held ones of `paced` too). */
  sessionCount(): number;
  /** Freemium startups' pacing: held now, and its counters (undefined: not paced). */
  paced(): (PacerCounters & { heldNow: number }) | undefined;
  statsLine(): string;
  /** Open client sessions (past their first packet), with their age (the admin view's clients). */
  readonly clients: ClientTable;
  /** Closes the listeners, once (a drain, admin/drain.ts; stop() closes them too). */
  closeListeners(): void;
  /**
   * Reload (fleet-reload.ts): a replica joins (router, limits, health checks through `connector`,
   * session targets); it takes sessions once its checks pass, as a replica coming back (slow start).
   * Throws BAD_INPUT (addRefusal's reason) when it cannot join the running proxy.
   */
  addReplica(
    replica: Endpoint,
    how: { weight: number; zone?: string | undefined; connector: Connector },
  ): void;
  /** Why addReplica would refuse this replica (undefined: it would not). */
  addRefusal(replica: Endpoint): string | undefined;
  /** Reload (fleet-reload.ts): no new sessions to a replica, its open ones drain; and back (once healthy). */
  retire(replica: string): void;
  restore(replica: string): void;
  /** Replicas retired by a reload and not restored (the admin view's "draining"). */
  readonly retired: ReadonlySet<string>;
  /**
   * Stops: closes the listeners, lets sessions end by themselves for up to graceMs, then tells the
   * rest (FATAL 57P01 at a message boundary) and closes them; stops the health checks.
   */
  stop(graceMs: number): Promise<void>;
}
