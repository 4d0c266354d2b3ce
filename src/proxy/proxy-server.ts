/**
 * `plb proxy`: one listener per class around the bench's own router and health checker. A session
 * is routed when it connects and stays on its replica (session-level, as in the paper).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { realClock, within, type Clock } from '../clock/index.js';
import type { Connector } from '../cluster/connector.js';
import type { Endpoint } from '../core/endpoint.js';
import { HealthChecker } from '../cluster/health.js';
import { type HealthOptions } from '../run-format/config.js';
import { PlbError } from '../core/errors.js';
import { createRouter } from '../router/index.js';
import type { BorrowingOptions, Partition, RoleVector, Router, StrategyName } from '../router/types.js';
import type { ServiceClass } from '../core/service-class.js';
import { CancelKeys } from './cancel-keys.js';
import { ProxySession, type SessionHost } from './session.js';
import type { ClassFrom } from './startup-packet.js';
import { formatStatsLine, ProxyStats } from './stats.js';

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
  /** Seconds between stats lines (0: none). */
  statsEveryS: number;
  log: (line: string) => void;
  connectTimeoutMs?: number;
  startupTimeoutMs?: number;
  connectAttempts?: number;
  clock?: Clock;
}

export interface ProxyHandle {
  /** The ports actually bound, per class. */
  readonly ports: Partial<Record<ServiceClass, number>>;
  readonly router: Router;
  readonly stats: ProxyStats;
  readonly health: HealthChecker;
  /** Open client connections (any phase). */
  sessionCount(): number;
  statsLine(): string;
  /**
   * Stops: closes the listeners, lets sessions end by themselves for up to graceMs, then tells the
   * rest (FATAL 57P01 at a message boundary) and closes them; stops the health checks.
   */
  stop(graceMs: number): Promise<void>;
}

export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
export const DEFAULT_STARTUP_TIMEOUT_MS = 10_000;
export const DEFAULT_CONNECT_ATTEMPTS = 3;

export async function startProxy(opts: ProxyOptions): Promise<ProxyHandle> {
  const clock = opts.clock ?? realClock();
  const ids = opts.replicas.map((r) => r.id);
  const byId = new Map(opts.replicas.map((r) => [r.id, r] as const));
  const log = opts.log;
  const router = createRouter({
    strategy: opts.strategy,
    replicas: ids,
    reference: opts.reference,
    partition: opts.partition,
    slowStartMs: opts.slowStartMs,
    borrowing: opts.borrowing,
    onRoleChange: (c) =>
      log(
        `role ${c.replica}: ${c.from} -> ${c.to} (${c.reason}${c.borrowedBy ? `, borrowed by ${c.borrowedBy}` : ''})`,
      ),
  });
  const stats = new ProxyStats(ids);
  const sessions = new Set<ProxySession>();
  const health = new HealthChecker(
    ids,
    opts.connector,
    { ...opts.health, clock },
    (replica, state, via, cause) => {
      if (state === 'down') router.markDown(replica, clock.now());
      else router.markUp(replica, clock.now());
      log(`${replica} ${state} (${via}: ${cause})`);
      // Its open sessions are told at once when the checks found it dead (a killed server's are gone
      // already; a hung one's never return). Not on sessions' own reports: two sessions ended by
      // pg_terminate_backend must not take every other session on that replica with them.
      if (state === 'down' && via === 'health')
        for (const s of sessions) if (s.replica === replica) s.replicaDown(cause);
    },
  );
  const cancelKeys = new CancelKeys();
  const host: SessionHost = {
    classFrom: opts.classFrom,
    startupTimeoutMs: opts.startupTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS,
    connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    connectAttempts: opts.connectAttempts ?? DEFAULT_CONNECT_ATTEMPTS,
    cancelKeys,
    stats,
    admit: (cls) => {
      const { replica } = router.admit(cls, clock.now());
      const ep = byId.get(replica) as Endpoint;
      return { replica, host: ep.host, port: ep.port };
    },
    release: (replica, cls) => void router.release(replica, cls, clock.now()),
    reportFailure: (replica, err, via) => void health.reportFailure(replica, err, via),
    log,
  };

  const servers: Server[] = [];
  const bound: Partial<Record<ServiceClass, number>> = {};
  const t0 = clock.now();
  const statsLine = (): string => formatStatsLine((clock.now() - t0) / 1000, stats, router.snapshot());
  try {
    for (const cls of ['premium', 'freemium'] as const) {
      const port = opts.ports[cls];
      if (port === undefined) continue;
      const server = createServer((socket: Socket) => {
        const s = new ProxySession(socket, cls, host);
        sessions.add(s);
        void s.done.then(() => sessions.delete(s));
      });
      servers.push(server);
      bound[cls] = await listen(server, opts.host, port, cls);
    }
  } catch (err) {
    for (const s of servers) s.close();
    throw err;
  }
  health.start();
  const statsTimer =
    opts.statsEveryS > 0 ? setInterval(() => log(statsLine()), opts.statsEveryS * 1000) : undefined;

  return {
    ports: bound,
    router,
    stats,
    health,
    sessionCount: () => sessions.size,
    statsLine,
    async stop(graceMs: number) {
      if (statsTimer) clearInterval(statsTimer);
      const closed = Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
      const all = (): Promise<unknown> => Promise.all([...sessions].map((s) => s.done));
      if (sessions.size > 0) {
        log(`stopping: waiting up to ${Math.round(graceMs / 1000)} s for ${describe(sessions)}`);
        await within(clock, graceMs, all());
      }
      if (sessions.size > 0) {
        log(`stopping: closing ${describe(sessions)}`);
        for (const s of sessions) s.shutdown();
        await within(clock, 6000, all());
      }
      await closed;
      health.stop();
    },
  };
}

function listen(server: Server, host: string, port: number, cls: ServiceClass): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      reject(
        new PlbError(
          'BAD_INPUT',
          `--${cls}-port ${port}: cannot listen on ${host}:${port} (${err.code ?? err.message})`,
          {
            cause: err,
          },
        ),
      );
    };
    server.once('error', onError);
    server.listen({ host, port }, () => {
      server.off('error', onError);
      // A listener error later (rare: the interface went away) is logged by the caller's process, not fatal.
      server.on('error', () => undefined);
      const addr = server.address();
      resolve(typeof addr === 'object' && addr !== null ? addr.port : port);
    });
  });
}

/** "3 session(s) (ready 2, startup 1)". */
function describe(sessions: ReadonlySet<ProxySession>): string {
  const by = new Map<string, number>();
  for (const s of sessions) by.set(s.phase, (by.get(s.phase) ?? 0) + 1);
  return `${sessions.size} session(s) (${[...by].map(([p, n]) => `${p} ${n}`).join(', ')})`;
}
