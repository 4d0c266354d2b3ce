/**
 * `plb proxy`: one listener per class around the bench's own router and health checker. A session
 * is routed when it connects and stays on its replica (session-level, as in the paper).
 */
import { isIP } from 'node:net';
import { realClock, within } from '../clock/index.js';
import type { Connector } from '../cluster/connector.js';
import type { Endpoint } from '../core/endpoint.js';
import { HealthChecker } from '../cluster/health.js';
import { buildRouter } from '../router/index.js';
import { AdmittingRouter } from '../router/admission/admission.js';
import { AdmissionGate } from './admission/admission-gate.js';
import { initialLimit, proxyAdmission, readLimit, ReplicaLimits } from './admission/replica-limits.js';
import { PlbError } from '../core/errors.js';
import { clientLimiter } from './admission/client-limit.js';
import { DEFAULT_PACER } from './admission/accept-pacer.js';
import { PacedIntake } from './admission/paced-intake.js';
import { DEFAULT_STARTUP_YIELD_MS, HostShare } from './admission/host-share.js';
import { defaultMaxClientConn, UsageSampler } from './process-usage.js';
import type { ServiceClass } from '../core/service-class.js';
import { CancelKeys } from './protocol/cancel-keys.js';
import { DEFAULT_STARTUP_TIMEOUT_MS } from './session/session-core.js';
import { EARLY_MAX } from './node/early-connect.js';
import { nativeFrontBlocked, openFrontDoor } from './front-door.js';
import type { ClientSession, SessionHost, SessionTarget } from './session/session-host.js';
import { formatStatsLine, ProxyStats } from './stats.js';
import { serverKeepalive } from './session/server-keepalive.js';
import { DEFAULT_RELAY_THREADS, NativeRelay } from './native/native-relay.js';
import { ClientTable } from './admin/client-table.js';
import { verifiedConnector } from './protocol/server-verify.js';

import type { ProxyHandle, ProxyOptions } from './proxy-handle.js';
export type { ProxyHandle, ProxyOptions } from './proxy-handle.js';

const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
const DEFAULT_CONNECT_ATTEMPTS = 3;

export async function startProxy(opts: ProxyOptions): Promise<ProxyHandle> {
  const clock = opts.clock ?? realClock();
  const ids = opts.replicas.map((r) => r.id);
  const log = opts.log;
  // With --admission-limit any strategy gets the limits and the queue around it (no SLO guard).
  const admission = opts.admission ? proxyAdmission(opts.admission) : undefined;
  const router = buildRouter({
    strategy: opts.strategy,
    replicas: opts.replicas.map((r) => ({ id: r.id, weight: opts.weights?.[r.id] ?? 1 })),
    ...(opts.zones ? { zones: opts.zones, ...(opts.zone !== undefined ? { homeZone: opts.zone } : {}) } : {}),
    reference: opts.reference,
    partition: opts.partition,
    slowStartMs: opts.slowStartMs,
    borrowing: opts.borrowing,
    onRoleChange: (c) =>
      log(
        `role ${c.replica}: ${c.from} -> ${c.to} (${c.reason}${c.borrowedBy ? `, borrowed by ${c.borrowedBy}` : ''})`,
      ),
    ...(admission ? { admission } : {}),
  });
  const admitting = router instanceof AdmittingRouter ? (router as AdmittingRouter<object>) : undefined;
  if (opts.view && !admitting)
    throw new PlbError(
      'BAD_INPUT',
      '--router-view replica needs admission limits (--admission-limit off given)',
    );
  // The limits hand freed slots to the gate's waiters; the gate tells them of this proxy's slots.
  const limits: ReplicaLimits | undefined =
    admitting &&
    new ReplicaLimits(admitting, ids, initialLimit(opts.admission), clock, () => gate.pump(), opts.view);
  const gate = new AdmissionGate(router, admitting, clock, opts.view && limits);
  // Only sessions that queue can make another host's yield: with admission limits.
  const yieldMs = opts.startupYieldMs ?? DEFAULT_STARTUP_YIELD_MS;
  const share = admitting && yieldMs > 0 ? new HostShare(yieldMs) : undefined;
  const stats = new ProxyStats(ids);
  const sessions = new ClientTable(() => clock.now());
  const ended = (s: ClientSession): void => void sessions.delete(s);
  // Removed by a reload: kept down in the router (its sessions drain), whatever its checks say.
  const retired = new Set<string>();
  // A replica a reload added is checked through its own fleet's connector.
  const startedChecks = verifiedConnector(
    opts.connector,
    opts.replicas,
    opts.serverTls ?? 'disable',
    opts.serverCa,
  );
  const addedChecks = new Map<string, Connector>();
  const health = new HealthChecker(
    ids,
    { open: (id, o) => (addedChecks.get(id) ?? startedChecks).open(id, o) },
    { ...opts.health, clock },
    (replica, state, via, cause) => {
      if (state === 'down') router.markDown(replica, clock.now());
      else if (!retired.has(replica)) {
        router.markUp(replica, clock.now());
        // A server back from a restart may have another max_connections.
        if (limits) void readLimit(replica, limits, opts, log);
        gate.pump();
      }
      log(`${replica} ${state} (${via}: ${cause})`);
      // Its open sessions are told at once when the checks found it dead (a killed server's are gone
      // already; a hung one's never return). Not on sessions' own reports: two sessions ended by
      // pg_terminate_backend must not take every other session on that replica with them.
      if (state === 'down' && via === 'health')
        for (const s of sessions) if (s.replica === replica) s.replicaDown(cause);
    },
  );
  // Freemium startups are paced under a flood (held ones are sessions: they count toward the limit).
  const pacing = opts.freemiumPacing ?? DEFAULT_PACER;
  const intake = pacing ? new PacedIntake(pacing) : undefined;
  const cancelKeys = new CancelKeys();
  // Per replica, once: where its sessions connect.
  const targets = new Map(
    opts.replicas.map((r) => [r.id, { replica: r.id, host: r.host, port: r.port }] as const),
  );
  const targetOf = (replica: string): SessionTarget => targets.get(replica) as SessionTarget;
  const relay = nativeRelay(opts, log);
  const early =
    !relay &&
    (opts.earlyConnect ?? true) &&
    opts.classFrom === 'off' &&
    (opts.serverTls ?? 'disable') === 'disable'
      ? earlyTargets(gate, targetOf, stats, intake)
      : undefined;
  const host: SessionHost = {
    classFrom: opts.classFrom,
    startupTimeoutMs: opts.startupTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS,
    connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    connectAttempts: opts.connectAttempts ?? DEFAULT_CONNECT_ATTEMPTS,
    serverKeepalive: serverKeepalive(opts.serverHangMs ?? opts.health.hangMs),
    cancelKeys,
    stats,
    tls: opts.tls,
    serverTls: opts.serverTls ?? 'disable',
    serverCa: opts.serverCa,
    acquire: (cls, ticket, source) => {
      const got = gate.acquire(cls, ticket, source);
      const r = share ? share.watch(cls, source ?? '', ticket, got) : got;
      return typeof r === 'string' ? targetOf(r) : r.then(targetOf);
    },
    share,
    cancelWait: (ticket) => gate.cancel(ticket),
    release: (replica, cls, established) => gate.release(replica, cls, established),
    established: opts.view && ((replica, cls) => limits?.established(replica, cls)),
    markClass: opts.view !== undefined,
    reportFailure: (replica, err, via) => void health.reportFailure(replica, err, via),
    log,
    pace: intake && ((s) => intake.offer(s)),
    ...early,
  };

  const maxClientConn = opts.maxClientConn ?? defaultMaxClientConn();
  const limiter = clientLimiter({ maxClientConn, classes: Object.keys(opts.ports).length });
  // Sampled once a second (the first sample after `door` is made).
  const usage = new UsageSampler(() => door.clients());
  const deps = {
    host,
    limiter,
    added: (s: ClientSession) => void sessions.add(s),
    ended,
    sessions: () => sessions.size,
    noteClients: (n: number) => usage.noteClients(n),
  };
  const door = openFrontDoor(relay, deps);
  const bound: Partial<Record<ServiceClass, number>> = {};
  const t0 = clock.now();
  const statsLine = (): string => {
    const u = usage.now();
    stats.overLimit = door.overLimit();
    return (
      `${formatStatsLine((clock.now() - t0) / 1000, stats, router.snapshot())} | ` +
      `clients ${door.clients()}/${maxClientConn} over-limit ${stats.overLimit} ` +
      (relay ? `relayed ${stats.relayed} (native, ${relay.size} now) ` : '') +
      (stats.lateClass > 0 ? `late-class ${stats.lateClass} ` : '') +
      (stats.startupTimeouts > 0 ? `startup-timeouts ${stats.startupTimeouts} ` : '') +
      (stats.startupYields > 0 ? `startup-yields ${stats.startupYields} ` : '') +
      (stats.earlyConnects > 0 ? `early ${stats.earlyConnects} (unused ${stats.earlyUnused}) ` : '') +
      (intake && intake.counters.held > 0
        ? `held ${intake.held}f (peak ${intake.counters.peakHeld}, expired ${intake.counters.expired}) `
        : '') +
      `queued ${gate.queued('premium')}p/${gate.queued('freemium')}f | rss ${u.rssMiB} MiB fds ${u.fds ?? '?'}`
    );
  };
  try {
    // Limits and the view read before anyone is admitted.
    if (limits) {
      await Promise.all(ids.map((id) => readLimit(id, limits as ReplicaLimits, opts, log)));
      await limits.readAll();
    }
    for (const cls of ['premium', 'freemium'] as const) {
      const port = opts.ports[cls];
      if (port !== undefined) bound[cls] = await door.listen(cls, opts.host, port);
    }
  } catch (err) {
    await door.stop();
    usage.stop();
    await limits?.stop();
    throw err;
  }
  health.start();
  limits?.start();
  let closing: Promise<void> | undefined;
  const closeListeners = (): Promise<void> => {
    if (closing) return closing;
    intake?.stop();
    return (closing = door.stop());
  };
  const statsTimer =
    opts.statsEveryS > 0 ? setInterval(() => log(statsLine()), opts.statsEveryS * 1000) : undefined;

  return {
    ports: bound,
    router,
    stats,
    health,
    gate,
    limits: () => limits?.limits(),
    maxClientConn,
    relay: door.relay,
    usage: () => usage.now(),
    sessionCount: () => door.clients(),
    paced: () => intake && { ...intake.counters, heldNow: intake.held },
    statsLine,
    clients: sessions,
    closeListeners: () => void closeListeners(),
    retired,
    addReplica(replica, how) {
      const refused = addRefusal(replica, targets, relay !== undefined, opts.view !== undefined);
      if (refused !== undefined) throw new PlbError('BAD_INPUT', `${replica.id}: ${refused}`);
      router.addReplica(
        { id: replica.id, weight: how.weight, ...(how.zone !== undefined ? { zone: how.zone } : {}) },
        clock.now(),
      );
      limits?.add(replica.id);
      targets.set(replica.id, { replica: replica.id, host: replica.host, port: replica.port });
      addedChecks.set(
        replica.id,
        verifiedConnector(how.connector, [replica], opts.serverTls ?? 'disable', opts.serverCa),
      );
      health.add(replica.id);
    },
    addRefusal: (replica) => addRefusal(replica, targets, relay !== undefined, opts.view !== undefined),
    retire(replica) {
      retired.add(replica);
      router.markDown(replica, clock.now());
    },
    restore(replica) {
      if (!retired.delete(replica) || !health.isHealthy(replica)) return;
      router.markUp(replica, clock.now());
      gate.pump();
    },
    async stop(graceMs: number) {
      if (statsTimer) clearInterval(statsTimer);
      const closed = closeListeners();
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
      stats.overLimit = door.overLimit();
      health.stop();
      await limits?.stop();
      gate.close();
      share?.close();
      usage.stop();
    },
  };
}

/** Early connections' replicas: a slot free now, under EARLY_MAX held, freemium only unpaced. */
function earlyTargets(
  gate: AdmissionGate,
  targetOf: (replica: string) => SessionTarget,
  stats: ProxyStats,
  intake: PacedIntake | undefined,
): Pick<SessionHost, 'earlyTarget' | 'earlyEnded'> {
  let held = 0;
  return {
    earlyTarget: (cls) => {
      // Under a freemium flood (startups held by the pacer) a connection ahead of the packet is not earned.
      if (held >= EARLY_MAX || (cls === 'freemium' && (intake?.held ?? 0) > 0)) return undefined;
      const replica = gate.tryAcquire(cls);
      if (replica === undefined) return undefined;
      held += 1;
      stats.earlyConnects += 1;
      return targetOf(replica);
    },
    earlyEnded: () => void (held -= 1),
  };
}

/** The native relay for these listeners, or undefined (with a line saying why, unless --relay js). */
function nativeRelay(opts: ProxyOptions, log: (l: string) => void): NativeRelay | undefined {
  const want = opts.relay ?? { kind: 'native', threads: DEFAULT_RELAY_THREADS };
  if (want.kind === 'js') return undefined;
  const blocked = nativeFrontBlocked({
    tls: opts.tls !== undefined,
    serverTls: opts.serverTls ?? 'disable',
    listenHost: opts.host,
    replicaHosts: opts.replicas.map((r) => r.host),
    marks: opts.view !== undefined,
  });
  let relay = blocked ?? NativeRelay.load(want.threads);
  // A relay keeps a front door a proxy, never freed: past its room (a process that started many
  // proxies, a library user's tests say) the next one is served on Node's sockets.
  if (typeof relay !== 'string' && !relay.hasRoom()) relay = 'no room for another front door in this process';
  if (typeof relay !== 'string') return relay;
  log(`native relay: not used (${relay}); clients are served on Node's sockets`);
  return undefined;
}

/** Why a reload cannot add this replica to the running proxy (undefined: it can). */
function addRefusal(
  replica: Endpoint,
  targets: ReadonlyMap<string, unknown>,
  native: boolean,
  view: boolean,
): string | undefined {
  if (targets.has(replica.id)) return 'the id of a replica the proxy has already';
  if (native && isIP(replica.host) === 0)
    return `${replica.host} is not a numeric address, which the native front door needs; restart the proxy to add it`;
  if (view)
    return '--router-view replica reads the replicas the proxy started with; restart the proxy to add one';
  return undefined;
}

/** "3 session(s) (ready 2, startup 1)". */
function describe(sessions: ReadonlySet<ClientSession>): string {
  const by = new Map<string, number>();
  for (const s of sessions) by.set(s.phase, (by.get(s.phase) ?? 0) + 1);
  return `${sessions.size} session(s) (${[...by].map(([p, n]) => `${p} ${n}`).join(', ')})`;
}
