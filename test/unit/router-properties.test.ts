import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPlbError } from '../../src/core/errors.js';
import {
  admissionKey,
  BorrowDwell,
  createRouter,
  decidePlbAdmission,
  fullReference,
  partitionFor,
  READING_CHOICES,
  rebalanceSteps,
  repairTarget,
  resolveBorrowing,
  resolveReadings,
  slowStartRamp,
  STRATEGY_NAMES,
  type PlbReadings,
  type PlbReplicaView,
  type ReplicaSnapshot,
  type Role,
  type RoleVector,
  type ServiceClass,
  type StrategyName,
} from '../../src/router/index.js';
import { readingsArb } from '../helpers/readings-arb.js';

type Op =
  | { t: 'admit'; cls: ServiceClass }
  | { t: 'release'; pick: number }
  | { t: 'stray'; r: number; cls: ServiceClass }
  | { t: 'down'; r: number }
  | { t: 'up'; r: number }
  | { t: 'tick'; ms: number };

const clsArb = fc.constantFrom<ServiceClass>('premium', 'freemium');
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: clsArb.map((cls) => ({ t: 'admit' as const, cls })) },
  { weight: 4, arbitrary: fc.nat(1000).map((pick) => ({ t: 'release' as const, pick })) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('stray' as const), r: fc.nat(20), cls: clsArb }) },
  { weight: 1, arbitrary: fc.nat(20).map((r) => ({ t: 'down' as const, r })) },
  { weight: 1, arbitrary: fc.nat(20).map((r) => ({ t: 'up' as const, r })) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 4000 }).map((ms) => ({ t: 'tick' as const, ms })) },
);

const scenarioArb = fc.record({
  k: fc.integer({ min: 1, max: 9 }),
  weights: fc.array(fc.constantFrom(1, 1, 2, 3), { minLength: 9, maxLength: 9 }),
  slowStartMs: fc.constantFrom(0, 5000, 30_000),
  borrowing: fc.constantFrom<'default' | 'off' | 'eager'>('default', 'off', 'eager'),
  ops: fc.array(opArb, { minLength: 1, maxLength: 150 }),
});

/** plb: the readings and the reference of a scenario (the references include ones that break a floor). */
type PlbSetup = { readings: Partial<PlbReadings>; reference: RoleVector };
const referenceArb = fc.constantFrom<RoleVector>(
  { premium: 2, mixed: 1, freemium: 2 },
  { premium: 3, mixed: 0, freemium: 2 },
  { premium: 1, mixed: 0, freemium: 1 },
  { premium: 0, mixed: 3, freemium: 1 },
  { premium: 4, mixed: 1, freemium: 1 },
);

const EAGER = {
  premium: { minLoad: 1, pressureRatio: 1.2, returnRatio: 1 },
  freemium: { minLoad: 1, pressureRatio: 1.5, returnRatio: 0.8 },
};
const borrowOption = (b: Scenario['borrowing']) => (b === 'off' ? false : b === 'eager' ? EAGER : undefined);

const eligiblePlb = (s: ReplicaSnapshot, cls: ServiceClass) =>
  s.role === cls || s.role === 'mixed' || s.borrowedBy === cls;

const seen = new Set<string>();

function check(strategy: StrategyName, sc: Scenario, setup?: PlbSetup): void {
  const ids = Array.from({ length: sc.k }, (_, i) => `r${i + 1}`);
  const weights = sc.weights.slice(0, sc.k);
  const router = createRouter({
    strategy,
    replicas: ids.map((id, i) => ({ id, weight: weights[i] })),
    slowStartMs: sc.slowStartMs,
    borrowing: borrowOption(sc.borrowing),
    ...(setup ? { readings: setup.readings, reference: setup.reference } : {}),
  });
  const readings = resolveReadings(setup?.readings);
  const full = fullReference(sc.k, setup?.reference, readings.reference, readings.floors);
  const initialRoles = router.snapshot().map((s) => s.role);
  const part = partitionFor(sc.k);
  const healthy = ids.map(() => true);
  const upSince: (number | undefined)[] = ids.map(() => undefined);
  const counts = ids.map(() => ({ premium: 0, freemium: 0 }));
  const open: { i: number; cls: ServiceClass }[] = [];
  let now = 0;
  let lastRr = -1;
  const borrowing = resolveBorrowing(borrowOption(sc.borrowing));
  // hold=dwell: the specification keeps its own dwell state, fed the same admissions as the router.
  const dwell = readings.hold === 'dwell' ? new BorrowDwell() : undefined;

  const checkState = (snap: ReplicaSnapshot[], afterEvent: boolean) => {
    snap.forEach((s, i) => {
      expect(s.healthy).toBe(healthy[i]);
      expect(s.sessions).toEqual(counts[i]);
      expect(s.sessions.premium).toBeGreaterThanOrEqual(0);
      expect(['premium', 'mixed', 'freemium']).toContain(s.role);
    });
    if (strategy !== 'plb') return;
    const live = snap.filter((s) => s.healthy);
    const got = { premium: 0, mixed: 0, freemium: 0 };
    for (const s of live) {
      got[s.role] += 1;
      if (s.borrowedBy !== undefined)
        expect(s.role).toBe(s.borrowedBy === 'premium' ? 'freemium' : 'premium');
      // canonicalized (repair 'none' has no canonicalization: borrowing goes on across events)
      if (afterEvent && readings.repair !== 'none') expect(s.borrowedBy).toBeUndefined();
    }
    // Borrowing never changes roles, so what the readings promise holds at all times, not only after events.
    if (readings.repair === 'none') {
      expect(snap.map((s) => s.role)).toEqual(initialRoles);
    } else if (readings.repair === 'shared' && live.length < sc.k) {
      expect(got).toEqual({ premium: 0, mixed: live.length, freemium: 0 });
    } else {
      expect(got).toEqual(repairTarget(live.length, sc.k, full, readings));
      // The floors hold at every K+ >= 4, except a literal reference at K+=K (used as given).
      if (live.length >= 4 && !(readings.reference === 'literal' && live.length === sc.k)) {
        expect(Math.min(got.premium, got.freemium)).toBeGreaterThanOrEqual(1);
        if (readings.floors === 'mixed') expect(got.mixed).toBeGreaterThanOrEqual(1);
      }
    }
    for (const s of snap.filter((x) => !x.healthy)) expect(s.borrowedBy).toBeUndefined();
  };

  /** What the plain rules say a down or rejoin event does to the roles (the router applies them). */
  const expectedAfterEvent = (before: ReplicaSnapshot[], i: number, up: boolean): Role[] => {
    const views: PlbReplicaView[] = before.map((s, index) => ({ ...s, index }));
    const r = views[i]!;
    r.healthy = up;
    r.borrowedBy = undefined;
    if (up && readings.repair !== 'none') r.role = 'mixed';
    const live = views.filter((x) => x.healthy).length;
    for (const step of rebalanceSteps(views, repairTarget(live, sc.k, full, readings), readings))
      views[step.index]!.role = step.to;
    return views.map((x) => x.role);
  };

  for (const op of sc.ops) {
    let afterEvent = false;
    if (op.t === 'tick') now += op.ms;
    else if (op.t === 'down' || op.t === 'up') {
      const i = op.r % sc.k;
      afterEvent = healthy[i] !== (op.t === 'up'); // a repeated markDown/markUp is a no-op
      const expected = afterEvent ? expectedAfterEvent(router.snapshot(), i, op.t === 'up') : null;
      if (op.t === 'down') healthy[i] = false;
      else if (!healthy[i]) {
        healthy[i] = true;
        upSince[i] = now;
      }
      if (op.t === 'down') router.markDown(ids[i]!, now);
      else router.markUp(ids[i]!, now);
      if (strategy === 'plb' && expected) expect(router.snapshot().map((s) => s.role)).toEqual(expected);
    } else if (op.t === 'release') {
      if (open.length === 0) continue;
      const [s] = open.splice(op.pick % open.length, 1);
      expect(router.release(ids[s!.i]!, s!.cls, now)).toBe(true);
      counts[s!.i]![s!.cls] -= 1;
    } else if (op.t === 'stray') {
      const i = op.r % (sc.k + 1);
      if (i < sc.k && counts[i]![op.cls] > 0) continue;
      expect(router.release(i < sc.k ? ids[i]! : 'unknown', op.cls, now)).toBe(false);
    } else {
      const before = router.snapshot();
      const views: PlbReplicaView[] = before.map((s, index) => ({ ...s, index, upSinceMs: upSince[index] }));
      // plb: a class takes its own role or mixed, or borrows any other replica when borrowing is on
      // (with no own replica its pressure is infinite); only without repair can a class lose both.
      const mayTake = before.map((s, i) =>
        !s.healthy
          ? false
          : strategy === 'static'
            ? (i < part.premium ? 'premium' : 'freemium') === op.cls
            : strategy === 'plb'
              ? eligiblePlb(s, op.cls) || borrowing[op.cls].enabled
              : true,
      );
      let chosen: number;
      try {
        chosen = ids.indexOf(router.admit(op.cls, now).replica);
      } catch (err) {
        expect(isPlbError(err, 'NO_REPLICA')).toBe(true);
        expect(mayTake.some(Boolean)).toBe(false);
        continue;
      }
      expect(chosen).toBeGreaterThanOrEqual(0);
      expect(healthy[chosen]).toBe(true); // never to an unhealthy replica
      expect(mayTake[chosen]).toBe(true);
      const load = (i: number, weighted: boolean, ramped: boolean) =>
        admissionKey(
          counts[i]!.premium + counts[i]!.freemium,
          weighted ? weights[i]! : 1,
          ramped ? slowStartRamp(now, upSince[i], sc.slowStartMs) : 1,
        );
      if (strategy === 'plb') {
        const spec = decidePlbAdmission(views, op.cls, now, sc.slowStartMs, borrowing, dwell, readings);
        expect(chosen).toBe(spec.replica); // the heap fast path makes the same decision as the plain scan
        expect(eligiblePlb(router.snapshot()[chosen]!, op.cls)).toBe(true);
      } else if (strategy === 'lc' || strategy === 'wlc') {
        const w = strategy === 'wlc';
        const best = Math.min(...before.filter((s) => s.healthy).map((s) => load(ids.indexOf(s.id), w, w)));
        expect(load(chosen, w, w)).toBe(best);
      } else if (strategy === 'rr') {
        const order = [...ids.keys()].filter((i) => healthy[i]);
        expect(chosen).toBe(order.find((i) => i > lastRr) ?? order[0]);
        lastRr = chosen;
      }
      counts[chosen]![op.cls] += 1;
      open.push({ i: chosen, cls: op.cls });
    }
    checkState(router.snapshot(), afterEvent);
    for (const c of router.drainChanges()) seen.add(c.reason);
  }
  // Session counts equal admits minus releases: drain everything and every count is back to 0.
  for (const s of open) expect(router.release(ids[s.i]!, s.cls, now)).toBe(true);
  expect(router.snapshot().every((s) => s.sessions.premium === 0 && s.sessions.freemium === 0)).toBe(true);
}

type Scenario = {
  k: number;
  weights: number[];
  slowStartMs: number;
  borrowing: 'default' | 'off' | 'eager';
  ops: Op[];
};

describe('router invariants over random event sequences', () => {
  for (const strategy of STRATEGY_NAMES) {
    it(`${strategy}`, () => {
      fc.assert(
        fc.property(scenarioArb, (sc) => check(strategy, sc)),
        { numRuns: 200 },
      );
      if (strategy === 'plb') {
        // The random sequences do reach every kind of role change (checked on a pinned seed, as
        // about one random seed in five misses a rare kind such as canonicalize or return).
        fc.assert(
          fc.property(scenarioArb, (sc) => check(strategy, sc)),
          { numRuns: 200, seed: 1 },
        );
        expect([...seen].sort()).toEqual(['borrow', 'canonicalize', 'down', 'rejoin', 'repair', 'return']);
      }
    });
  }
});

describe('plb invariants under each reading', () => {
  const each = Object.entries(READING_CHOICES).flatMap(([key, values]) =>
    (values as readonly string[]).map((value) => [key, value] as const),
  );
  it.each(each)('%s=%s', (key, value) => {
    fc.assert(
      fc.property(scenarioArb, referenceArb, (sc, reference) =>
        check('plb', sc, { readings: { [key]: value }, reference }),
      ),
      { numRuns: 60 },
    );
  });
  it('any combination of readings', () => {
    fc.assert(
      fc.property(scenarioArb, readingsArb, referenceArb, (sc, readings, reference) =>
        check('plb', sc, { readings, reference }),
      ),
      { numRuns: 200 },
    );
  });
});

describe('slow start (plb and wlc)', () => {
  for (const strategy of ['plb', 'wlc'] as const) {
    it(`${strategy}: a rejoined replica gets fewer new sessions than its peers in its first seconds`, () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 4, max: 8 }),
          fc.integer({ min: 10, max: 60 }),
          fc.integer({ min: 3, max: 12 }),
          fc.nat(7),
          fc.array(clsArb, { minLength: 60, maxLength: 60 }),
          (k, perReplica, perPeer, victimSeed, classes) => {
            const ids = Array.from({ length: k }, (_, i) => `r${i + 1}`);
            const router = createRouter({ strategy, replicas: ids, slowStartMs: 30_000, borrowing: false });
            for (let i = 0; i < k * perReplica; i++) router.admit(classes[i % 60]!, 0);
            const victim = victimSeed % k;
            router.markDown(ids[victim]!, 1000);
            const left = router.snapshot()[victim]!.sessions;
            for (const cls of ['premium', 'freemium'] as const) {
              for (let n = left[cls]; n > 0; n--) router.release(ids[victim]!, cls, 1000);
            }
            router.markUp(ids[victim]!, 2000);
            const role = router.snapshot()[victim]!.role;
            const cls: ServiceClass = role === 'freemium' ? 'freemium' : 'premium';
            const before = router.snapshot();
            const peerCount = before.filter(
              (s, i) => i !== victim && s.healthy && (strategy === 'wlc' || eligiblePlb(s, cls)),
            ).length;
            // Enough new sessions for several per peer, all in the first second of a 30 s ramp.
            const newSessions = perPeer * peerCount;
            for (let j = 0; j < newSessions; j++)
              router.admit(cls, 2000 + Math.floor((1000 * j) / newSessions));
            const after = router.snapshot();
            const total = (x: ReplicaSnapshot) => x.sessions.premium + x.sessions.freemium;
            const gained = after.map((s, i) => total(s) - total(before[i]!));
            const peers = after
              .map((s, i) => ({ s, i }))
              .filter(({ s, i }) => i !== victim && s.healthy && (strategy === 'wlc' || eligiblePlb(s, cls)));
            const peerMean = peers.reduce((a, p) => a + gained[p.i]!, 0) / peers.length;
            expect(gained[victim]!).toBeLessThan(peerMean);
          },
        ),
        { numRuns: 100 },
      );
    });
  }
});
