/**
 * `plb proxy`'s per-replica limits: the default from a replica's max_connections, the flags, the
 * class marked in application_name, and the replica view's bound: several proxies that each read
 * the replica's counts (and count on with their own) never hold more than the limit plus
 * (P - 1) x the unseen cap on a replica, whatever the order of admissions, authentications,
 * releases and reads.
 */
import { describe, expect, it } from 'vitest';
import { settingsOfRows } from '../../src/cluster/server-limits.js';
import type { ClassCounts, SessionCountReader } from '../../src/cluster/session-counts.js';
import { classApplicationName, markApplicationName } from '../../src/core/service-class.js';
import { isPlbError } from '../../src/core/errors.js';
import type { ServiceClass } from '../../src/core/service-class.js';
import { buildRouter } from '../../src/router/index.js';
import { AdmittingRouter } from '../../src/router/admission/admission.js';
import {
  DEFAULT_ADMISSION_RESERVE,
  defaultAdmissionLimit,
  unseenCap,
} from '../../src/proxy/admission/default-limit.js';
import { parseLimitFlags } from '../../src/proxy/admission/limit-options.js';
import { ReplicaLimits } from '../../src/proxy/admission/replica-limits.js';
import { readStartupPacket, withApplicationName } from '../../src/proxy/protocol/startup-packet.js';
import { realClock } from '../../src/clock/index.js';
import pg from 'pg';
import { alwaysUp, fake } from '../helpers/fake-replicas.js';
import { startTestProxy } from '../helpers/proxy-setup.js';

describe('the default admission limit', () => {
  it('is max_connections less the reserved slots and the reserve, at least 1', () => {
    const s = settingsOfRows([
      { name: 'max_connections', setting: '100' },
      { name: 'superuser_reserved_connections', setting: '3' },
    ]);
    expect(s).toEqual({ maxConnections: 100, superuserReserved: 3, reserved: 0 });
    expect(defaultAdmissionLimit(s, DEFAULT_ADMISSION_RESERVE)).toBe(91);
    const pg16 = settingsOfRows([
      { name: 'max_connections', setting: '50' },
      { name: 'superuser_reserved_connections', setting: '3' },
      { name: 'reserved_connections', setting: '2' },
    ]);
    expect(defaultAdmissionLimit(pg16, 6)).toBe(39);
    expect(defaultAdmissionLimit({ maxConnections: 5, superuserReserved: 3, reserved: 0 }, 6)).toBe(1);
    expect(() => settingsOfRows([])).toThrow(/max_connections/);
  });

  it('the unseen cap is a tenth of the limit, at least 1', () => {
    expect(unseenCap(6)).toBe(1);
    expect(unseenCap(91)).toBe(10);
    expect(unseenCap(1)).toBe(1);
  });

  it('--admission-limit: auto by default, a number, or off', () => {
    expect(parseLimitFlags({}, 'plb').admission).toMatchObject({ limit: 'auto', reserve: 6 });
    expect(parseLimitFlags({ 'admission-limit': '5' }, 'plb').admission).toMatchObject({ limit: 5 });
    expect(parseLimitFlags({ 'admission-limit': 5 }, 'plb').admission).toMatchObject({ limit: 5 });
    expect(parseLimitFlags({ 'admission-reserve': 9 }, 'plb').admission).toMatchObject({ reserve: 9 });
    expect(parseLimitFlags({ 'admission-limit': 'off' }, 'plb').admission).toBeUndefined();
    // A strategy that queues by itself keeps its own default.
    expect(parseLimitFlags({ 'admission-limit': 'off' }, 'plb-admit').admission).toMatchObject({
      limit: 1000,
    });
    expect(() => parseLimitFlags({ 'admission-limit': 'many' }, 'plb')).toThrow(
      /^--admission-limit: must be a whole number >= 1, auto or off \(got "many"\)$/,
    );
    expect(() => parseLimitFlags({ 'admission-limit': '0' }, 'plb')).toThrow(/--admission-limit/);
    expect(() => parseLimitFlags({ 'admission-reserve': -1 }, 'plb')).toThrow(/--admission-reserve/);
  });
});

describe('the class in application_name', () => {
  it('prefixes the client’s own name, or is the class’s name alone', () => {
    expect(markApplicationName('premium', undefined)).toBe('plb-premium');
    expect(markApplicationName('freemium', '')).toBe('plb-freemium');
    expect(markApplicationName('premium', 'billing')).toBe('plb-premium:billing');
    expect(markApplicationName('premium', 'billing').startsWith(classApplicationName('premium'))).toBe(true);
  });

  it('keeps PostgreSQL’s 63 bytes, never splitting a character', () => {
    const long = markApplicationName('freemium', 'x'.repeat(100));
    expect(Buffer.byteLength(long)).toBe(63);
    expect(long).toBe(`plb-freemium:${'x'.repeat(50)}`);
    // 13 bytes of prefix, then 3-byte characters: 16 fit (48 bytes), a 17th would make 64.
    const wide = markApplicationName('freemium', '€'.repeat(30));
    expect(wide).toBe(`plb-freemium:${'€'.repeat(16)}`);
    expect(Buffer.byteLength(wide)).toBe(61);
  });

  it('rewrites a startup packet: the name set or added, the other parameters kept', () => {
    const packet = { protocol: 196608, params: { user: 'u', database: 'd', application_name: 'psql' } };
    const out = readStartupPacket(withApplicationName(packet, 'plb-premium:psql'));
    expect(out).toEqual({
      kind: 'startup',
      length: expect.any(Number),
      protocol: 196608,
      params: { user: 'u', database: 'd', application_name: 'plb-premium:psql' },
    });
    const added = readStartupPacket(
      withApplicationName({ protocol: 196608, params: { user: 'u' } }, 'plb-freemium'),
    );
    expect(added).toMatchObject({ params: { user: 'u', application_name: 'plb-freemium' } });
  });
});

// ---- the replica view's bound, over random interleavings ---------------------------------

interface Session {
  proxy: number;
  replica: string;
  cls: ServiceClass;
  ready: boolean;
}

/** A seeded generator (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const IDS = ['r1', 'r2'];

function proxyAt(sessions: Session[], pending: (() => void)[]) {
  const router = buildRouter({
    strategy: 'lc',
    replicas: IDS,
    reference: { premium: 2, mixed: 1, freemium: 2 },
    partition: { premium: 1, freemium: 1 },
    slowStartMs: 0,
    borrowing: false,
    admission: {
      limits: { mode: 'fixed', limit: 1000 },
      queue: { capacity: 100, timeoutMs: 1000 },
      premiumReserve: 0.1,
    },
  }) as AdmittingRouter<object>;
  // The server's answer is what it showed when the read was sent (the authenticated backends).
  const reader: SessionCountReader = {
    connectionsPerReplica: 1,
    read: (id) => {
      const counts: ClassCounts = { premium: 0, freemium: 0 };
      for (const s of sessions) if (s.replica === id && s.ready) counts[s.cls] += 1;
      return new Promise((resolve) => pending.push(() => resolve(counts)));
    },
    close: () => Promise.resolve(),
  };
  const limits = new ReplicaLimits(router, IDS, 1, realClock(), () => undefined, {
    reader,
    intervalMs: 1000,
  });
  return { router, limits };
}

describe('the replica view: several proxies share a replica’s limit', () => {
  it.each([1, 2, 3, 4, 5])(
    'never more than limit + (P - 1) x unseen cap on a replica (seed %i)',
    async (seed) => {
      const limit = 8;
      const P = 3;
      const bound = limit + (P - 1) * unseenCap(limit);
      const random = rng(seed);
      const sessions: Session[] = [];
      const pending: (() => void)[] = [];
      const proxies = Array.from({ length: P }, () => proxyAt(sessions, pending));
      const reads: Promise<void>[] = [];
      for (const p of proxies) for (const id of IDS) p.limits.setBase(id, limit);
      let peak = 0;
      let admitted = 0;
      for (let step = 0; step < 4000; step++) {
        const x = random();
        const p = Math.floor(random() * P);
        const proxy = proxies[p]!;
        if (x < 0.45) {
          const cls: ServiceClass = random() < 0.3 ? 'premium' : 'freemium';
          try {
            const a = proxy.router.admit(cls, 0);
            proxy.limits.admitted(a.replica, cls);
            sessions.push({ proxy: p, replica: a.replica, cls, ready: false });
            admitted++;
          } catch (err) {
            if (!isPlbError(err, 'ADMISSION_FULL')) throw err;
          }
        } else if (x < 0.65) {
          const unready = sessions.filter((t) => !t.ready);
          const s = unready[Math.floor(random() * unready.length)];
          if (s) {
            s.ready = true;
            proxies[s.proxy]!.limits.established(s.replica, s.cls);
          }
        } else if (x < 0.72) {
          const i = Math.floor(random() * sessions.length);
          const s = sessions[i];
          if (s) {
            sessions.splice(i, 1);
            const owner = proxies[s.proxy]!;
            owner.router.release(s.replica, s.cls, 0);
            owner.limits.released(s.replica, s.cls, s.ready);
          }
        } else if (x < 0.86) {
          reads.push(proxy.limits.readAll());
        } else {
          // Some answers arrive, in any order.
          const n = Math.floor(random() * (pending.length + 1));
          for (let k = 0; k < n; k++) pending.splice(Math.floor(random() * pending.length), 1)[0]!();
          await Promise.resolve();
          await Promise.resolve();
        }
        for (const id of IDS) {
          const held = sessions.filter((s) => s.replica === id).length;
          peak = Math.max(peak, held);
          expect(held).toBeLessThanOrEqual(bound);
        }
      }
      for (const f of pending.splice(0)) f();
      await Promise.all(reads);
      // The flood did fill the replicas (the bound was tested at the limit).
      expect(peak).toBeGreaterThanOrEqual(limit);
      expect(admitted).toBeGreaterThan(100);
    },
  );

  it('a single proxy with the view stays within the limit', async () => {
    const sessions: Session[] = [];
    const pending: (() => void)[] = [];
    const { router, limits } = proxyAt(sessions, pending);
    for (const id of IDS) limits.setBase(id, 4);
    for (let round = 0; round < 20; round++) {
      for (let k = 0; k < 10; k++) {
        try {
          const a = router.admit('freemium', 0);
          limits.admitted(a.replica, 'freemium');
          sessions.push({ proxy: 0, replica: a.replica, cls: 'freemium', ready: true });
          limits.established(a.replica, 'freemium');
        } catch (err) {
          if (!isPlbError(err, 'ADMISSION_FULL')) throw err;
        }
      }
      const read = limits.readAll();
      for (const f of pending.splice(0)) f();
      await read;
    }
    for (const id of IDS) expect(sessions.filter((s) => s.replica === id).length).toBe(4);
    expect(limits.limits()).toEqual({ r1: 4, r2: 4 });
  });
});

describe('the replica view in a proxy (a fake replica)', () => {
  it('marks the class before the client’s name, and counts what the replica reports of the others', async () => {
    const replica = await fake('good');
    let others: ClassCounts = { premium: 0, freemium: 3 };
    const reader: SessionCountReader = {
      connectionsPerReplica: 1,
      // The replica's own count: the others' sessions and this proxy's (the fake's connections).
      read: () =>
        Promise.resolve({ premium: others.premium, freemium: others.freemium + replica.sockets.size }),
      close: () => Promise.resolve(),
    };
    const logs: string[] = [];
    const proxy = await startTestProxy({
      replicas: [{ id: 'r1', kind: 'replica', host: '127.0.0.1', port: replica.port }],
      connector: alwaysUp,
      strategy: 'lc',
      ports: { freemium: 0 },
      log: (l) => void logs.push(l),
      admission: { limit: 4, queue: 10, timeoutMs: 300 },
      view: { reader, intervalMs: 20 },
    });
    const clients: pg.Client[] = [];
    const connect = async (name?: string): Promise<pg.Client> => {
      const c = new pg.Client({
        host: '127.0.0.1',
        port: proxy.ports.freemium,
        user: 'u',
        database: 'd',
        ...(name === undefined ? {} : { application_name: name }),
      });
      c.on('error', () => undefined);
      clients.push(c);
      await c.connect();
      return c;
    };
    try {
      expect(logs.join('\n')).toMatch(/native relay: not used \(--router-view replica marks the class/);
      // 3 of the others' sessions seen: room for 1 of the limit of 4.
      await connect('billing');
      expect(replica.startups[0]?.application_name).toBe('plb-freemium:billing');
      expect(proxy.limits()).toEqual({ r1: 4 });
      await expect(connect()).rejects.toThrow(/no replica slot/);
      // The others' sessions end: the next read gives their slots to this proxy (its own seen one,
      // plus the unseen cap of 1).
      others = { premium: 0, freemium: 0 };
      while (proxy.limits()?.r1 !== 2) await new Promise((r) => setTimeout(r, 10));
      await connect();
      expect(replica.startups.at(-1)?.application_name).toBe('plb-freemium');
    } finally {
      for (const c of clients) await c.end().catch(() => undefined);
      await proxy.stop(500);
      replica.server.close();
    }
  });
});
