/**
 * `plb proxy --primary-port`: which server takes primary sessions given every server's answer to
 * pg_is_in_recovery() (one not in recovery: that one; two: split brain, none; the old primary down
 * or in recovery: the one that is not), how its sessions are admitted (the primary's own limit,
 * premium first, freemium kept out of the premium reserve), and the flags' checks.
 */
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock/index.js';
import type { Connector } from '../../src/cluster/connector.js';
import { isPlbError } from '../../src/core/errors.js';
import { AdmittingRouter } from '../../src/router/admission/admission.js';
import { choosePrimary, refusalOf, type ServerAnswer } from '../../src/proxy/primary/follow.js';
import { PrimaryFollower, RECOVERY_SQL } from '../../src/proxy/primary/primary-follower.js';
import { PrimaryRouter } from '../../src/proxy/primary/primary-router.js';
import { parsePrimaryFlags } from '../../src/proxy/primary/primary-options.js';
import { primaryServers } from '../../src/proxy/primary/primary-servers.js';

const STALE = 5000;

function answers(at: number, pairs: Record<string, ServerAnswer['answer']>): Map<string, ServerAnswer> {
  return new Map(Object.entries(pairs).map(([id, answer]) => [id, { answer, atMs: at }]));
}

describe('choosePrimary', () => {
  it('the one server not in recovery', () => {
    const a = answers(0, { primary: 'writable', r1: 'recovery', r2: 'recovery' });
    expect(choosePrimary(a, 'primary', 0, STALE)).toEqual({ kind: 'primary', id: 'primary' });
    // Whatever was current: the answers decide.
    expect(choosePrimary(a, 'r1', 0, STALE)).toEqual({ kind: 'primary', id: 'primary' });
  });

  it('follows a failover: the old primary down, a replica promoted', () => {
    const down = answers(0, { primary: 'down', r1: 'recovery', r2: 'recovery' });
    // Down a moment, nobody else writable: it stays (its health checks refuse sessions meanwhile).
    expect(choosePrimary(down, 'primary', 0, STALE)).toEqual({ kind: 'primary', id: 'primary' });
    const promoted = answers(0, { primary: 'down', r1: 'writable', r2: 'recovery' });
    expect(choosePrimary(promoted, 'primary', 0, STALE)).toEqual({ kind: 'primary', id: 'r1' });
  });

  it('follows a switchover: the old primary back in recovery', () => {
    const a = answers(0, { primary: 'recovery', r1: 'writable', r2: 'recovery' });
    expect(choosePrimary(a, 'primary', 0, STALE)).toEqual({ kind: 'primary', id: 'r1' });
    // Both in recovery for a moment (the old one demoted, the new one not yet promoted): none.
    const between = answers(0, { primary: 'recovery', r1: 'recovery', r2: 'recovery' });
    expect(choosePrimary(between, 'primary', 0, STALE)).toEqual({ kind: 'none' });
  });

  it('never two servers at once: two writable is split brain, whichever was current', () => {
    const a = answers(0, { primary: 'writable', r1: 'writable', r2: 'recovery' });
    for (const current of ['primary', 'r1', 'r2', undefined]) {
      const c = choosePrimary(a, current, 0, STALE);
      expect(c).toEqual({ kind: 'split-brain', writable: ['primary', 'r1'] });
      expect(refusalOf(c)).toMatch(/primary, r1 accept writes \(split brain\)/);
    }
    // One goes (stopped, or demoted): the other is the primary.
    const after = answers(0, { primary: 'down', r1: 'writable', r2: 'recovery' });
    expect(choosePrimary(after, undefined, 0, STALE)).toEqual({ kind: 'primary', id: 'r1' });
  });

  it('an answer older than the stale time counts as none', () => {
    const a = new Map<string, ServerAnswer>([
      ['primary', { answer: 'writable', atMs: 0 }],
      ['r1', { answer: 'writable', atMs: 9000 }],
    ]);
    // At 9000 the primary's answer is 9 s old: it stopped answering; r1 alone is writable.
    expect(choosePrimary(a, 'primary', 9000, STALE)).toEqual({ kind: 'primary', id: 'r1' });
    expect(choosePrimary(a, 'primary', 4000, STALE)).toMatchObject({ kind: 'split-brain' });
  });

  it('nothing known yet: the configured primary', () => {
    expect(choosePrimary(new Map(), 'primary', 0, STALE)).toEqual({ kind: 'primary', id: 'primary' });
    expect(refusalOf({ kind: 'none' })).toMatch(/no server accepts writes/);
  });
});

function manualClock(): Clock & { t: number } {
  const c = {
    kind: 'virtual' as const,
    t: 0,
    now: () => c.t,
    sleep: () => Promise.resolve(),
    timer: () => () => undefined,
    after: () => undefined,
  };
  return c;
}

/** A connector whose servers answer the recovery query as `state` says ('down': refused). */
function servers(state: Record<string, 'writable' | 'recovery' | 'down'>, asked: string[]): Connector {
  return {
    open: (id) => {
      if (state[id] === 'down')
        return Promise.reject(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }));
      return Promise.resolve({
        query: (text: string) => {
          asked.push(text);
          return state[id] === 'down'
            ? Promise.reject(Object.assign(new Error('terminating'), { code: '57P01', severity: 'FATAL' }))
            : Promise.resolve(state[id] === 'writable' ? 1 : 0);
        },
        end: () => Promise.resolve(),
      });
    },
  };
}

describe('PrimaryFollower', () => {
  it("keeps every server's answer from the health checks' connections and says when the choice changes", async () => {
    const clock = manualClock();
    const state: Record<string, 'writable' | 'recovery' | 'down'> = {
      primary: 'writable',
      r1: 'recovery',
      r2: 'recovery',
    };
    const asked: string[] = [];
    const f = new PrimaryFollower('primary', clock, STALE);
    const changes: string[] = [];
    f.onChange = (prev, next) => changes.push(`${JSON.stringify(prev)} -> ${JSON.stringify(next)}`);
    const ids = ['primary', 'r1', 'r2'];
    await f.readAll(ids, servers(state, asked), 1000);
    expect(f.primary()).toBe('primary');
    expect(changes).toEqual([]);
    // The health checker runs SELECT 1 on the connections: the recovery query is what is asked.
    const probing = f.probing(servers(state, asked));
    const check = async (id: string): Promise<void> => {
      const c = await probing
        .open(id, { connectTimeoutMs: 1, applicationName: 'x', onError: () => undefined })
        .catch(() => undefined);
      await c?.query('SELECT 1').catch(() => undefined);
    };
    await check('primary');
    expect(new Set(asked)).toEqual(new Set([RECOVERY_SQL]));
    // Switchover: the primary stopped, r1 promoted.
    state.primary = 'down';
    state.r1 = 'writable';
    clock.t = 1000;
    await check('primary');
    expect(f.primary()).toBe('primary');
    await check('r1');
    expect(f.primary()).toBe('r1');
    // The old primary comes back writable beside r1 (never rewound): split brain, nobody.
    state.primary = 'writable';
    clock.t = 2000;
    await check('primary');
    expect(f.primary()).toBeUndefined();
    expect(f.refusal()).toMatch(/split brain/);
    // It is turned into a standby: r1 alone again.
    state.primary = 'recovery';
    await check('primary');
    expect(f.primary()).toBe('r1');
    expect(changes).toHaveLength(3);
  });
});

describe('the primary listener admission', () => {
  function router(limit: number): { r: AdmittingRouter<object>; inner: PrimaryRouter } {
    const inner = new PrimaryRouter(['primary', 'r1']);
    const r = new AdmittingRouter<object>(inner, 'lc', {
      limits: { mode: 'fixed', limit },
      queue: { capacity: 100, timeoutMs: 10_000 },
      premiumReserve: 0.1,
      slowStartMs: 0,
    });
    r.markDown('r1', 0);
    return { r, inner };
  }

  it('sends every session to the one server up, and none when none is', () => {
    const { r } = router(10);
    expect(r.admit('premium', 0).replica).toBe('primary');
    expect(r.admit('freemium', 0).replica).toBe('primary');
    r.markDown('primary', 0);
    r.markUp('r1', 0);
    expect(r.admit('premium', 0).replica).toBe('r1');
    r.markDown('r1', 0);
    let err: unknown;
    try {
      r.admit('premium', 0);
    } catch (e) {
      err = e;
    }
    expect(isPlbError(err, 'NO_REPLICA')).toBe(true);
  });

  it("freemium never takes the premium reserve; premium takes the primary's whole limit", () => {
    const { r } = router(10);
    const t = (n: number): object[] => Array.from({ length: n }, () => ({}));
    // Freemium alone: 9 of 10 (ceil(0.1 x 10) = 1 kept), the 10th waits.
    const f = t(10).map((k) => r.request('freemium', k, 0));
    expect(f.filter((x) => typeof x === 'object')).toHaveLength(9);
    expect(f[9]).toBe('queued');
    expect(typeof r.request('premium', {}, 0)).toBe('object');
    const p2 = {};
    expect(r.request('premium', p2, 0)).toBe('queued');
    // A slot freed: the waiting premium session gets it before the freemium one that came first.
    r.release('primary', 'freemium', 1);
    const out = r.pump(1);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ ticket: p2, cls: 'premium', replica: 'primary' });
  });
});

describe('--primary-port and --primary-freemium-port', () => {
  it('0 or absent: no primary listener; a port per class', () => {
    expect(parsePrimaryFlags({}, {})).toEqual({});
    expect(parsePrimaryFlags({ 'primary-port': 0 }, {})).toEqual({});
    expect(parsePrimaryFlags({ 'primary-port': 7000, 'primary-freemium-port': 7001 }, {})).toEqual({
      premium: 7000,
      freemium: 7001,
    });
  });

  it('a port another listener has is one line naming both flags', () => {
    expect(() => parsePrimaryFlags({ 'primary-port': 6432 }, { '--premium-port': 6432 })).toThrow(
      '--primary-port and --premium-port are both 6432',
    );
    expect(() => parsePrimaryFlags({ 'primary-port': 7000, 'primary-freemium-port': 7000 }, {})).toThrow(
      '--primary-freemium-port and --primary-port are both 7000',
    );
    expect(() => parsePrimaryFlags({ 'primary-port': 70000 }, {})).toThrow(/--primary-port: must be a port/);
  });

  it('the servers: the one primary first, then the replicas', () => {
    const ep = (id: string, kind: 'primary' | 'replica') => ({ id, kind, host: '127.0.0.1', port: 1 });
    const s = primaryServers([ep('r1', 'replica'), ep('primary', 'primary'), ep('r2', 'replica')]);
    expect(s.primary.id).toBe('primary');
    expect(s.servers.map((e) => e.id)).toEqual(['primary', 'r1', 'r2']);
    expect(() => primaryServers([ep('r1', 'replica')])).toThrow(/exactly one primary \(got 0\)/);
  });
});
