// The replica view with priority admission: the counts a replica reports (every router's sessions)
// are what the limits judge, plus this router's own admissions and releases since the read.
import { describe, expect, it } from 'vitest';
import { RouterFleet } from '../../src/bench/router-fleet.js';
import { DEFAULT_HEALTH } from '../../src/cluster/health.js';
import { loadPlan } from '../../src/faults/plan.js';
import type { RunWriter } from '../../src/metrics/types.js';
import { AdmittingRouter } from '../../src/router/admission/admission.js';
import type { AdmissionOptions } from '../../src/router/admission/admission-types.js';
import { createRouter } from '../../src/router/router.js';
import type { StrategyName } from '../../src/router/types.js';
import type { BenchConfig } from '../../src/run-format/config.js';
import { isQueueingRouter } from '../../src/workload/admission-wait.js';
import { DEFAULT_WORKLOAD } from '../../src/workload/spec.js';

const LIMIT = 4;
const admission: Omit<AdmissionOptions, 'slowStartMs'> = {
  limits: { mode: 'fixed', limit: LIMIT },
  queue: { capacity: 100, timeoutMs: 10_000 },
};

function admitting(strategy: StrategyName, replicas: string[]): AdmittingRouter<number> {
  const r = createRouter({ strategy, replicas, slowStartMs: 0, admission });
  if (!(r instanceof AdmittingRouter)) throw new Error(`${strategy} is not an admitting router`);
  return r as AdmittingRouter<number>;
}

const total = (r: AdmittingRouter<number>, id: string): number => {
  const s = r.snapshot().find((x) => x.id === id)?.sessions;
  return (s?.premium ?? 0) + (s?.freemium ?? 0);
};

describe('admission with counts read from the replicas', () => {
  for (const strategy of ['plb-admit', 'lc-queue'] as const) {
    it(`${strategy}: a replica reported full takes nobody; its own admissions count on from the read`, () => {
      const r = admitting(strategy, ['r1', 'r2']);
      // Other routers' sessions fill r1 and leave r2 one slot.
      r.observeSessions('r1', { premium: 2, freemium: 2 }, 0);
      r.observeSessions('r2', { premium: 1, freemium: 2 }, 0);
      const a = r.request('premium', 1, 10);
      expect(a).toEqual({ replica: 'r2' });
      expect(total(r, 'r2')).toBe(LIMIT);
      // Nothing fits now: the next session waits, though this router holds one session in all.
      expect(r.request('premium', 2, 20)).toBe('queued');
      expect(r.pump(30)).toEqual([]);
      // A read with fewer sessions frees a slot: the waiter goes there at the next pump.
      r.observeSessions('r1', { premium: 1, freemium: 2 }, 40);
      expect(r.pump(50)).toEqual([{ ticket: 2, cls: 'premium', waitMs: 30, replica: 'r1' }]);
      expect(total(r, 'r1')).toBe(LIMIT);
      // Its own release counts down from the replica's figure.
      expect(r.release('r2', 'premium', 60)).toBe(true);
      expect(total(r, 'r2')).toBe(LIMIT - 1);
      expect(r.request('freemium', 3, 70)).toEqual({ replica: 'r2' });
    });
  }

  it('the same router with no read counts only its own sessions (the local view)', () => {
    const r = admitting('lc-queue', ['r1', 'r2']);
    for (let i = 0; i < 2 * LIMIT; i++) expect(r.request('premium', i, i)).not.toBe('queued');
    expect(r.request('premium', 99, 100)).toBe('queued');
  });

  it("plb-admit: freemium's own replicas reported full send it to a premium replica, then nowhere", () => {
    const r = admitting('plb-admit', ['r1', 'r2', 'r3', 'r4', 'r5']);
    const roles = new Map(r.snapshot().map((s) => [s.id, s.role]));
    for (const [id, role] of roles)
      if (role !== 'premium') r.observeSessions(id, { premium: 0, freemium: LIMIT }, 0);
    // Borrowing by limits: the replicas it may use are full as read, a premium one has room.
    const f = r.request('freemium', 1, 10);
    expect(roles.get((f as { replica: string }).replica)).toBe('premium');
    for (const [id, role] of roles)
      if (role === 'premium') r.observeSessions(id, { premium: LIMIT, freemium: 0 }, 20);
    expect(r.request('freemium', 2, 30)).toBe('queued');
    expect(r.request('premium', 3, 40)).toBe('queued');
  });

  it('refuses counts that are not whole sessions', () => {
    const r = admitting('plb-admit', ['r1']);
    expect(() => r.observeSessions('r1', { premium: 1.5, freemium: 0 }, 0)).toThrow(/integer >= 0/);
  });
});

describe('the replica view fleet with a queueing strategy', () => {
  const config: BenchConfig = {
    plan: { ...loadPlan('plans/demo-cascade.yaml'), path: 'plans/demo-cascade.yaml' },
    strategy: 'plb-admit',
    workload: { ...DEFAULT_WORKLOAD, clients: 32 },
    seed: 5,
    health: DEFAULT_HEALTH,
    oracle: false,
    reference: { premium: 2, mixed: 1, freemium: 2 },
    partition: { premium: 3, freemium: 2 },
    slowStartMs: 0,
    replicaCpus: 0.25,
    admission: { ...admission, limits: { mode: 'fixed', limit: 2 } },
    routers: { count: 2, view: 'replica', assignment: 'round-robin', viewIntervalMs: 1000 },
  };
  const ids = ['r1', 'r2', 'r3', 'r4', 'r5'];
  const writer = { event: () => undefined } as unknown as RunWriter;

  it('keeps each router queueing, feeds it the reads, and counts what it admits as open', () => {
    const fleet = new RouterFleet(
      config,
      ids,
      (replicas, onRoleChange) =>
        createRouter({
          strategy: 'plb-admit',
          replicas,
          slowStartMs: 0,
          admission: config.admission,
          onRoleChange,
        }),
      writer,
    );
    const [a, b] = fleet.routers;
    if (!isQueueingRouter(a) || !isQueueingRouter(b)) throw new Error('the routers lost their queue');
    const observers = fleet.observers();
    // Router a fills every replica premium may use; the read tells router b.
    const placed: string[] = [];
    for (let t = 0; ; t++) {
      const got = a.request('premium', {}, t);
      if (typeof got !== 'object') break;
      placed.push(got.replica);
    }
    const open = new Map(fleet.sampled.snapshot().map((s) => [s.id, s.sessions.premium]));
    for (const id of ids) expect(open.get(id)).toBe(placed.filter((p) => p === id).length);
    for (const o of observers)
      for (const id of ids) o.observeSessions(id, { premium: open.get(id) ?? 0, freemium: 0 }, 100);
    expect(b.request('premium', {}, 200)).toBe('queued');
    // Router a's release reaches b with the next read; the handout is counted as open too.
    a.release(placed[0] as string, 'premium', 300);
    expect(b.pump(350)).toEqual([]);
    const freed = (open.get(placed[0] as string) ?? 0) - 1;
    for (const o of observers) o.observeSessions(placed[0] as string, { premium: freed, freemium: 0 }, 360);
    const out = b.pump(400);
    expect(out.map((h) => h.replica)).toEqual([placed[0]]);
    expect(fleet.sampled.snapshot().find((s) => s.id === placed[0])?.sessions.premium).toBe(
      open.get(placed[0] as string),
    );
  });
});
