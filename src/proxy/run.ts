/** `plb proxy` as the command runs it: flags -> the cluster's replicas -> listeners, until a stop signal. */
import { handleStopSignals, type StopSignalDeps } from '../cli/stop-signals.js';
import { openCluster } from '../cluster/select.js';
import { clientHost, psqlLine } from '../cluster/connect-info.js';
import { passwordFile } from '../cluster/state.js';
import type { ReplicaSnapshot } from '../router/types.js';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import { PlbError } from '../core/errors.js';
import { readEveryReplica, type SessionCountReader } from '../cluster/session-counts.js';
import type { ClusterDriver } from '../cluster/driver.js';
import type { ReplicaViewOptions } from './admission/replica-limits.js';
import { readConnectionSettings } from '../cluster/server-limits.js';
import { parseProxyFlags, type ProxyFlagValues } from './options.js';
import { startProxy, type ProxyHandle } from './proxy-server.js';
import { describeKeepalive, serverKeepalive } from './session/server-keepalive.js';
import { proxyRegistry } from './proxy-metrics.js';
import { startMetricsServer } from '../metrics/metrics-server.js';
import type { ClassCounters, ReplicaCounters } from './stats.js';
import type { GateCounters } from './admission/admission-gate.js';
import type { ProcessUsage } from './process-usage.js';
import type { PacerCounters } from './admission/accept-pacer.js';

function endpointOf(replicas: readonly Endpoint[], id: string): Endpoint {
  const e = replicas.find((r) => r.id === id);
  if (!e) throw new PlbError('INTERNAL', `no endpoint for ${id}`);
  return e;
}

async function openViewReader(
  driver: Pick<ClusterDriver, 'kind' | 'sessionCounts'>,
  replicas: readonly Endpoint[],
  creds: Credentials,
  timeoutMs: number,
): Promise<SessionCountReader> {
  if (!driver.sessionCounts)
    throw new PlbError(
      'BAD_INPUT',
      `--router-view replica: the ${driver.kind} driver cannot read the replicas' sessions`,
    );
  const reader = driver.sessionCounts(creds, timeoutMs);
  await readEveryReplica(
    reader,
    replicas.map((r) => r.id),
    '--router-view replica',
  );
  return reader;
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
  maxClientConn: number;
  /** Sessions that waited for a replica slot, per class: admitted, refused (queue full), timed out. */
  admission: Record<'premium' | 'freemium', GateCounters>;
  /** Per-replica admission limits in force at the stop (none: --admission-limit off). */
  limits: Record<string, number>;
  /** The process: RSS and descriptors at the stop and their peaks. */
  usage: ProcessUsage;
  /** Accept backpressure on the freemium listener (absent: no freemium listener). */
  paced?: PacerCounters & { heldNow: number };
}

/**
 * Runs the proxy in front of the named cluster's replicas until SIGINT/SIGTERM/SIGHUP; then stops
 * gracefully (a second signal exits at once) and returns what it counted. Bad input, a missing
 * cluster or a port in use throw (PlbError, one line) before anything listens.
 */
export async function executeProxy(
  flags: ProxyFlagValues,
  io: ProxyIo,
  signalDeps: Pick<StopSignalDeps, 'exit' | 'target'> = {},
): Promise<ProxySummary> {
  const config = parseProxyFlags(flags);
  const driver = await openCluster(config.name);
  const replicas = driver.endpoints().filter((e) => e.kind === 'replica');
  const creds = await driver.credentials();
  // Before the listeners: a metrics port in use is one line and nothing listens.
  let handle: ProxyHandle | undefined;
  const registry =
    config.metricsPort === undefined
      ? undefined
      : proxyRegistry(() => {
          const h = handle;
          return h && { snapshot: () => h.router.snapshot(), stats: h.stats };
        });
  const metrics =
    registry && config.metricsPort !== undefined
      ? await startMetricsServer(config.metricsPort, () => registry.metrics())
      : undefined;
  const stop = handleStopSignals({ warn: io.warn, ...signalDeps });
  let view: ReplicaViewOptions | undefined;
  try {
    // The replica view's reader, every replica read once: one that cannot be read is one line.
    if (config.viewIntervalMs !== undefined)
      view = {
        reader: await openViewReader(driver, replicas, creds, config.health.timeoutMs),
        intervalMs: config.viewIntervalMs,
      };
    const t0 = Date.now();
    const proxy = (handle = await startProxy({
      replicas,
      connector: driver.connector(creds),
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
      ...(config.startupPacing ? {} : { freemiumPacing: false as const }),
      earlyConnect: config.earlyConnect,
      ...(config.admission ? { admission: config.admission } : {}),
      settingsOf: (id) => readConnectionSettings(endpointOf(replicas, id), creds, config.health.timeoutMs),
      ...(view ? { view } : {}),
      ...(config.tls ? { tls: config.tls } : {}),
      serverTls: config.serverTls,
      relay: config.relay,
      log: io.log,
    }));
    if (metrics) io.log(`metrics: http://127.0.0.1:${metrics.port}/metrics`);
    for (const cls of ['premium', 'freemium'] as const) {
      const port = proxy.ports[cls];
      if (port === undefined) continue;
      const connect = psqlLine(
        passwordFile(driver.spec.stateDir, config.name),
        clientHost(config.host),
        port,
      );
      io.log(`${cls}: listening on ${config.host}:${port}; connect: ${connect}`);
    }
    io.log(
      `cluster ${config.name} (${driver.kind}): ${replicas.map((r) => `${r.id}:${r.port}`).join(' ')}; ` +
        `strategy ${config.strategy}; class from ${config.classFrom === 'off' ? 'the port' : `the port or ${config.classFrom}`}; ` +
        `relay ${proxy.relay}; replica connections: ${describeKeepalive(serverKeepalive(config.serverHangMs))}`,
    );
    await new Promise<void>((resolve) =>
      stop.signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    await proxy.stop(config.stopTimeoutMs);
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
      maxClientConn: proxy.maxClientConn,
      admission: proxy.gate.counters,
      limits: proxy.limits() ?? {},
      usage: proxy.usage(),
      ...(paced ? { paced } : {}),
    };
  } catch (err) {
    await view?.reader.close();
    throw err;
  } finally {
    stop.dispose();
    await metrics?.close();
    registry?.clear();
  }
}
