// Issue 49, items 1 and 2: --routers N application instances (sessions given round robin over the
// seeded client order, each instance its own router and checker) and --router-view: local (a
// router counts its own sessions), global (one shared state) and replica (each replica's counts,
// read every interval). One router is the run as it always was.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveBenchFlags } from '../../src/bench/options/resolve.js';
import { routerFor } from '../../src/bench/options/router-settings.js';
import { fleetConnections, RouterFleet, routersOf } from '../../src/bench/router-fleet.js';
import { runBench } from '../../src/bench/run.js';
import { runConfig } from '../../src/bench/series.js';
import { openViewReader, ViewPoller } from '../../src/bench/view-poller.js';
import { VirtualClock } from '../../src/clock/virtual.js';
import { DEFAULT_HEALTH } from '../../src/cluster/health.js';
import type { ClassCounts, SessionCountReader } from '../../src/cluster/session-counts.js';
import { createSimCluster } from '../../src/cluster/sim/index.js';
import { loadPlan } from '../../src/faults/plan.js';
import { disagreeingReplicas } from '../../src/metrics/routers/router-book.js';
import { createRunWriter } from '../../src/metrics/store/run-writer.js';
import type { RunEvent, RunWriter } from '../../src/metrics/types.js';
import { createRouter } from '../../src/router/index.js';
import { configSchema, type BenchConfig, type RoutersConfig } from '../../src/run-format/config.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { instanceOf } from '../../src/workload/arrivals.js';
import { DEFAULT_WORKLOAD } from '../../src/workload/spec.js';
import { benchFlagValues } from '../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'plb-routers-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const IDS = ['r1', 'r2', 'r3', 'r4', 'r5'];
const routers = (count: number, view: RoutersConfig['view'], viewIntervalMs = 1000): RoutersConfig => ({
  count,
  view,
  assignment: 'round-robin',
  viewIntervalMs,
});

/** A run writer that keeps its events (the fleet writes role and detect events). */
function eventsWriter(): { writer: RunWriter; events: RunEvent[] } {
  const events: RunEvent[] = [];
  return { writer: { event: (e: RunEvent) => events.push(e) } as unknown as RunWriter, events };
}

const plbConfig = (r?: RoutersConfig): BenchConfig => ({
  plan: { ...loadPlan('plans/demo-cascade.yaml'), path: 'plans/demo-cascade.yaml' },
  strategy: 'plb',
  workload: { ...DEFAULT_WORKLOAD, clients: 32 },
  seed: 5,
  health: DEFAULT_HEALTH,
  oracle: false,
  reference: { premium: 2, mixed: 1, freemium: 2 },
  partition: { premium: 3, freemium: 2 },
  slowStartMs: 10_000,
  replicaCpus: 0.25,
  ...(r ? { routers: r } : {}),
});

/** One simulated demo-cascade run through runBench. */
async function simulate(r?: RoutersConfig): Promise<{ summary: RunSummary; dir: string }> {
  const sim = createSimCluster({ name: 'routers', replicas: 5, sessions: 32, over: {}, stateDir: root });
  sim.driver.beginRun(5);
  const config = { ...plbConfig(r), replicaCpus: sim.driver.spec.cpus };
  const out = mkdtempSync(join(root, 'run-'));
  const res = await sim.clock.run(() =>
    runBench(config, {
      driver: sim.driver,
      clock: sim.clock,
      log: () => undefined,
      createWriter: (ids) =>
        createRunWriter({
          outDir: out,
          strategy: 'plb',
          plan: config.plan.name,
          seed: config.seed,
          clients: 32,
          mix: config.workload.mix,
          replicas: ids,
          refWindowS: config.plan.referenceWindow,
          warmupS: config.plan.warmup,
          clock: () => new Date(0),
        }),
    }),
  );
  return { summary: res.summary, dir: res.dir };
}

const comparable = (s: RunSummary): unknown => ({ ...s, runId: undefined, startedAt: undefined });

describe('which instance a session belongs to', () => {
  it('is round robin over the seeded order: one instance takes everything, N share evenly', () => {
    expect(Array.from({ length: 6 }, (_, i) => instanceOf(i, 1))).toEqual([0, 0, 0, 0, 0, 0]);
    expect(Array.from({ length: 7 }, (_, i) => instanceOf(i, 3))).toEqual([0, 1, 2, 0, 1, 2, 0]);
  });
});

describe('one router is the run as it always was', () => {
  it('gives the same summary with routers absent, 1 local and 1 global, and no per-router section', async () => {
    const before = await simulate();
    const local = await simulate(routers(1, 'local'));
    const global = await simulate(routers(1, 'global'));
    expect(before.summary.routers).toBeUndefined();
    expect(comparable(local.summary)).toEqual(comparable(before.summary));
    expect(comparable(global.summary)).toEqual(comparable(before.summary));
  });
});

describe('N routers on the simulator', () => {
  it('shares the sessions among the instances and reports each router', async () => {
    const { summary } = await simulate(routers(4, 'local'));
    const r = summary.routers;
    expect(r).toMatchObject({ count: 4, view: 'local' });
    expect(r?.perRouter.map((p) => p.router)).toEqual([0, 1, 2, 3]);
    // Every session opened was one instance's: the per-router counts add up to the run's.
    const opened = (cls: 'premium' | 'freemium') =>
      summary.phases.reduce((a, p) => a + p.classes[cls].sessionsOpened, 0);
    const sum = (cls: 'premium' | 'freemium') => r?.perRouter.reduce((a, p) => a + p.sessions[cls], 0);
    // (The phases leave out the warm-up's sessions; the instances count the whole run's.)
    expect(sum('premium')).toBeGreaterThanOrEqual(opened('premium'));
    expect(sum('freemium')).toBeGreaterThanOrEqual(opened('freemium'));
    expect(r?.perRouter.every((p) => p.sessions.premium + p.sessions.freemium > 0)).toBe(true);
    // A phase per summary phase, and the fault interval.
    expect(r?.disagreement.map((d) => d.phase)).toEqual([...summary.phases.map((p) => p.name), 'fault']);
    // Each router's own checker saw the kills: the summary's detection table is the first router's.
    expect(summary.detection.map((d) => d.action)).toEqual(['down', 'down', 'rejoin', 'rejoin']);
  });

  it('shares one router state in the global view: the routers never disagree', async () => {
    const { summary } = await simulate(routers(3, 'global'));
    expect(summary.routers?.disagreement.every((d) => d.maxReplicas === 0 || d.maxReplicas === null)).toBe(
      true,
    );
    expect(summary.routers?.perRouter.slice(1).every((p) => p.borrowFlips === 0)).toBe(true);
  });
});

describe('what each router knows', () => {
  const config = plbConfig();

  it('local: a router counts only its own sessions', () => {
    const { writer } = eventsWriter();
    const fleet = new RouterFleet(
      { ...config, routers: routers(2, 'local') },
      IDS,
      routerFor(config),
      writer,
    );
    expect(fleet.routers).toHaveLength(2);
    const a = fleet.routers[0]!.admit('premium', 0);
    const count = (j: number) =>
      fleet.routers[j]!.snapshot().reduce((s, r) => s + r.sessions.premium + r.sessions.freemium, 0);
    expect(count(0)).toBe(1);
    expect(count(1)).toBe(0);
    // The timeline's view is every session really open.
    expect(fleet.sampled.snapshot().find((s) => s.id === a.replica)?.sessions.premium).toBe(1);
  });

  it('global: every instance goes through one router', () => {
    const { writer } = eventsWriter();
    const fleet = new RouterFleet(
      { ...config, routers: routers(4, 'global') },
      IDS,
      routerFor(config),
      writer,
    );
    expect(fleet.routers).toHaveLength(1);
    expect([0, 1, 2, 3].map((i) => fleet.routerOf(i))).toEqual([0, 0, 0, 0]);
  });

  it("each router's health view is its own: one router's markDown leaves the other's roles", () => {
    const { writer, events } = eventsWriter();
    const fleet = new RouterFleet(
      { ...config, routers: routers(2, 'local') },
      IDS,
      routerFor(config),
      writer,
    );
    fleet.setHealth(1, 'r1', 'down', 'health', 'unreachable', 500);
    expect(fleet.routers[0]!.snapshot().find((s) => s.id === 'r1')?.healthy).toBe(true);
    expect(fleet.routers[1]!.snapshot().find((s) => s.id === 'r1')?.healthy).toBe(false);
    // The second router's events say whose they are; the first's stay as one router's always were.
    expect(events.filter((e) => e.type === 'detect')).toEqual([
      expect.objectContaining({ replica: 'r1', state: 'down', router: 1 }),
    ]);
    fleet.setHealth(0, 'r2', 'down', 'health', 'unreachable', 600);
    expect(events.filter((e) => e.type === 'detect').at(-1)).not.toHaveProperty('router');
  });

  it('replica: the counts read from the replicas reach the routers only every interval', async () => {
    const { writer } = eventsWriter();
    const fleet = new RouterFleet(
      { ...config, routers: routers(2, 'replica') },
      IDS,
      routerFor(config),
      writer,
    );
    const onReplica: Record<string, ClassCounts> = Object.fromEntries(
      IDS.map((id) => [id, { premium: 0, freemium: 0 }]),
    );
    const reader: SessionCountReader = {
      connectionsPerReplica: 1,
      read: (id) => Promise.resolve({ ...onReplica[id]! }),
      close: () => Promise.resolve(),
    };
    const clock = new VirtualClock();
    const poller = new ViewPoller(reader, IDS, fleet.observers(), clock, 1000);
    const seen = (j: number, id: string) =>
      fleet.routers[j]!.snapshot().find((s) => s.id === id)?.sessions.freemium ?? -1;
    await clock.run(async () => {
      poller.start();
      await clock.sleep(10);
      // Router 0 admits a session: it counts it at once; router 1 hears of it at the next read.
      const a = fleet.routers[0]!.admit('freemium', clock.now());
      onReplica[a.replica]!.freemium += 1;
      expect(seen(0, a.replica)).toBe(1);
      expect(seen(1, a.replica)).toBe(0);
      await clock.sleep(980);
      expect(seen(1, a.replica)).toBe(0);
      await clock.sleep(20);
      expect(seen(1, a.replica)).toBe(1);
      // A session another process opened: both routers see it after the read, not before.
      onReplica['r5']!.freemium = 7;
      await clock.sleep(900);
      expect(seen(0, 'r5')).toBe(0);
      await clock.sleep(200);
      expect([seen(0, 'r5'), seen(1, 'r5')]).toEqual([7, 7]);
      await poller.stop();
    });
    expect(poller.reads).toBeGreaterThan(0);
  });

  it("replica: the simulator's reader counts each server's backends by class, and a dead one does not answer", async () => {
    const sim = createSimCluster({ name: 'reader', replicas: 2, sessions: 8, over: {}, stateDir: root });
    sim.driver.beginRun(1);
    const reader = sim.driver.sessionCounts();
    const connector = sim.driver.connector();
    await sim.clock.run(async () => {
      const open = (applicationName: string) =>
        connector.open('r1', { connectTimeoutMs: 1000, applicationName, onError: () => undefined });
      const conns = await Promise.all(['plb-premium', 'plb-premium', 'plb-freemium', 'plb-health'].map(open));
      expect(await reader.read('r1')).toEqual({ premium: 2, freemium: 1 });
      expect(await reader.read('r2')).toEqual({ premium: 0, freemium: 0 });
      await conns[0]!.end(0);
      await sim.clock.sleep(50);
      expect(await reader.read('r1')).toEqual({ premium: 1, freemium: 1 });
      await sim.driver.kill('r1');
      await expect(reader.read('r1')).rejects.toThrow(/does not answer/);
    });
  });

  it('replica: a simulated run with the view reports its routers', async () => {
    const { summary } = await simulate(routers(2, 'replica', 500));
    expect(summary.routers?.view).toBe('replica');
  });
});

describe('routers in config.json', () => {
  const flags = (over: Parameters<typeof benchFlagValues>[3]) =>
    benchFlagValues(root, 'routers', 20452, { driver: 'sim', ...over });

  it('records the resolved routers, which config.json reads back; older runs read as one router', () => {
    const bench = resolveBenchFlags(
      flags({ routers: '4', 'router-view': 'replica', 'view-interval': '500ms' }),
    );
    const config = runConfig({ ...bench.config, replicaCpus: 0.25 }, bench.runs[0]!);
    expect(config.routers).toEqual(routers(4, 'replica', 500));
    const back = configSchema.parse(JSON.parse(JSON.stringify(config)));
    expect(back.routers).toEqual(config.routers);
    expect(routersOf({})).toEqual(routers(1, 'local'));
    expect(resolveBenchFlags(flags({})).config.routers).toEqual(routers(1, 'local'));
  });

  it('sizes the cluster for every checker and the reader', () => {
    expect(fleetConnections(routers(1, 'local'))).toBe(0);
    expect(fleetConnections(routers(16, 'local'))).toBe(15);
    expect(fleetConnections(routers(16, 'global'))).toBe(0);
    expect(fleetConnections(routers(4, 'replica'))).toBe(4);
  });
});

describe('bad input: one line naming the flag, before anything starts', () => {
  const flags = (over: Parameters<typeof benchFlagValues>[3]) =>
    benchFlagValues(root, 'routers', 20452, over);
  const fails = (over: Parameters<typeof benchFlagValues>[3]) => () => resolveBenchFlags(flags(over));

  it('refuses N < 1 or not an integer', () => {
    for (const n of ['0', '-2', '1.5', 'four', ''])
      expect(fails({ routers: n })).toThrow(/^--routers: must be an integer 1\.\.1000/);
  });

  it('refuses --routers and --router-view with --strategy via (the balancer is the router)', () => {
    const via = { strategies: 'via', via: '127.0.0.1:20400' };
    expect(fails({ ...via, routers: '1' })).toThrow(/^--routers: not with --strategy via/);
    expect(fails({ ...via, 'router-view': 'global' })).toThrow(/^--router-view: not with --strategy via/);
  });

  it('refuses a view no router of the run could take, and an interval without the replica view', () => {
    expect(fails({ 'router-view': 'nearby' })).toThrow(/^--router-view: must be local, global, replica/);
    expect(fails({ 'view-interval': '2s' })).toThrow(/^--view-interval: only with --router-view replica/);
    expect(fails({ 'router-view': 'replica', 'view-interval': '5ms' })).toThrow(/^--view-interval: must be/);
    // The queueing strategies judge their limits by the counts read (admission-observed.test.ts).
    expect(fails({ strategies: 'plb,plb-admit,lc-queue', 'router-view': 'replica' })).not.toThrow();
  });

  it('refuses the replica view on a driver that cannot read the replicas, and a replica it cannot read', async () => {
    const config = plbConfig(routers(2, 'replica'));
    const creds = { user: 'u', password: 'p', database: 'd' };
    await expect(openViewReader({ kind: 'external' }, creds, IDS, config)).rejects.toThrow(
      /^--router-view replica: the external driver cannot read/,
    );
    let closed = false;
    const refusing: SessionCountReader = {
      connectionsPerReplica: 1,
      read: (id) =>
        id === 'r1'
          ? Promise.resolve({ premium: 0, freemium: 0 })
          : Promise.reject(new Error('permission denied')),
      close: () => {
        closed = true;
        return Promise.resolve();
      },
    };
    await expect(
      openViewReader({ kind: 'external', sessionCounts: () => refusing }, creds, IDS, config),
    ).rejects.toThrow(
      /^--router-view replica: cannot read the sessions of r2 from pg_stat_activity: permission denied/,
    );
    expect(closed).toBe(true);
    // Other views need no reader.
    expect(
      await openViewReader({ kind: 'external' }, creds, IDS, plbConfig(routers(2, 'local'))),
    ).toBeUndefined();
  });
});

describe('the pieces', () => {
  it('observeSessions sets a replica count, and the router counts on from it', () => {
    const r = createRouter({ strategy: 'lc', replicas: ['a', 'b'] });
    r.observeSessions?.('a', { premium: 5, freemium: 5 }, 0);
    expect(r.admit('premium', 0).replica).toBe('b');
    expect(r.snapshot().find((s) => s.id === 'a')?.sessions).toEqual({ premium: 5, freemium: 5 });
    expect(() => r.observeSessions?.('a', { premium: -1, freemium: 0 }, 0)).toThrow(/integer >= 0/);
  });

  it('counts the replicas two routers see differently (role, borrowed, down)', () => {
    const v = (role: string, healthy = true, borrowedBy?: string) => ({ id: 'x', role, healthy, borrowedBy });
    expect(
      disagreeingReplicas([
        [v('premium'), v('mixed')],
        [v('premium'), v('mixed')],
      ]),
    ).toBe(0);
    expect(
      disagreeingReplicas([
        [v('premium'), v('mixed')],
        [v('premium', false), v('freemium')],
      ]),
    ).toBe(2);
    expect(disagreeingReplicas([[v('freemium', true, 'premium')], [v('freemium')], [v('freemium')]])).toBe(1);
    expect(disagreeingReplicas([])).toBe(0);
  });

  it("builds every instance's router from the config (routerFor) and names it", () => {
    const cfg = plbConfig(routers(3, 'local'));
    const fleet = new RouterFleet(cfg, IDS, routerFor(cfg), eventsWriter().writer);
    expect(fleet.routers.map((r) => r.snapshot().length)).toEqual([5, 5, 5]);
    expect(fleet.book?.count).toBe(3);
  });
});
