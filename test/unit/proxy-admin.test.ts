// The admin view's document, the drain's course and their HTTP routes, on a proxy's parts faked.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { AdminRunner } from '../../src/proxy/admin/admin-runner.js';
import type { ProxyHandle } from '../../src/proxy/proxy-server.js';
import { ClientTable } from '../../src/proxy/admin/client-table.js';
import { adminView, type AdminSource } from '../../src/proxy/admin/admin-view.js';
import { ProxyDrain } from '../../src/proxy/admin/drain.js';
import { adminRoutes } from '../../src/proxy/admin/admin-routes.js';
import { startMetricsServer } from '../../src/metrics/metrics-server.js';
import { ProxyStats } from '../../src/proxy/stats.js';
import type { ClientSession } from '../../src/proxy/session/session-host.js';
import type { ReplicaSnapshot } from '../../src/router/types.js';
import type { ServiceClass } from '../../src/core/service-class.js';

function session(cls: ServiceClass, phase: string, replica: string | undefined): ClientSession {
  return {
    cls,
    phase,
    replica,
    done: Promise.resolve(),
    shutdown: () => undefined,
    replicaDown: () => undefined,
  };
}

function source(over: { now?: number; healthy?: boolean; draining?: boolean } = {}) {
  let now = 1000;
  const clients = new ClientTable(() => now);
  const snapshot: ReplicaSnapshot[] = [
    {
      id: 'r1',
      healthy: over.healthy ?? true,
      role: 'premium',
      weight: 1,
      sessions: { premium: 3, freemium: 0 },
    },
    { id: 'r2', healthy: true, role: 'freemium', weight: 2, sessions: { premium: 0, freemium: 5 } },
  ];
  const zero = { queuedAdmitted: 0, queueFull: 0, timedOut: 0, maxWaitMs: 0 };
  const proxy = {
    router: { snapshot: () => snapshot },
    stats: new ProxyStats(['r1', 'r2']),
    gate: {
      queued: (cls: ServiceClass) => (cls === 'premium' ? 0 : 7),
      counters: { premium: zero, freemium: zero },
    },
    limits: () => ({ r1: 40, r2: 40 }),
    maxClientConn: 20_000,
    relay: 'js',
    usage: () => ({ rssMiB: 50, fds: 10, fdLimit: 1024, peakRssMiB: 50, peakFds: 10, peakClients: 3 }),
    sessionCount: () => clients.size,
    paced: () => undefined,
    clients,
  } as unknown as AdminSource['proxy'];
  const src: AdminSource = {
    proxy,
    strategy: 'plb',
    startedMs: 0,
    now: () => now,
    admission: { queue: 1000, timeoutMs: 10_000, premiumReserve: 0.1, freemiumReserve: 0.1 },
    draining: () => over.draining ?? false,
  };
  return { src, clients, setNow: (ms: number) => (now = ms) };
}

describe('the admin view', () => {
  it('counts 10,000 clients exactly and lists a bounded number, the oldest first', () => {
    const { src, clients, setNow } = source();
    for (let i = 0; i < 10_000; i++) {
      setNow(1000 + i);
      clients.add(
        session(
          i % 4 === 0 ? 'premium' : 'freemium',
          i % 10 === 0 ? 'waiting' : 'ready',
          i % 10 === 0 ? undefined : `r${(i % 2) + 1}`,
        ),
      );
    }
    setNow(21_000);
    const v = adminView(src);
    expect(v.clients.total).toBe(10_000);
    expect(v.clients.byClass).toEqual({ premium: 2500, freemium: 7500 });
    expect(v.clients.byState).toEqual({ waiting: 1000, ready: 9000 });
    expect(v.clients.byReplica.r1! + v.clients.byReplica.r2!).toBe(9000);
    expect(v.clients.listed).toHaveLength(100);
    expect(v.clients.truncated).toBe(true);
    expect(v.clients.listed[0]).toEqual({ class: 'premium', replica: null, state: 'waiting', ageS: 20 });
    expect(v.clients.listed[1]).toMatchObject({ class: 'freemium', replica: 'r2', ageS: 20 });
    expect(adminView(src, 0).clients.listed).toEqual([]);
    expect(adminView(src, 10_000).clients.truncated).toBe(false);
    expect(JSON.stringify(v).length).toBeLessThan(20_000);
  });

  it('says replicas, pools, limits and the proxy state as they are', () => {
    const down = source({ healthy: false, draining: true });
    const v = adminView({ ...down.src, drainingReplicas: () => new Set(['r2']) });
    expect(v.proxy).toMatchObject({ state: 'draining', strategy: 'plb', uptimeS: 1, maxClientConn: 20_000 });
    expect(v.replicas.map((r) => [r.id, r.role, r.state, r.limit])).toEqual([
      ['r1', 'premium', 'down', 40],
      ['r2', 'freemium', 'draining', 40],
    ]);
    expect(v.pools.map((p) => [p.class, p.sessions, p.waiting])).toEqual([
      ['premium', 3, 0],
      ['freemium', 5, 7],
    ]);
    const none = source();
    const proxy = { ...none.src.proxy, limits: () => undefined } as AdminSource['proxy'];
    expect(
      adminView({ ...none.src, proxy }).replicas.every((r) => r.limit === null && r.state === 'up'),
    ).toBe(true);
  });
});

describe('the drain', () => {
  it('closes the listeners once, logs its start and the last session, ends drained', async () => {
    const clients = new ClientTable(() => 0);
    const a = session('premium', 'ready', 'r1');
    const b = session('freemium', 'ready', 'r2');
    clients.add(a).add(b);
    let closed = 0;
    const log: string[] = [];
    const drain = new ProxyDrain(
      { clients, closeListeners: () => void (closed += 1) },
      { timeoutMs: 0, log: (l) => log.push(l) },
    );
    expect(drain.draining).toBe(false);
    expect(drain.start('test')).toBe(true);
    expect(drain.start('again')).toBe(false);
    expect(closed).toBe(1);
    expect(log[0]).toBe('draining (test): listeners closed; waiting for 2 session(s) to end (no time limit)');
    clients.delete(a);
    clients.delete(b);
    expect(await drain.finished).toBe('drained');
    expect(log.at(-1)).toMatch(/^drained: the last session ended .* m?s after the drain began; exiting$/);
  });

  it('with no session open it ends at once; with a timeout that passes, it ends timed out', async () => {
    const empty = new ProxyDrain(
      { clients: new ClientTable(() => 0), closeListeners: () => undefined },
      { timeoutMs: 0, log: () => undefined },
    );
    empty.start('test');
    expect(await empty.finished).toBe('drained');
    const clients = new ClientTable(() => 0);
    clients.add(session('premium', 'ready', 'r1'));
    const log: string[] = [];
    const held = new ProxyDrain(
      { clients, closeListeners: () => undefined },
      { timeoutMs: 20, log: (l) => log.push(l) },
    );
    held.start('test');
    expect(await held.finished).toBe('timeout');
    expect(log.at(-1)).toBe('draining: --drain-timeout 20 ms passed with 1 session(s) open; closing them');
  });
});

describe('the admin routes on the metrics port', () => {
  it('GET /admin (503 before the proxy listens, 400 for a bad bound), POST /drain, 404 naming the routes', async () => {
    const { src, clients } = source();
    clients.add(session('premium', 'ready', 'r1'));
    let state: { view: AdminSource; drain: ProxyDrain } | undefined;
    const routes = adminRoutes(() => state);
    const server = await startMetricsServer(0, () => Promise.resolve('plb_x 1\n'), '--metrics-port', routes);
    const url = `http://127.0.0.1:${server.port}`;
    try {
      expect((await fetch(`${url}/admin`)).status).toBe(503);
      const drain = new ProxyDrain(
        { clients, closeListeners: () => undefined },
        { timeoutMs: 0, log: () => undefined },
      );
      state = { view: { ...src, draining: () => drain.draining }, drain };
      const ok = await fetch(`${url}/admin?clients=1`);
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as { clients: { total: number } }).clients.total).toBe(1);
      for (const bad of ['-1', '1.5', 'x', '100001'])
        expect((await fetch(`${url}/admin?clients=${bad}`)).status).toBe(400);
      expect(await (await fetch(`${url}/metrics`)).text()).toBe('plb_x 1\n');
      const missing = await fetch(`${url}/nothing`);
      expect(missing.status).toBe(404);
      expect(await missing.text()).toBe('not found: GET /metrics, GET /admin, POST /drain\n');
      expect((await fetch(`${url}/drain`)).status).toBe(404);
      const d = await fetch(`${url}/drain`, { method: 'POST' });
      expect(d.status).toBe(202);
      expect(await d.json()).toEqual({ state: 'draining', started: true, sessions: 1 });
      expect(await (await fetch(`${url}/drain`, { method: 'POST' })).json()).toMatchObject({
        started: false,
      });
      expect(((await (await fetch(`${url}/admin`)).json()) as { proxy: { state: string } }).proxy.state).toBe(
        'draining',
      );
      // Only from this host (the port is bound to 127.0.0.1; a route told of another peer refuses).
      expect((await routes['POST /drain']!(new URLSearchParams(), '10.0.0.9')).status).toBe(403);
    } finally {
      await server.close();
    }
  });
});

describe('the admin runner (the command around a running proxy)', () => {
  it('a SIGUSR2 before the proxy listens drains it once it does; the run ends with no grace left', async () => {
    const signals = new EventEmitter();
    const log: string[] = [];
    const runner = new AdminRunner({
      drainTimeoutMs: 0,
      log: (l) => log.push(l),
      signals: signals as unknown as NodeJS.Process,
    });
    expect(signals.listenerCount('SIGUSR2')).toBe(1);
    signals.emit('SIGUSR2');
    const { src, clients } = source();
    const s = session('premium', 'ready', 'r1');
    clients.add(s);
    let closed = 0;
    const proxy = { ...src.proxy, closeListeners: () => void (closed += 1) } as unknown as ProxyHandle;
    runner.attach(proxy, { strategy: 'plb', startedMs: 0, admission: null });
    expect(closed).toBe(1);
    expect(log[0]).toMatch(/^draining \(SIGUSR2, while starting\): listeners closed; waiting for 1 session/);
    const until = runner.until(new AbortController().signal, 30_000);
    clients.delete(s);
    expect(await until).toBe(0);
    runner.dispose();
    expect(signals.listenerCount('SIGUSR2')).toBe(0);
  });

  it('a stop signal ends the run with the stop timeout', async () => {
    const signals = new EventEmitter();
    const runner = new AdminRunner({
      drainTimeoutMs: 0,
      log: () => undefined,
      signals: signals as unknown as NodeJS.Process,
    });
    const { src } = source();
    runner.attach({ ...src.proxy, closeListeners: () => undefined } as unknown as ProxyHandle, {
      strategy: 'plb',
      startedMs: 0,
      admission: null,
    });
    const stop = new AbortController();
    const until = runner.until(stop.signal, 30_000);
    stop.abort();
    expect(await until).toBe(30_000);
    runner.dispose();
  });
});
