// The simulator's network faults (cluster/sim/net-model.ts) on the virtual clock: what a client
// and the health checker see of a partition, a reset, delay, loss, bandwidth and a WAL-only cut.
// Every figure is virtual time; nothing here waits on the wall clock.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock/virtual.js';
import type { OpenOptions } from '../../src/cluster/connector.js';
import { HealthChecker } from '../../src/cluster/health.js';
import { loadCalibration, type SimCalibration } from '../../src/cluster/sim/calibration.js';
import { SimDriver } from '../../src/cluster/sim/driver.js';
import { nextRetransmission, responseBytes } from '../../src/cluster/sim/net-model.js';
import { classifyFailure } from '../../src/core/failure-cause.js';
import { Rng } from '../../src/core/rng.js';
import type { ClusterSpec } from '../../src/run-format/cluster-record.js';
import type { FaultFields } from '../../src/run-format/fault-actions.js';
import { makeQuery } from '../../src/workload/statements.js';

// Fixed costs (no variation): a query is 1 ms of CPU, a connect 1 ms of latency and 1 of CPU.
const cal: SimCalibration = {
  ...loadCalibration(),
  templates: {
    point: { meanMs: 1, cv: 0 },
    range: { meanMs: 1, cv: 0 },
    scan: { meanMs: 1, cv: 0 },
  },
  queryOverheadMs: 0,
  connect: { cpuMs: 1, latencyMs: 1 },
  healthCpuMs: 0.1,
  restartMs: 1000,
  catchUpMs: 0,
};

function simCluster(seed = 1): { driver: SimDriver; clock: VirtualClock } {
  const clock = new VirtualClock();
  const spec: ClusterSpec = {
    name: 'sim-net',
    replicas: 2,
    basePort: 30000,
    cpus: 1,
    primaryCpus: 1,
    memoryMb: 0,
    maxConnections: 50,
    stateDir: '/nonexistent',
  };
  return { driver: new SimDriver(spec, clock, cal, 'test', seed), clock };
}

const POINT = makeQuery('point', 100, new Rng(1)).text;
const SCAN = makeQuery('scan', 100, new Rng(1)).text;
const QUERY_TIMEOUT = 15_000;
const CONNECT_TIMEOUT = 10_000;

function opts(errors: Error[] = []): OpenOptions {
  return {
    connectTimeoutMs: CONNECT_TIMEOUT,
    queryTimeoutMs: QUERY_TIMEOUT,
    applicationName: 't',
    onError: (e) => errors.push(e),
  };
}

/** How a promise ended, and when (virtual ms). */
async function outcome(
  clock: VirtualClock,
  p: Promise<unknown>,
): Promise<{ ms: number; err: (Error & { code?: string }) | undefined }> {
  const t0 = clock.now();
  try {
    await p;
    return { ms: clock.now() - t0, err: undefined };
  } catch (err) {
    return { ms: clock.now() - t0, err: err as Error };
  }
}

const fault = (d: SimDriver, action: keyof SimDriver['faults'], id: string, a: FaultFields = {}) =>
  d.faults[action](id, { cpus: 1, ...a });

describe('a partitioned replica (simulated)', () => {
  it('hangs a query on an open session until the client timeout, not before; the other replica goes on', async () => {
    const { driver, clock } = simCluster();
    const c = driver.connector();
    await clock.run(async () => {
      const [s1, s2] = await Promise.all([c.open('r1', opts()), c.open('r2', opts())]);
      await fault(driver, 'partition', 'r1');
      const hung = outcome(clock, s1.query(POINT));
      const other = await outcome(clock, s2.query(POINT));
      expect(other.err).toBeUndefined();
      expect(other.ms).toBeLessThan(10);
      const r = await hung;
      expect(r.ms).toBe(QUERY_TIMEOUT);
      expect(classifyFailure(r.err)).toBe('slow');
    });
  });

  it('hangs a connect until the connect timeout', async () => {
    const { driver, clock } = simCluster();
    await clock.run(async () => {
      await fault(driver, 'partition', 'r1');
      const r = await outcome(clock, driver.connector().open('r1', opts()));
      expect(r.ms).toBe(CONNECT_TIMEOUT);
      expect(classifyFailure(r.err)).toBe('slow');
    });
  });

  it('one way (in or out) still hangs the exchange; out runs the query on the server', async () => {
    for (const direction of ['in', 'out'] as const) {
      const { driver, clock } = simCluster();
      const c = driver.connector();
      await clock.run(async () => {
        const s = await c.open('r1', opts());
        const cpu0 = (await driver.cpuSeconds()).r1 ?? 0;
        await fault(driver, 'partition', 'r1', { direction });
        const r = await outcome(clock, s.query(POINT));
        expect(r.ms).toBe(QUERY_TIMEOUT);
        const ran = ((await driver.cpuSeconds()).r1 ?? 0) - cpu0;
        // in: the request never arrived; out: it ran (1 ms), its answer was dropped.
        expect(ran * 1000).toBeCloseTo(direction === 'out' ? 1 : 0, 6);
        expect((await outcome(clock, c.open('r1', opts()))).ms).toBe(CONNECT_TIMEOUT);
      });
    }
  });

  it('an exchange already answered before an inbound-only cut completes', async () => {
    const { driver, clock } = simCluster();
    await clock.run(async () => {
      const s = await driver.connector().open('r1', opts());
      const q = outcome(clock, s.query(SCAN));
      await clock.sleep(0.5);
      await fault(driver, 'partition', 'r1', { direction: 'in' });
      const r = await q;
      expect(r.err).toBeUndefined();
      expect(r.ms).toBeLessThan(10);
    });
  });

  it('after the heal, a held query arrives at its next retransmission (heal + backoff), new connects work', async () => {
    const { driver, clock } = simCluster();
    const c = driver.connector();
    await clock.run(async () => {
      const s = await c.open('r1', opts());
      await fault(driver, 'partition', 'r1');
      const t0 = clock.now();
      const q = outcome(clock, s.query(POINT));
      const conn = outcome(clock, c.open('r1', opts()));
      await clock.sleep(5000);
      await fault(driver, 'heal', 'r1');
      // Data resent at 200, 600, 1400, 3000, 6200 ms after it was sent: 6200 is the first after 5000.
      const r = await q;
      expect(r.err).toBeUndefined();
      expect(r.ms).toBeGreaterThanOrEqual(6200);
      expect(r.ms).toBeLessThan(6200 + 10);
      // The SYN: resent at 1, 3, 7 s: the connect goes on at 7 s.
      const o = await conn;
      expect(o.err).toBeUndefined();
      expect(o.ms).toBeGreaterThanOrEqual(7000);
      expect(o.ms).toBeLessThan(7000 + 10);
      expect(clock.now() - t0).toBeLessThan(7100);
      const fresh = await outcome(clock, c.open('r1', opts()));
      expect(fresh.err).toBeUndefined();
      expect(fresh.ms).toBeLessThan(10);
    });
  });

  it('the retransmission schedule doubles from the RTO and is capped', () => {
    expect(nextRetransmission(0, 200, 0)).toBe(200);
    expect(nextRetransmission(0, 200, 201)).toBe(600);
    expect(nextRetransmission(0, 1000, 3000)).toBe(3000);
    // 1, 3, 7, 15, 31, 63, 127, then +120 s each.
    expect(nextRetransmission(0, 1000, 128_000)).toBe(247_000);
  });

  it('is detected down by the checker after its hang timeout, not before, and up again after the heal', async () => {
    const { driver, clock } = simCluster();
    const changes: { id: string; state: string; at: number }[] = [];
    const hc = new HealthChecker(
      ['r1', 'r2'],
      driver.connector(),
      { intervalMs: 1000, timeoutMs: 1000, fall: 2, rise: 2, hangMs: 5000, clock },
      (id, state) => changes.push({ id, state, at: clock.now() }),
    );
    await clock.run(async () => {
      hc.start();
      await clock.sleep(10_500);
      await fault(driver, 'partition', 'r1');
      await clock.sleep(20_000);
      await fault(driver, 'heal', 'r1');
      await clock.sleep(20_000);
      hc.stop();
    });
    const down = changes.find((x) => x.state === 'down');
    expect(down?.id).toBe('r1');
    const detectMs = (down?.at ?? 0) - 10_500;
    // The first check after the cut hangs; it counts at hangMs and again an interval later (fall 2).
    expect(detectMs).toBeGreaterThanOrEqual(5000);
    expect(detectMs).toBeLessThanOrEqual(5000 + 2 * 1000 + 1);
    const up = changes.find((x) => x.state === 'up');
    expect(up?.id).toBe('r1');
    expect(up?.at).toBeGreaterThan(30_500);
    expect(changes.filter((x) => x.id === 'r2')).toEqual([]);
  });
});

describe('a reset replica (simulated)', () => {
  it('fails busy and idle connections at once (ECONNRESET), refuses connects until the heal', async () => {
    const { driver, clock } = simCluster();
    const c = driver.connector();
    const idle: Error[] = [];
    await clock.run(async () => {
      const busy = await c.open('r1', opts());
      await c.open('r1', opts(idle));
      const q = outcome(clock, busy.query(SCAN));
      await fault(driver, 'reset', 'r1');
      const r = await q;
      expect(r.ms).toBe(0);
      expect(r.err?.code).toBe('ECONNRESET');
      expect(classifyFailure(r.err)).toBe('unreachable');
      await clock.sleep(0);
      expect(idle.map((e) => (e as { code?: string }).code)).toEqual(['ECONNRESET']);
      const refused = await outcome(clock, c.open('r1', opts()));
      expect(refused.ms).toBe(0);
      expect(refused.err?.code).toBe('ECONNREFUSED');
      expect(classifyFailure(refused.err)).toBe('unreachable');
      await fault(driver, 'heal', 'r1');
      const back = await c.open('r1', opts());
      expect((await outcome(clock, back.query(POINT))).err).toBeUndefined();
    });
    // The server was never down: a reset is the network's.
    expect((await driver.status()).find((s) => s.id === 'r1')?.up).toBe(true);
  });
});

describe('a delayed replica (simulated)', () => {
  it('holds every message ms, both ways: 2·ms a round trip, a query one, a connect four', async () => {
    const base = simCluster();
    const slow = simCluster();
    const timings = async (d: SimDriver, clock: VirtualClock) =>
      clock.run(async () => {
        const open = await outcome(clock, d.connector().open('r1', opts()));
        const s = await d.connector().open('r1', opts());
        const q1 = await outcome(clock, s.query(POINT));
        const q2 = await outcome(clock, s.query(POINT));
        return { connect: open.ms, twoQueries: q1.ms + q2.ms };
      });
    const a = await timings(base.driver, base.clock);
    await fault(slow.driver, 'delay', 'r1', { ms: 100 });
    const b = await timings(slow.driver, slow.clock);
    expect(b.twoQueries - a.twoQueries).toBeGreaterThanOrEqual(2 * 2 * 100);
    expect(b.twoQueries - a.twoQueries).toBeLessThan(2 * 2 * 100 + 1);
    expect(b.connect - a.connect).toBeGreaterThanOrEqual(4 * 2 * 100);
    expect(b.connect - a.connect).toBeLessThan(4 * 2 * 100 + 1);
  });

  it('spreads each message uniformly within ms ± jitter, the same for the same seed', async () => {
    const run = async (seed: number) => {
      const { driver, clock } = simCluster(seed);
      await fault(driver, 'delay', 'r1', { ms: 100, jitter: 20 });
      return clock.run(async () => {
        const s = await driver.connector().open('r1', opts());
        const out: number[] = [];
        for (let i = 0; i < 50; i++) out.push((await outcome(clock, s.query(POINT))).ms);
        return out;
      });
    };
    const a = await run(3);
    for (const ms of a) {
      // Two messages a query, 1 ms of CPU.
      expect(ms).toBeGreaterThanOrEqual(2 * 80 + 1);
      expect(ms).toBeLessThanOrEqual(2 * 120 + 1 + 1e-6);
    }
    expect(new Set(a).size).toBeGreaterThan(10);
    expect(await run(3)).toEqual(a);
    expect(await run(4)).not.toEqual(a);
  });

  it('backs a lost segment off from its RTT: srtt + 200 ms', async () => {
    const { driver, clock } = simCluster(2);
    await fault(driver, 'delay', 'r1', { ms: 50 });
    await fault(driver, 'loss', 'r1', { percent: 30 });
    const extras = await clock.run(async () => {
      const s = await driver.connector().open('r1', opts());
      const out: number[] = [];
      for (let i = 0; i < 100; i++) out.push(Math.round((await outcome(clock, s.query(POINT))).ms - 101));
      return out;
    });
    // RTO = 2·50 + 200 = 300 ms: every extra is a sum of 300, 600, 1200 ...
    for (const x of extras) expect(x % 300).toBe(0);
    expect(Math.max(...extras)).toBeGreaterThanOrEqual(300);
  });

  it('is healed alone: a loss in force with it stays', async () => {
    const { driver, clock } = simCluster();
    await fault(driver, 'delay', 'r1', { ms: 100 });
    await fault(driver, 'loss', 'r1', { percent: 100 });
    await fault(driver, 'heal', 'r1', { what: 'delay' });
    await clock.run(async () => {
      const r = await outcome(clock, driver.connector().open('r1', opts()));
      expect(r.ms).toBe(CONNECT_TIMEOUT);
    });
  });
});

describe('a lossy link (simulated)', () => {
  it('100 % loss hangs connects and queries until their timeouts', async () => {
    const { driver, clock } = simCluster();
    const c = driver.connector();
    await clock.run(async () => {
      const s = await c.open('r1', opts());
      await fault(driver, 'loss', 'r1', { percent: 100 });
      expect((await outcome(clock, s.query(POINT))).ms).toBe(QUERY_TIMEOUT);
      expect((await outcome(clock, c.open('r1', opts()))).ms).toBe(CONNECT_TIMEOUT);
    });
  });

  it('a lost segment costs the RTO (200 ms for data, 1 s for a SYN), doubling; the same for the same seed', async () => {
    const run = async (seed: number) => {
      const { driver, clock } = simCluster(seed);
      await fault(driver, 'loss', 'r1', { percent: 30 });
      return clock.run(async () => {
        const connects: number[] = [];
        for (let i = 0; i < 40; i++)
          connects.push((await outcome(clock, driver.connector().open('r1', opts()))).ms);
        const s = await driver.connector().open('r1', opts());
        const queries: number[] = [];
        for (let i = 0; i < 200; i++) queries.push((await outcome(clock, s.query(POINT))).ms);
        return { connects, queries };
      });
    };
    const a = await run(5);
    // A query without loss takes 1 ms of CPU; each extra is a sum of backed-off 200 ms RTOs.
    const extras = a.queries.map((ms) => Math.round(ms - 1));
    for (const x of extras) expect(x % 200).toBe(0);
    const lost = extras.filter((x) => x > 0).length;
    // Two segments a query, each lost with p = 0.3: P(some loss) = 0.51.
    expect(lost).toBeGreaterThan(200 * 0.35);
    expect(lost).toBeLessThan(200 * 0.67);
    expect(Math.max(...extras)).toBeGreaterThanOrEqual(600); // a segment lost twice: 200 + 400
    // Some connect lost its SYN or SYN-ACK: a second at least.
    expect(Math.max(...a.connects)).toBeGreaterThanOrEqual(1000);
    expect(await run(5)).toEqual(a);
  });
});

describe('a bandwidth limit (simulated)', () => {
  it('sends the responses one after another at the rate', async () => {
    const { driver, clock } = simCluster();
    const rate = 100_000; // bits per second
    const c = driver.connector();
    await clock.run(async () => {
      const sessions = await Promise.all(Array.from({ length: 4 }, () => c.open('r1', opts())));
      await fault(driver, 'bandwidth', 'r1', { rate });
      const t0 = clock.now();
      const ends = await Promise.all(sessions.map((s) => s.query(SCAN).then(() => clock.now() - t0)));
      const one = (responseBytes(SCAN) * 8 * 1000) / rate;
      ends.sort((x, y) => x - y);
      // The last of four waits for the three before it: at least four responses' time.
      expect(ends[3]).toBeGreaterThanOrEqual(4 * one);
      expect(ends[0]).toBeGreaterThanOrEqual(one);
      // r2 is not behind that link.
      const other = await c.open('r2', opts());
      expect((await outcome(clock, other.query(SCAN))).ms).toBeLessThan(10);
    });
  });
});

describe('a replica cut from its primary (simulated)', () => {
  it('serves its clients as before and shows staleness since the cut; heal what: partition ends it', async () => {
    const { driver, clock } = simCluster();
    await clock.run(async () => {
      const s = await driver.connector().open('r1', opts());
      await fault(driver, 'partition-replication', 'r1');
      const r = await outcome(clock, s.query(POINT));
      expect(r.err).toBeUndefined();
      expect(r.ms).toBeLessThan(10);
      await clock.sleep(3000);
      const st = (await driver.status()).find((x) => x.id === 'r1');
      expect(st?.replayLagSeconds).toBeGreaterThanOrEqual(3);
      expect(st?.lagBytes).toBeNull();
      await fault(driver, 'heal', 'r1', { what: 'partition' });
      expect((await driver.status()).find((x) => x.id === 'r1')?.replayLagSeconds).toBe(0);
    });
  });
});
