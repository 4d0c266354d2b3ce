/**
 * The admin view (GET /admin on --metrics-port): what PgBouncer's SHOW SERVERS, POOLS and CLIENTS
 * tell, as one JSON document. This is its one type; `adminView` reads it from a running proxy at
 * each request (nothing is kept for it). Clients are counted all, listed only up to a bound: a
 * proxy with 10,000 clients answers with 10,000 counted and the oldest `limit` listed.
 */
import type { ServiceClass } from '../../core/service-class.js';
import { SERVICE_CLASSES } from '../../core/service-class.js';
import type { Role } from '../../router/types.js';
import type { ProxyHandle } from '../proxy-server.js';
import type { ClassCounters, ReplicaCounters } from '../stats.js';
import type { GateCounters } from '../admission/admission-gate.js';
import type { PacerCounters } from '../admission/accept-pacer.js';
import type { ProcessUsage } from '../process-usage.js';

/** Raised when the document's shape changes in a way a reader must know. */
const ADMIN_VIEW_VERSION = 1;
/** Clients listed when the request names no limit. */
export const DEFAULT_CLIENTS_LISTED = 100;

type ReplicaState = 'up' | 'down' | 'draining';

/** SHOW SERVERS: one replica. */
interface AdminReplica {
  id: string;
  /** The router's role (the last one while down). */
  role: Role;
  /** Set while the other class borrows this replica. */
  borrowedBy?: ServiceClass;
  state: ReplicaState;
  weight: number;
  /** Open sessions on it, per class (this proxy's). */
  sessions: Record<ServiceClass, number>;
  /** Its admission limit in force (null: no limit). */
  limit: number | null;
  /** Since the start: sessions opened on it, lost mid-session, failed before ReadyForQuery. */
  counted: ReplicaCounters;
}

/** SHOW POOLS: one class. */
interface AdminPool {
  class: ServiceClass;
  /** Sessions of the class on a replica now. */
  sessions: number;
  /** Sessions of the class waiting for a slot now (the admission queue). */
  waiting: number;
  counted: ClassCounters;
  admission: GateCounters;
}

/** SHOW CLIENTS: one client connection. */
interface AdminClient {
  class: ServiceClass;
  /** Its replica (null: not routed yet). */
  replica: string | null;
  /** The session's phase: startup, waiting, connecting, backend-startup, ready, closing. */
  state: string;
  /** Seconds since it came in. */
  ageS: number;
}

interface AdminClients {
  /** Open clients past their first packet (the front door's count, `proxy.clients`, also holds those before it). */
  total: number;
  byClass: Record<ServiceClass, number>;
  byState: Record<string, number>;
  /** Per replica (routed clients only). */
  byReplica: Record<string, number>;
  /** The oldest first, at most the request's limit. */
  listed: AdminClient[];
  /** More are open than listed. */
  truncated: boolean;
}

export interface AdminView {
  version: typeof ADMIN_VIEW_VERSION;
  /** When it was read (ISO 8601). */
  at: string;
  proxy: {
    /** draining: the listeners are closed and open sessions are let end (POST /drain, SIGUSR2). */
    state: 'running' | 'draining';
    uptimeS: number;
    strategy: string;
    /** Who serves the clients: "native, N thread(s)" or "js". */
    relay: string;
    /** Client connections open in any phase, and the limit (--max-client-conn). */
    clients: number;
    maxClientConn: number;
    /** The admission settings (null: no per-replica limit). */
    admission: { queue: number; timeoutMs: number; premiumReserve: number; freemiumReserve: number } | null;
  };
  replicas: AdminReplica[];
  pools: AdminPool[];
  clients: AdminClients;
  /** The proxy's own counters. */
  counters: {
    cancels: number;
    overLimit: number;
    lateClass: number;
    relayed: number;
    earlyConnects: number;
    earlyUnused: number;
    /** Sessions cut before ReadyForQuery: at --startup-timeout, and yielding to another client host (--startup-yield). */
    startupTimeouts: number;
    startupYields: number;
    usage: ProcessUsage;
    /** Freemium startups held by the pacer (absent: not paced). */
    paced?: PacerCounters & { heldNow: number };
  };
}

/** What the view is read from: the running proxy and what only its runner knows. */
export interface AdminSource {
  proxy: Pick<
    ProxyHandle,
    | 'router'
    | 'stats'
    | 'gate'
    | 'limits'
    | 'maxClientConn'
    | 'relay'
    | 'usage'
    | 'sessionCount'
    | 'paced'
    | 'clients'
  >;
  strategy: string;
  startedMs: number;
  now: () => number;
  admission: AdminView['proxy']['admission'];
  draining: () => boolean;
  /** Replicas whose sessions are let end (a reload removed them); absent: none. */
  drainingReplicas?: () => ReadonlySet<string>;
}

export function adminView(src: AdminSource, limit = DEFAULT_CLIENTS_LISTED): AdminView {
  const { proxy } = src;
  const now = src.now();
  const snapshot = proxy.router.snapshot();
  const limits = proxy.limits();
  const leaving = src.drainingReplicas?.();
  const replicas = snapshot.map(
    (r): AdminReplica => ({
      id: r.id,
      role: r.role,
      ...(r.borrowedBy ? { borrowedBy: r.borrowedBy } : {}),
      state: !r.healthy ? 'down' : leaving?.has(r.id) ? 'draining' : 'up',
      weight: r.weight,
      sessions: { ...r.sessions },
      limit: limits?.[r.id] ?? null,
      counted: { ...proxy.stats.replica(r.id) },
    }),
  );
  const pools = SERVICE_CLASSES.map(
    (cls): AdminPool => ({
      class: cls,
      sessions: snapshot.reduce((n, r) => n + r.sessions[cls], 0),
      waiting: proxy.gate.queued(cls),
      counted: { ...proxy.stats.classes[cls] },
      admission: { ...proxy.gate.counters[cls] },
    }),
  );
  const paced = proxy.paced();
  return {
    version: ADMIN_VIEW_VERSION,
    at: new Date().toISOString(),
    proxy: {
      state: src.draining() ? 'draining' : 'running',
      uptimeS: round1((now - src.startedMs) / 1000),
      strategy: src.strategy,
      relay: proxy.relay,
      clients: proxy.sessionCount(),
      maxClientConn: proxy.maxClientConn,
      admission: src.admission,
    },
    replicas,
    pools,
    clients: clientsOf(proxy.clients, now, limit),
    counters: {
      cancels: proxy.stats.cancels,
      overLimit: proxy.stats.overLimit,
      lateClass: proxy.stats.lateClass,
      relayed: proxy.stats.relayed,
      earlyConnects: proxy.stats.earlyConnects,
      earlyUnused: proxy.stats.earlyUnused,
      startupTimeouts: proxy.stats.startupTimeouts,
      startupYields: proxy.stats.startupYields,
      usage: proxy.usage(),
      ...(paced ? { paced } : {}),
    },
  };
}

/** Every client counted; the first `limit` (the oldest) listed. */
function clientsOf(table: ProxyHandle['clients'], now: number, limit: number): AdminClients {
  const byClass: Record<ServiceClass, number> = { premium: 0, freemium: 0 };
  const byState: Record<string, number> = {};
  const byReplica: Record<string, number> = {};
  const listed: AdminClient[] = [];
  for (const s of table) {
    byClass[s.cls] += 1;
    byState[s.phase] = (byState[s.phase] ?? 0) + 1;
    if (s.replica !== undefined) byReplica[s.replica] = (byReplica[s.replica] ?? 0) + 1;
    if (listed.length < limit)
      listed.push({
        class: s.cls,
        replica: s.replica ?? null,
        state: s.phase,
        ageS: round1((now - (table.sinceOf(s) ?? now)) / 1000),
      });
  }
  return { total: table.size, byClass, byState, byReplica, listed, truncated: table.size > listed.length };
}

const round1 = (x: number): number => Math.round(x * 10) / 10;
