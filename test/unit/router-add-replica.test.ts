import { describe, expect, it } from 'vitest';
import { AdmittingRouter } from '../../src/router/admission/admission.js';
import { buildRouter, createRouter, STRATEGY_NAMES } from '../../src/router/index.js';
import { countRoles, repairTarget } from '../../src/router/plb-rules.js';
import { fullReference, DEFAULT_REFERENCE } from '../../src/router/role-vector.js';
import { resolveReadings } from '../../src/router/readings.js';
import type { RoleChange, Router } from '../../src/router/types.js';
import { isPlbError } from '../../src/core/errors.js';

const SLOW = 10_000;

function admitMany(router: Router, n: number, nowMs: number): Map<string, number> {
  const got = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const cls = i % 2 === 0 ? 'premium' : 'freemium';
    const { replica } = router.admit(cls, nowMs);
    got.set(replica, (got.get(replica) ?? 0) + 1);
  }
  return got;
}

describe('a replica added to a running router', () => {
  for (const strategy of STRATEGY_NAMES) {
    it(`${strategy}: takes no session before markUp, takes sessions after it; open sessions stay`, () => {
      const router = buildRouter({ strategy, replicas: ['r1', 'r2'], slowStartMs: SLOW });
      const before = admitMany(router, 8, 0);
      router.addReplica({ id: 'r3', weight: 1 }, 100);
      const snap = router.snapshot();
      expect(snap.map((r) => r.id)).toEqual(['r1', 'r2', 'r3']);
      expect(snap.find((r) => r.id === 'r3')?.healthy).toBe(false);
      expect(admitMany(router, 20, 200).has('r3')).toBe(false);
      // The sessions admitted before the add are still counted where they were.
      const open = router.snapshot();
      for (const [id, n] of before) {
        const r = open.find((x) => x.id === id);
        expect((r?.sessions.premium ?? 0) + (r?.sessions.freemium ?? 0)).toBeGreaterThanOrEqual(n);
      }
      router.markUp('r3', 1000);
      // Past its slow start, both classes reach it wherever the strategy's roles put it.
      const after = new Map<string, number>();
      for (let i = 0; i < 300; i++) {
        const cls = i % 2 === 0 ? 'premium' : 'freemium';
        const { replica } = router.admit(cls, 1000 + SLOW + i);
        after.set(replica, (after.get(replica) ?? 0) + 1);
        if (i % 3 === 0) router.release(replica, cls, 1000 + SLOW + i);
      }
      expect(after.get('r3') ?? 0).toBeGreaterThan(0);
    });
  }

  it('refuses a known id, a bad weight, and a zone in a router without zones; nothing changes', () => {
    const router = createRouter({ strategy: 'plb', replicas: ['r1', 'r2'] });
    const bad = (f: () => void): void => {
      try {
        f();
        expect.unreachable();
      } catch (err) {
        expect(isPlbError(err, 'BAD_INPUT')).toBe(true);
      }
    };
    bad(() => router.addReplica({ id: 'r1' }, 0));
    bad(() => router.addReplica({ id: 'r3', weight: 0 }, 0));
    bad(() => router.addReplica({ id: 'r3', zone: 'a' }, 0));
    expect(router.snapshot().map((r) => r.id)).toEqual(['r1', 'r2']);
  });

  it('plb: the new replica enters as a rejoin (shared capacity, then repair to the target of the larger K)', () => {
    const changes: RoleChange[] = [];
    const router = createRouter({
      strategy: 'plb',
      replicas: ['r1', 'r2', 'r3', 'r4', 'r5'],
      slowStartMs: SLOW,
      onRoleChange: (c) => changes.push(c),
    });
    expect(countRoles(viewOf(router))).toEqual({ premium: 2, mixed: 1, freemium: 2 });
    router.addReplica({ id: 'r6' }, 10);
    // Not in the survivor set yet: no event, no role moved.
    expect(changes).toEqual([]);
    expect(countRoles(viewOf(router))).toEqual({ premium: 2, mixed: 1, freemium: 2 });
    router.markUp('r6', 20);
    expect(changes[0]).toMatchObject({ replica: 'r6', from: 'down', to: 'mixed', reason: 'rejoin' });
    const readings = resolveReadings(undefined);
    const full6 = fullReference(6, DEFAULT_REFERENCE, readings.reference, readings.floors);
    expect(countRoles(viewOf(router))).toEqual(full6);
    // A fault afterwards repairs toward the target of 5 survivors out of 6.
    router.markDown('r1', 30);
    expect(countRoles(viewOf(router))).toEqual(repairTarget(5, 6, full6, readings));
    // Slow start: just after markUp the new replica is dear, so an idle fleet's next session goes elsewhere.
    const fresh = createRouter({ strategy: 'plb', replicas: ['r1', 'r2'], slowStartMs: SLOW });
    fresh.addReplica({ id: 'r3' }, 0);
    fresh.markUp('r3', 0);
    const early = admitMany(fresh, 6, 100);
    expect(early.get('r3') ?? 0).toBeLessThan(early.get('r1') ?? 0);
  });

  it('plb: roles stay valid through adds, faults and rejoins in any order', () => {
    const router = createRouter({ strategy: 'plb', replicas: ['r1', 'r2', 'r3'], slowStartMs: 0 });
    const readings = resolveReadings(undefined);
    let t = 0;
    const ids = ['r1', 'r2', 'r3'];
    for (let k = 4; k <= 9; k++) {
      router.addReplica({ id: `r${k}`, weight: k % 2 === 0 ? 2 : 1 }, (t += 10));
      ids.push(`r${k}`);
      router.markUp(`r${k}`, (t += 10));
      router.markDown(ids[k % 3] as string, (t += 10));
      const healthy = router.snapshot().filter((r) => r.healthy).length;
      const full = fullReference(ids.length, DEFAULT_REFERENCE, readings.reference, readings.floors);
      expect(countRoles(viewOf(router))).toEqual(repairTarget(healthy, ids.length, full, readings));
      router.markUp(ids[k % 3] as string, (t += 10));
      expect(countRoles(viewOf(router))).toEqual(full);
      // Every class still has somewhere to go.
      router.admit('premium', (t += 1));
      router.admit('freemium', (t += 1));
    }
  });

  it('static: the new replica goes to the class the partition of the larger K gives one more', () => {
    const router = createRouter({ strategy: 'static', replicas: ['r1', 'r2', 'r3', 'r4', 'r5'] });
    router.addReplica({ id: 'r6' }, 0);
    const roles = router.snapshot().map((r) => r.role);
    // 3:2 at K=5 scales to 4:2 at K=6: the new one serves premium, the others keep theirs.
    expect(roles).toEqual(['premium', 'premium', 'premium', 'freemium', 'freemium', 'premium']);
  });

  it('admission limits know the new replica: the configured limit, ramped from its markUp', () => {
    const router = buildRouter({
      strategy: 'plb',
      replicas: ['r1'],
      slowStartMs: 0,
      admission: { limits: { mode: 'fixed', limit: 2 }, queue: { capacity: 10, timeoutMs: 1000 } },
    }) as AdmittingRouter<number>;
    expect(router).toBeInstanceOf(AdmittingRouter);
    router.request('premium', 1, 0);
    router.request('premium', 2, 0);
    expect(router.request('premium', 3, 0)).toBe('queued');
    router.addReplica({ id: 'r2' }, 1);
    expect(router.stats(1).limits).toEqual({ r1: 2, r2: 2 });
    expect(router.pump(2)).toEqual([]);
    router.markUp('r2', 3);
    const out = router.pump(4);
    expect(out.map((h) => [h.ticket, h.replica])).toEqual([[3, 'r2']]);
    router.setLimit('r2', 5);
    expect(router.stats(5).limits['r2']).toBe(5);
  });

  it('zones: a replica joins its zone, or opens a new one; without a zone it is refused', () => {
    const changes: RoleChange[] = [];
    const router = createRouter({
      strategy: 'plb',
      replicas: ['a1', 'b1'],
      zones: { a1: 'a', b1: 'b' },
      homeZone: 'a',
      slowStartMs: 0,
      onRoleChange: (c) => changes.push(c),
    });
    router.addReplica({ id: 'a2', zone: 'a' }, 0);
    router.addReplica({ id: 'c1', zone: 'c' }, 0);
    expect(changes).toEqual([]);
    expect(() => router.addReplica({ id: 'x1' }, 0)).toThrow(/has no zone/);
    expect(router.snapshot().map((r) => [r.id, r.healthy])).toEqual([
      ['a1', true],
      ['b1', true],
      ['a2', false],
      ['c1', false],
    ]);
    router.markUp('c1', 1);
    expect(router.admit('premium', 2, 'c').replica).toBe('c1');
    router.markUp('a2', 3);
    const inA = new Set<string>();
    for (let i = 0; i < 6; i++) inA.add(router.admit('freemium', 4, 'a').replica);
    expect(inA.has('a2')).toBe(true);
  });
});

function viewOf(router: Router): Parameters<typeof countRoles>[0] {
  return router.snapshot().map((r, index) => ({ ...r, index }));
}
