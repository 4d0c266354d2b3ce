/**
 * `plb proxy --primary-port`: sessions that must write connect here and go to the primary. Their
 * class is decided as on the replica ports (the port: --primary-port premium,
 * --primary-freemium-port freemium; with --class-from, the startup packet). They are admitted
 * under the primary's own limit (its max_connections, read from it, less the reserve), premium
 * first, and freemium never takes the premium reserve (primary-router.ts). The health checks ask
 * every server whether it is in recovery, and new sessions follow the one that is not
 * (primary-follower.ts, follow.ts); the old primary's sessions end when another takes its place.
 * Served on Node's sockets (the js relay): the native front door serves the replica listeners.
 */
import type { SecureContext } from 'node:tls';
import { realClock, within, type Clock } from '../../clock/index.js';
import type { Connector } from '../../cluster/connector.js';
import type { ConnectionSettings } from '../../cluster/server-limits.js';
import { HealthChecker } from '../../cluster/health.js';
import type { Endpoint } from '../../core/endpoint.js';
import { errorText, PlbError } from '../../core/errors.js';
import type { ServiceClass } from '../../core/service-class.js';
import { AdmittingRouter } from '../../router/admission/admission.js';
import type { Router } from '../../router/types.js';
import type { HealthOptions } from '../../run-format/config.js';
import { AdmissionGate } from '../admission/admission-gate.js';
import { clientLimiter } from '../admission/client-limit.js';
import {
  initialLimit,
  proxyAdmission,
  readLimit,
  ReplicaLimits,
  type AdmissionSettings,
} from '../admission/replica-limits.js';
import { openFrontDoor } from '../front-door.js';
import { defaultMaxClientConn } from '../process-usage.js';
import { CancelKeys } from '../protocol/cancel-keys.js';
import type { ClassFrom } from '../protocol/startup-packet.js';
import type { ServerTlsMode } from '../protocol/tls-server.js';
import { serverKeepalive } from '../session/server-keepalive.js';
import { DEFAULT_STARTUP_TIMEOUT_MS } from '../session/session-core.js';
import type { SessionHost, SessionTarget } from '../session/session-host.js';
import { ClientTable } from '../admin/client-table.js';
import { formatStatsLine, ProxyStats } from '../stats.js';
import { describeChoice, PrimaryFollower } from './primary-follower.js';
import type { PrimaryChoice } from './follow.js';
import { PrimaryRouter } from './primary-router.js';

export interface PrimaryListenerOptions {
  /** Every server the follower asks (the primary and the replicas: primary-servers.ts). */
  servers: readonly Endpoint[];
  /** The primary as configured. */
  primary: string;
  /** The health checks' way to the servers. */
  connector: Connector;
  host: string;
  /** Port per class (0 picks a free one). */
  ports: Partial<Record<ServiceClass, number>>;
  classFrom: ClassFrom;
  health: HealthOptions;
  /** The replica listeners' admission settings, applied to the primary (absent: no limit). */
  admission?: AdmissionSettings | undefined;
  settingsOf?: ((server: string) => Promise<ConnectionSettings>) | undefined;
  tls?: SecureContext | undefined;
  serverTls?: ServerTlsMode | undefined;
  serverHangMs?: number | undefined;
  maxClientConn?: number | undefined;
  /** The client's startup packet within this (default 10 s, as on the replica listeners). */
  startupTimeoutMs?: number | undefined;
  /** A TCP connect to the primary within this (default 5 s). */
  connectTimeoutMs?: number | undefined;
  statsEveryS: number;
  log: (line: string) => void;
  clock?: Clock;
}

export interface PrimaryListenerHandle {
  readonly ports: Partial<Record<ServiceClass, number>>;
  readonly stats: ProxyStats;
  readonly router: Router;
  readonly gate: AdmissionGate;
  readonly follower: PrimaryFollower;
  /** Open sessions, and closing the listeners once: what a drain needs (admin/drain.ts). */
  readonly clients: ClientTable;
  closeListeners(): void;
  /** The primary's limit in force (undefined: no admission limits). */
  limits(): Record<string, number> | undefined;
  statsLine(): string;
  stop(graceMs: number): Promise<void>;
}

const FLAG: Record<ServiceClass, string> = {
  premium: '--primary-port',
  freemium: '--primary-freemium-port',
};

export async function startPrimaryListener(opts: PrimaryListenerOptions): Promise<PrimaryListenerHandle> {
  const clock = opts.clock ?? realClock();
  const ids = opts.servers.map((s) => s.id);
  const log = opts.log;
  const inner = new PrimaryRouter(ids);
  const admitting = opts.admission
    ? new AdmittingRouter<object>(inner, 'lc', { ...proxyAdmission(opts.admission), slowStartMs: 0 })
    : undefined;
  const router: Router = admitting ?? inner;
  const limits =
    admitting && new ReplicaLimits(admitting, ids, initialLimit(opts.admission), clock, () => gate.pump());
  const gate = new AdmissionGate(router, admitting, clock);
  const stats = new ProxyStats(ids);
  const sessions = new ClientTable(() => clock.now());
  const follower = new PrimaryFollower(opts.primary, clock, opts.health.hangMs);
  const readOwnLimit = (id: string): void => {
    if (limits) void readLimit(id, limits, opts, log);
  };
  const health = new HealthChecker(
    ids,
    follower.probing(opts.connector),
    { ...opts.health, clock },
    (server, state, via, cause) => {
      log(`${server} ${state} (${via}: ${cause})`);
      sync();
      if (state === 'up' && server === follower.primary()) readOwnLimit(server);
      if (state === 'down' && via === 'health') endSessions(server, cause);
    },
  );
  /** Only the chosen primary is up in the router, and only while its checks pass. */
  const sync = (): void => {
    const now = clock.now();
    for (const id of ids) {
      if (id === follower.primary() && health.isHealthy(id)) router.markUp(id, now);
      else router.markDown(id, now);
    }
    gate.pump();
  };
  const endSessions = (server: string, cause: string): void => {
    for (const s of sessions) if (s.replica === server) s.replicaDown(cause);
  };
  follower.onChange = (prev: PrimaryChoice, next: PrimaryChoice): void => {
    log(`primary: ${describeChoice(next)}; was ${describeChoice(prev)}`);
    sync();
    if (next.kind !== 'primary') return;
    readOwnLimit(next.id);
    // Another server took writes: sessions on any other (the old primary, down or in recovery) end;
    // while there is none (split brain, a failover under way) they stay where they are.
    for (const s of sessions)
      if (s.replica !== undefined && s.replica !== next.id) s.replicaDown(`${next.id} is the primary now`);
  };

  const targets = new Map(opts.servers.map((s) => [s.id, { replica: s.id, host: s.host, port: s.port }]));
  const targetOf = (id: string): SessionTarget => targets.get(id) as SessionTarget;
  const host: SessionHost = {
    classFrom: opts.classFrom,
    startupTimeoutMs: opts.startupTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS,
    connectTimeoutMs: opts.connectTimeoutMs ?? 5000,
    connectAttempts: 3,
    serverKeepalive: serverKeepalive(opts.serverHangMs ?? opts.health.hangMs),
    cancelKeys: new CancelKeys(),
    stats,
    tls: opts.tls,
    serverTls: opts.serverTls ?? 'disable',
    acquire: (cls, ticket) => {
      // No primary (split brain, or it is down): refused at once (57P03), not queued for a slot.
      const p = follower.primary();
      if (p === undefined || !health.isHealthy(p)) throw new PlbError('NO_REPLICA', follower.refusal());
      const r = gate.acquire(cls, ticket);
      return typeof r === 'string' ? targetOf(r) : r.then(targetOf);
    },
    cancelWait: (ticket) => gate.cancel(ticket),
    release: (server, cls, established) => gate.release(server, cls, established),
    noServer: () => follower.refusal(),
    serverNoun: 'server',
    reportFailure: (server, err, via) => void health.reportFailure(server, err, via),
    log,
  };
  const maxClientConn = opts.maxClientConn ?? defaultMaxClientConn();
  const door = openFrontDoor(undefined, {
    host,
    limiter: clientLimiter({ maxClientConn, classes: Object.keys(opts.ports).length }),
    added: (s) => void sessions.add(s),
    ended: (s) => void sessions.delete(s),
    sessions: () => sessions.size,
    noteClients: () => undefined,
  });
  const bound: Partial<Record<ServiceClass, number>> = {};
  try {
    // Every server asked once, and the primary's limit read, before anyone is admitted.
    await follower.readAll(ids, opts.connector, opts.health.timeoutMs);
    log(`primary: ${describeChoice(follower.current)}`);
    sync();
    const p = follower.primary();
    if (limits && p !== undefined) await readLimit(p, limits, opts, log);
    for (const cls of ['premium', 'freemium'] as const) {
      const port = opts.ports[cls];
      if (port === undefined) continue;
      // The front door names the replica listeners' flags: this listener's instead.
      bound[cls] = await door.listen(cls, opts.host, port).catch((err: unknown) => {
        throw new PlbError('BAD_INPUT', errorText(err).replace(/^--[a-z]+-port/, FLAG[cls]), { cause: err });
      });
    }
  } catch (err) {
    await door.stop();
    await limits?.stop();
    throw err;
  }
  health.start();
  const t0 = clock.now();
  const statsLine = (): string =>
    `${formatStatsLine((clock.now() - t0) / 1000, stats, router.snapshot())} | ` +
    `queued ${gate.queued('premium')}p/${gate.queued('freemium')}f | primary ${describeChoice(follower.current)}`;
  const statsTimer =
    opts.statsEveryS > 0 ? setInterval(() => log(statsLine()), opts.statsEveryS * 1000) : undefined;
  let closing: Promise<void> | undefined;
  const closeListeners = (): Promise<void> => (closing ??= door.stop());
  return {
    ports: bound,
    stats,
    router,
    gate,
    follower,
    limits: () => limits?.limits(),
    statsLine,
    clients: sessions,
    closeListeners: () => void closeListeners(),
    async stop(graceMs: number) {
      if (statsTimer) clearInterval(statsTimer);
      const closed = closeListeners();
      const all = (): Promise<unknown> => Promise.all([...sessions].map((s) => s.done));
      if (sessions.size > 0) await within(clock, graceMs, all());
      for (const s of sessions) s.shutdown();
      await within(clock, 6000, all());
      await closed;
      health.stop();
      await limits?.stop();
      gate.close();
    },
  };
}
