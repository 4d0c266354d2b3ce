// G1: freemium borrowing never leaves premium with fewer replicas it may use than its target.
//
// Definition checked here. With K replicas, K+ of them healthy, and T = the repair target for K+
// (repairTarget: the roles a down or rejoin repairs toward, under the readings in force), the
// replicas premium may be admitted to are the healthy ones whose role is premium or mixed, or that
// premium borrowed (a premium replica freemium borrowed stays one of them: it is shared, not taken).
// After every admission and every release (and every down and rejoin) their number is at least
// T.premium + T.mixed. Readings with repair=none have no target (the ablation keeps the surviving
// roles whatever they are), so the invariant is checked under repair=target and repair=shared.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  fullReference,
  repairTarget,
  resolveReadings,
  type BorrowingOptions,
  type PlbReadings,
  type ReplicaSnapshot,
  type RoleVector,
  type ServiceClass,
} from '../../src/router/index.js';
import { plbRouterOf, readingArbs } from '../helpers/readings-arb.js';

type Op =
  | { t: 'admit'; cls: ServiceClass; n: number }
  | { t: 'release'; pick: number; n: number }
  | { t: 'flip'; r: number }
  | { t: 'tick'; ms: number };

// Freemium does most of the admitting, in bursts: the load that makes it borrow.
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('admit' as const),
      cls: fc.constantFrom<ServiceClass>('freemium', 'freemium', 'freemium', 'premium'),
      n: fc.integer({ min: 1, max: 15 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('release' as const),
      pick: fc.nat(1000),
      n: fc.integer({ min: 1, max: 10 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('flip' as const), r: fc.nat(8) }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 3000 }).map((ms) => ({ t: 'tick' as const, ms })) },
);

type Scenario = {
  k: number;
  weights: number[];
  slowStartMs: number;
  borrowing: BorrowingOptions | undefined;
  readings: PlbReadings;
  reference: RoleVector;
  ops: Op[];
};

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  k: fc.integer({ min: 1, max: 8 }),
  weights: fc.array(fc.constantFrom(1, 1, 2, 3), { minLength: 8, maxLength: 8 }),
  slowStartMs: fc.constantFrom(0, 5000),
  borrowing: fc.constantFrom<BorrowingOptions | undefined>(
    undefined,
    { freemium: { minLoad: 1, pressureRatio: 1.1, returnRatio: 1 } },
    { premium: { enabled: false }, freemium: { minLoad: 0, pressureRatio: 1.1, returnRatio: 5 } },
  ),
  readings: fc.record({ ...readingArbs, repair: fc.constantFrom<PlbReadings['repair']>('target', 'shared') }),
  reference: fc.constantFrom<RoleVector>(
    { premium: 2, mixed: 1, freemium: 2 },
    { premium: 3, mixed: 0, freemium: 2 },
    { premium: 1, mixed: 0, freemium: 3 },
    { premium: 0, mixed: 3, freemium: 1 },
  ),
  ops: fc.array(opArb, { minLength: 1, maxLength: 40 }),
});

/** The healthy replicas premium may be admitted to. */
function premiumUsable(snap: readonly ReplicaSnapshot[]): number {
  return snap.filter((s) => s.healthy && (s.role !== 'freemium' || s.borrowedBy === 'premium')).length;
}

function g1(sc: Scenario): void {
  const { router, ids } = plbRouterOf(sc);
  const readings = resolveReadings(sc.readings);
  const full = fullReference(sc.k, sc.reference, readings.reference, readings.floors);
  const holds = (after: string) => {
    const snap = router.snapshot();
    const live = snap.filter((s) => s.healthy).length;
    const target = repairTarget(live, sc.k, full, readings)!;
    expect(premiumUsable(snap), `G1 after ${after}`).toBeGreaterThanOrEqual(target.premium + target.mixed);
  };
  const open: { replica: string; cls: ServiceClass }[] = [];
  let now = 0;
  for (const op of sc.ops) {
    if (op.t === 'tick') now += op.ms;
    else if (op.t === 'flip') {
      const id = ids[op.r % sc.k]!;
      if (router.snapshot()[op.r % sc.k]!.healthy) router.markDown(id, now);
      else router.markUp(id, now);
      holds(op.t);
    } else if (op.t === 'release') {
      for (let n = 0; n < op.n && open.length > 0; n++) {
        const [s] = open.splice(op.pick % open.length, 1);
        router.release(s!.replica, s!.cls, now);
        holds('release');
      }
    } else {
      for (let n = 0; n < op.n; n++) {
        if (router.snapshot().every((s) => !s.healthy)) break;
        open.push({ replica: router.admit(op.cls, now).replica, cls: op.cls });
        holds(`${op.cls} admission`);
      }
    }
  }
}

describe('G1: premium keeps the replicas its target gives it', () => {
  it('after every admission, release, down and rejoin, whatever freemium borrowed', () => {
    fc.assert(
      fc.property(scenarioArb, (sc) => g1(sc)),
      { numRuns: 400 },
    );
  });
});
