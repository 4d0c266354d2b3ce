/** `plb proxy` as the command runs it: flags -> the cluster's replicas -> listeners, until a stop signal. */
import { handleStopSignals, type StopSignalDeps } from '../cli/stop-signals.js';
import { clientHost } from '../cluster/connect-info.js';
import type { ReplicaSnapshot } from '../router/types.js';
import { formatHostPort, type Credentials, type Endpoint } from '../core/endpoint.js';
import { PlbError } from '../core/errors.js';
import { readEveryReplica, type SessionCountReader } from '../cluster/session-counts.js';
import type { ReplicaViewOptions } from './admission/replica-limits.js';
import { readConnectionSettings } from '../cluster/server-limits.js';
import { type ProxyFlagValues } from './options.js';
import { startProxy, type ProxyHandle } from './proxy-server.js';
import { describeKeepalive, serverKeepalive } from './session/server-keepalive.js';
import { proxyRegistry } from './proxy-metrics.js';
import { startMetricsServer } from '../metrics/metrics-server.js';
import type { ClassCounters, ReplicaCounters } from './stats.js';
import type { GateCounters } from './admission/admission-gate.js';
import type { ProcessUsage } from './process-usage.js';
import type { PacerCounters } from './admission/accept-pacer.js';
import { startConfiguredPrimary, type PrimarySummary, type RunningPrimary } from './primary/run-primary.js';
import { AdminRunner } from './admin/admin-runner.js';
import { checkTls } from './protocol/server-verify.js';
import type { Fleet } from './fleet.js';
import { flagsNotDefault } from './config-file.js';
import { checkLine, fleetReloader, resolveSettings } from './fleet-reload.js';
import { ReplicaWeights } from '../router/lag-weight.js';
import { startLagSource, type LagSource } from './lag-source.js';

function endpointOf(replicas: readonly Endpoint[], id: string): Endpoint {
  const e = replicas.find((r) => r.id === id);
  if (!e) throw new PlbError('INTERNAL', `no endpoint for ${id}`);
  return e;
}

async function openViewReader(fleet: Fleet, timeoutMs: number): Promise<SessionCountReader> {
  if (!fleet.sessionCounts)
    throw new PlbError(
      'BAD_INPUT',
      `--router-view replica: ${fleet.label} cannot give the replicas' sessions`,
    );
  const reader = fleet.sessionCounts(timeoutMs);
  await readEveryReplica(
    reader,
    fleet.replicas.map((r) => r.id),
    '--router-view replica',
  );
  return reader;
}

/** `plb proxy --check`: the settings and the fleet they name checked, nothing started. */
export async function checkProxy(
  flags: ProxyFlagValues,
  explicit: ReadonlySet<string> = flagsNotDefault(flags),
): Promise<{ ok: true; summary: string }> {
  return { ok: true, summary: checkLine(await resolveSettings(flags, explicit), flags.config) };
}

export interface ProxyIo {
  log: (line: string) => void;
  warn: (line: string) => void;
}

/** What a stopped proxy reports (the command's --json output). */
export interface ProxySummary {
  uptimeS: number;
  strategy: string;
  classes: Record<'premium' | 'freemium', ClassCounters>;
  replicas: (ReplicaSnapshot & ReplicaCounters)[];
  cancels: number;
  /** Clients refused at once over --max-client-conn (53300). */
  overLimit: number;
  /** Sessions that named another class (application_name) only after they were routed. */
  lateClass: number;
  /** Who served the clients ("native, N thread(s)" or "js"), and how many sessions the native front door took to ReadyForQuery. */
  relay: string;
  relayed: number;
  /** Replica connections opened at a client's SSLRequest, and those never used (early-connect.ts). */
  earlyConnects: number;
  earlyUnused: number;
  /** Sessions cut before ReadyForQuery: at --startup-timeout, and for another client host (--startup-yield). */
  startupTimeouts: number;
  startupYields: number;
  maxClientConn: number;
  /** Sessions that waited for a replica slot, per class: admitted, refused (queue full), timed out. */
  admission: Record<'premium' | 'freemium', GateCounters>;
  /** Per-replica admission limits in force at the stop (none: --admission-limit off). */
  limits: Record<string, number>;
  /** The process: RSS and descriptors at the stop and their peaks. */
  usage: ProcessUsage;
  /** Accept backpressure on the freemium listener (absent: no freemium listener). */
  paced?: PacerCounters & { heldNow: number };
  /** The primary listener (absent: no --primary-port). */
  primary?: PrimarySummary;
}

/**
 * Runs the proxy in front of the fleet's replicas (fleet.ts) until SIGINT/SIGTERM; then stops
 * gracefully (a second signal exits at once) and returns what it counted. SIGHUP reloads. Or until
 * a drain (SIGUSR2, POST /drain; admin/drain.ts) has seen the last session end. Bad input, a missing
 * cluster or a port in use throw (PlbError, one line) before anything listens.
 */
export async function executeProxy(
  flags: ProxyFlagValues,
  io: ProxyIo,
  signalDeps: Pick<StopSignalDeps, 'exit' | 'target'> = {},
  explicit: ReadonlySet<string> = flagsNotDefault(flags),
): Promise<ProxySummary> {
  const started = await resolveSettings(flags, explicit);
  const { config, fleet } = started;
  const replicas = fleet.replicas;
  const creds = fleet.credentials;
  // The replicas the proxy has: those it started with, then those a reload added (their fleet's credentials).
  const known: Endpoint[] = [...replicas];
  const credsOf = new Map<string, Credentials>();
  // Before the listeners: a metrics port in use is one line and nothing listens.
  let handle: ProxyHandle | undefined;
  const registry =
    config.metricsPort === undefined
      ? undefined
      : proxyRegistry(() => {
          const h = handle;
          return h && { snapshot: () => h.router.snapshot(), stats: h.stats };
        });
  const admin = new AdminRunner({
    drainTimeoutMs: config.drainTimeoutMs,
    log: io.log,
    signals: signalDeps.target ?? process,
  });
  const metrics =
    registry && config.metricsPort !== undefined
      ? await startMetricsServer(
          config.metricsPort,
          () => registry.metrics(),
          '--metrics-port',
          admin.routes,
        ).catch((err: unknown) => {
          admin.dispose();
          throw err;
        })
      : undefined;
  // SIGHUP: the config and cluster files read again (fleet-reload.ts), once the proxy is up.
  let reload: (() => Promise<void>) | undefined;
  const stop = handleStopSignals({
    warn: io.warn,
    ...signalDeps,
    reload: () =>
      reload
        ? void reload()
        : io.log('reload: the proxy is not serving (starting or stopping): nothing changed'),
  });
  let view: ReplicaViewOptions | undefined;
  let primary: RunningPrimary | undefined;
  let lag: LagSource | undefined;
  try {
    primary = await startConfiguredPrimary(
      config,
      fleet.servers,
      creds,
      fleet.connector,
      (port) => fleet.connectLine(clientHost(config.host), port),
      io.log,
    );
    // The replica view's reader, every replica read once: one that cannot be read is one line.
    if (config.viewIntervalMs !== undefined)
      view = {
        reader: await openViewReader(fleet, config.health.timeoutMs),
        intervalMs: config.viewIntervalMs,
      };
    const t0 = Date.now();
    const proxy = (handle = await startProxy({
      replicas,
      connector: fleet.connector,
      ...(fleet.weights ? { weights: fleet.weights } : {}),
      ...(fleet.zones ? { zones: fleet.zones } : {}),
      ...(config.zone !== undefined ? { zone: config.zone } : {}),
      host: config.host,
      ports: config.ports,
      classFrom: config.classFrom,
      strategy: config.strategy,
      reference: config.reference,
      partition: config.partition,
      slowStartMs: config.slowStartMs,
      borrowing: config.borrowing,
      health: config.health,
      serverHangMs: config.serverHangMs,
      statsEveryS: config.statsEveryS,
      maxClientConn: config.maxClientConn,
      startupTimeoutMs: config.startupTimeoutMs,
      startupYieldMs: config.startupYieldMs,
      ...(config.startupPacing ? {} : { freemiumPacing: false as const }),
      earlyConnect: config.earlyConnect,
      ...(config.admission ? { admission: config.admission } : {}),
      settingsOf: (id) => {
        const e = endpointOf(known, id);
        return readConnectionSettings(
          e,
          credsOf.get(id) ?? creds,
          config.health.timeoutMs,
          checkTls(config.serverTls, config.serverCa, e.host),
        );
      },
      ...(view ? { view } : {}),
      ...(config.tls ? { tls: config.tls } : {}),
      serverTls: config.serverTls,
      ...(config.serverCa ? { serverCa: config.serverCa } : {}),
      relay: config.relay,
      log: io.log,
    }));
    const weights = new ReplicaWeights(proxy.router, fleet.weights);
    if (config.lagRule)
      lag = startLagSource({
        primary: fleet.primary,
        replicas,
        creds,
        rule: config.lagRule,
        weights,
        log: io.log,
      });
    reload = fleetReloader({
      cli: flags,
      explicit,
      started,
      proxy: {
        retire: (id) => proxy.retire(id),
        restore: (id) => proxy.restore(id),
        addRefusal: (r) => proxy.addRefusal(r),
        add: (a, next) => {
          known.push(a.endpoint);
          credsOf.set(a.endpoint.id, next.credentials);
          proxy.addReplica(a.endpoint, {
            weight: a.weight,
            zone: a.zone,
            // Its checks go as the reloaded fleet's go, by the id it has there.
            connector: { open: (_id, o) => next.connector.open(a.fileId, o) },
          });
          // Lag-derived weights: the probe is made for a list of replicas; a new one for the new list.
          if (config.lagRule && lag) {
            const was = lag;
            lag = startLagSource({
              primary: fleet.primary,
              replicas: known,
              creds,
              rule: config.lagRule,
              weights,
              log: io.log,
            });
            void was.stop();
          }
        },
        sessionsOn: (id) => {
          const r = proxy.router.snapshot().find((x) => x.id === id);
          return r ? r.sessions.premium + r.sessions.freemium : 0;
        },
      },
      weights,
      log: io.log,
    });
    admin.attach(
      proxy,
      {
        strategy: config.strategy,
        startedMs: t0,
        admission: config.admission,
        drainingReplicas: () => proxy.retired,
      },
      primary ? [primary.handle] : [],
    );
    if (metrics)
      io.log(
        `metrics: http://127.0.0.1:${metrics.port}/metrics; admin view: /admin; drain: POST /drain (or SIGUSR2)`,
      );
    for (const cls of ['premium', 'freemium'] as const) {
      const port = proxy.ports[cls];
      if (port === undefined) continue;
      const connect = fleet.connectLine(clientHost(config.host), port);
      io.log(`${cls}: listening on ${config.host}:${port}; connect: ${connect}`);
    }
    io.log(
      `${fleet.label}: ${replicas.map((r) => (r.host === '127.0.0.1' ? `${r.id}:${r.port}` : `${r.id}:${formatHostPort(r)}`)).join(' ')}; ` +
        `strategy ${config.strategy}; class from ${config.classFrom === 'off' ? 'the port' : `the port or ${config.classFrom}`}; ` +
        `relay ${proxy.relay}; replica connections: ${describeKeepalive(serverKeepalive(config.serverHangMs))}`,
    );
    const graceMs = await admin.until(stop.signal, config.stopTimeoutMs);
    reload = undefined;
    await lag?.stop();
    const [primaryEnd] = await Promise.all([primary?.stop(graceMs), proxy.stop(graceMs)]);
    primary = undefined;
    io.log(proxy.statsLine());
    const paced = proxy.paced();
    return {
      uptimeS: Math.round((Date.now() - t0) / 100) / 10,
      strategy: config.strategy,
      classes: proxy.stats.classes,
      replicas: proxy.router.snapshot().map((r) => ({ ...r, ...proxy.stats.replica(r.id) })),
      cancels: proxy.stats.cancels,
      overLimit: proxy.stats.overLimit,
      lateClass: proxy.stats.lateClass,
      relay: proxy.relay,
      relayed: proxy.stats.relayed,
      earlyConnects: proxy.stats.earlyConnects,
      earlyUnused: proxy.stats.earlyUnused,
      startupTimeouts: proxy.stats.startupTimeouts,
      startupYields: proxy.stats.startupYields,
      maxClientConn: proxy.maxClientConn,
      admission: proxy.gate.counters,
      limits: proxy.limits() ?? {},
      usage: proxy.usage(),
      ...(paced ? { paced } : {}),
      ...(primaryEnd ? { primary: primaryEnd } : {}),
    };
  } catch (err) {
    await lag?.stop();
    await view?.reader.close();
    await primary?.stop(0);
    throw err;
  } finally {
    stop.dispose();
    admin.dispose();
    await metrics?.close();
    registry?.clear();
  }
}
