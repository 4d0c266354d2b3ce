/**
 * The parts of a run that watch, route and break the cluster: the health checker, the data
 * source the sessions connect through, the fault injector (and the admission waiter of the
 * queueing strategies); and the plan's per-replica CPU quotas.
 */
import type { Clock } from '../clock/index.js';
import type { Connector } from '../cluster/connector.js';
import type { ClusterDriver } from '../cluster/driver.js';
import { HealthChecker } from '../cluster/health.js';
import { replicaStateAfter } from '../faults/actions.js';
import { eventFields } from '../run-format/fault-actions.js';
import { Injector, type InjectedFault } from '../faults/injector.js';
import type { RunWriter } from '../metrics/types.js';
import type { SessionRouter } from '../router/types.js';
import type { BenchConfig } from '../run-format/config.js';
import { AdmissionWaiter, isQueueingRouter } from '../workload/admission-wait.js';
import { DataSource } from '../workload/data-source.js';
import { SessionShutdown, SessionShutdownError } from './session-shutdown.js';

/** What the parts of a run are built from. */
export interface PartsInputs {
  config: BenchConfig;
  driver: ClusterDriver;
  ids: readonly string[];
  connector: Connector;
  clock: Clock;
  /** One per application instance with a router of its own (the global view: one for all). */
  routers: readonly SessionRouter[];
  writer: RunWriter;
  log: (line: string) => void;
  /** Router i's view of a replica's health changed (its checker saw it, or the oracle told every router). */
  setHealth: (router: number, replica: string, state: 'up' | 'down', via: string, cause: string) => void;
  /** A throttle changed a replica's quota (CPU fractions are of the current quota). */
  setQuota: (replica: string, cpus: number) => void;
  /** A throttle's `weight:` changed a replica's static weight. */
  setWeight?: (replica: string, weight: number) => void;
}

/** What each router has of its own: its health checker, the data source its sessions use. */
export interface InstanceParts {
  health: HealthChecker;
  ds: DataSource;
  /** plb-admit / lc-queue: where sessions wait for a slot. */
  admission?: AdmissionWaiter;
}

export interface RunParts {
  /** One per router (PartsInputs.routers). */
  instances: InstanceParts[];
  injector: Injector;
}

/** The real parts: per router, health checks and sessions over the connector; faults through the driver. */
export function runParts(x: PartsInputs): RunParts {
  const built = x.routers.map((router, i) => instanceParts(x, router, i));
  const oracle: SetHealth = (replica, state, via, cause) => {
    for (const b of built) b.setHealth(replica, state, via, cause);
  };
  return { instances: built.map((b) => b.parts), injector: faultInjector(x, oracle) };
}

type SetHealth = (replica: string, state: 'up' | 'down', via: string, cause: string) => void;

/**
 * Router i's own parts: its checker (each router its own, as each application instance runs its
 * own health checks), its data source and, with --shutdown-sessions, the shutdown of its sessions.
 */
export function instanceParts(
  x: Pick<PartsInputs, 'config' | 'ids' | 'connector' | 'clock' | 'writer' | 'setHealth'>,
  router: SessionRouter,
  i: number,
): { parts: InstanceParts; setHealth: SetHealth } {
  const { config, clock, writer } = x;
  const shutdown = config.shutdownSessions ? new SessionShutdown(x.connector) : undefined;
  const told: SetHealth = (replica, state, via, cause) => x.setHealth(i, replica, state, via, cause);
  const setHealth = shutdown ? shuttingDown(x, told, shutdown) : told;
  const health = new HealthChecker(
    x.ids,
    x.connector,
    { ...config.health, clock },
    (replica, state, via, cause) => {
      if (!config.oracle) setHealth(replica, state, via, cause);
    },
    (f) => writer.recorder.replicaFailure(f.replica, clock.now(), f.cause, f.via),
  );
  const admission = isQueueingRouter(router) ? new AdmissionWaiter(router, clock) : undefined;
  const ds = new DataSource({
    ...(admission ? { admission } : {}),
    router,
    connector: shutdown?.connector ?? x.connector,
    connectTimeoutMs: config.workload.connectTimeoutMs,
    queryTimeoutMs: config.workload.queryTimeoutMs,
    now: () => clock.now(),
    // A balancer that could not be reached (via) says nothing of any one replica.
    onConnectError: (replica, err) => {
      if (x.ids.includes(replica) && !(err instanceof SessionShutdownError))
        health.reportFailure(replica, err, 'connect');
    },
    // A session plb shut down says nothing more of its replica (it was marked down already).
    onSessionError: (replica, err) => {
      if (!(err instanceof SessionShutdownError)) health.reportFailure(replica, err, 'session');
    },
  });
  return { parts: { health, ds, ...(admission ? { admission } : {}) }, setHealth };
}

/** The plan's faults through the driver; `oracle` tells every router (--oracle). */
function faultInjector(x: PartsInputs, oracle: SetHealth): Injector {
  const { config, clock, writer } = x;
  return new Injector({
    driver: x.driver,
    events: config.plan.events,
    clock,
    defaultCpus: config.replicaCpus,
    log: x.log,
    onInjected: (f) => onInjected(x, oracle, f),
    // Recorded next to the fault; the summary marks its phases invalid and the run incomplete.
    onNotTaken: (f, reason) =>
      writer.event({
        type: 'note',
        tMs: f.tMs,
        what: 'fault-not-taken',
        replica: f.event.replica,
        action: f.event.action,
        error: reason,
      }),
  });
}

/**
 * --shutdown-sessions: the replica marked down (by the checker, a session's failure or the
 * oracle) has its sessions ended at once, and how many is recorded next to the detection.
 */
function shuttingDown(
  x: Pick<PartsInputs, 'writer' | 'clock'>,
  setHealth: SetHealth,
  shutdown: SessionShutdown,
): SetHealth {
  return (replica, state, via, cause) => {
    setHealth(replica, state, via, cause);
    if (state !== 'down') return;
    const { sessions, connects } = shutdown.shutDown(replica);
    x.writer.event({
      type: 'note',
      tMs: x.clock.now(),
      what: 'shutdown-sessions',
      replica,
      sessions,
      connects,
    });
  };
}

/** A fault was applied: recorded, logged, told to the router in oracle mode, quota tracked. */
function onInjected(x: PartsInputs, oracle: SetHealth, f: InjectedFault): void {
  x.writer.event({
    type: 'fault',
    tMs: f.tMs,
    issuedMs: f.issuedMs,
    doneMs: f.doneMs,
    replica: f.event.replica,
    action: f.event.action,
    // The fields say what it was (a heal's `what`, a delay's ms): the report names what degraded.
    ...eventFields(f.event),
    // A throttle back to the quota the replica began with ends its slowness (session-share.ts).
    ...(f.event.action === 'throttle'
      ? { runCpus: x.config.balance?.cpus?.[f.event.replica] ?? x.config.replicaCpus }
      : {}),
    ...(f.error !== undefined ? { error: f.error } : {}),
  });
  x.log(
    `t=${(f.tMs / 1000).toFixed(1)}s ${f.event.action} ${f.event.replica}${f.error ? ` FAILED: ${f.error}` : ''}`,
  );
  const a = f.event.action;
  const state = replicaStateAfter(a);
  if (x.config.oracle && state !== null) oracle(f.event.replica, state, 'oracle', `injected ${a}`);
  if (a === 'throttle' && f.event.cpus !== undefined) x.setQuota(f.event.replica, f.event.cpus);
  if (a === 'throttle' && f.event.weight !== undefined) x.setWeight?.(f.event.replica, f.event.weight);
}

/**
 * The plan's per-replica CPU quotas (`cpus:`), set before the clients start, through the driver's
 * throttle (every driver's setCpus); `to` given: put back to that quota at the end.
 */
export async function setReplicaCpus(
  driver: ClusterDriver,
  cpus: Readonly<Record<string, number>> | undefined,
  quota: Map<string, number>,
  log: (l: string) => void,
  to?: number,
): Promise<void> {
  if (!cpus) return;
  for (const [id, c] of Object.entries(cpus)) {
    await driver.setCpus(id, to ?? c);
    quota.set(id, to ?? c);
  }
  if (to === undefined)
    log(
      `cpus: ${Object.entries(cpus)
        .map(([id, c]) => `${id}=${c}`)
        .join(', ')}${driver.cpusEnforced ? '' : ' (not enforced by this driver)'}`,
    );
}
