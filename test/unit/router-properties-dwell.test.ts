// hold=dwell: the specification (decidePlbAdmission fed its own BorrowDwell), the second one written
// apart from the router (test/helpers/plb-spec.ts) and the router must agree on every admission,
// reclaim, borrow and return, whatever events come between the admissions, under either lend and
// reclaim reading and with borrowing one way or both.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BORROW_DWELL_MS,
  BorrowDwell,
  createRouter,
  decidePlbAdmission,
  otherClass,
  READING_CHOICES,
  resolveBorrowing,
  type BorrowingOptions,
  type PlbReadings,
  type PlbReplicaView,
  type ServiceClass,
} from '../../src/router/index.js';
import { SpecDwell, specAdmit } from '../helpers/plb-spec.js';

type Op =
  | { t: 'admit'; heavy: boolean; n: number }
  | { t: 'release'; pick: number }
  | { t: 'flip'; r: number }
  | { t: 'tick'; ms: number };

// Few replicas, one class doing most of the admitting in bursts, and events that always change
// health: the states where a class has pressure and no lender to borrow come often.
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('admit' as const),
      heavy: fc.constantFrom(true, true, true, false),
      n: fc.integer({ min: 1, max: 12 }),
    }),
  },
  { weight: 2, arbitrary: fc.nat(1000).map((pick) => ({ t: 'release' as const, pick })) },
  { weight: 3, arbitrary: fc.nat(4).map((r) => ({ t: 'flip' as const, r })) },
  {
    weight: 3,
    arbitrary: fc
      .oneof(fc.constantFrom(0, 1000, 2000), fc.integer({ min: 0, max: 3000 }))
      .map((ms) => ({ t: 'tick' as const, ms })),
  },
);

const EAGER = {
  premium: { minLoad: 1, pressureRatio: 1.2, returnRatio: 1 },
  freemium: { minLoad: 1, pressureRatio: 1.5, returnRatio: 0.8 },
};

// The defaults, eager thresholds both ways, and eager one way only.
const borrowingArb = fc.constantFrom<BorrowingOptions | undefined>(
  undefined,
  EAGER,
  { ...EAGER, freemium: { enabled: false } },
  { ...EAGER, premium: { enabled: false } },
);

type Scenario = {
  k: number;
  heavy: ServiceClass;
  slowStartMs: number;
  borrowing: BorrowingOptions | undefined;
  rules: Pick<PlbReadings, 'lend' | 'reclaim'>;
  ops: Op[];
};

// The other readings change only what events do to the roles (router-spec.test.ts varies them).
const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  k: fc.integer({ min: 2, max: 3 }),
  heavy: fc.constantFrom<ServiceClass>('freemium', 'premium'),
  slowStartMs: fc.constantFrom(0, 5000),
  borrowing: borrowingArb,
  rules: fc.record({
    lend: fc.constantFrom(...READING_CHOICES.lend),
    reclaim: fc.constantFrom(...READING_CHOICES.reclaim),
  }),
  ops: fc.array(opArb, { minLength: 1, maxLength: 30 }),
});

function agree(sc: Scenario): void {
  const ids = Array.from({ length: sc.k }, (_, i) => `r${i + 1}`);
  const router = createRouter({
    strategy: 'plb',
    replicas: ids,
    slowStartMs: sc.slowStartMs,
    borrowing: sc.borrowing,
    readings: { hold: 'dwell', ...sc.rules },
  });
  const borrowing = resolveBorrowing(sc.borrowing);
  const dwell = new BorrowDwell();
  const secondDwell = new SpecDwell(BORROW_DWELL_MS);
  const upSince: (number | undefined)[] = ids.map(() => undefined);
  const open: { i: number; cls: ServiceClass }[] = [];
  let now = 0;
  for (const op of sc.ops) {
    if (op.t === 'tick') now += op.ms;
    else if (op.t === 'flip') {
      const i = op.r % sc.k;
      if (router.snapshot()[i]!.healthy) router.markDown(ids[i]!, now);
      else {
        upSince[i] = now;
        router.markUp(ids[i]!, now);
      }
    } else if (op.t === 'release') {
      if (open.length === 0) continue;
      const [s] = open.splice(op.pick % open.length, 1);
      router.release(ids[s!.i]!, s!.cls, now);
    } else {
      const cls = op.heavy ? sc.heavy : otherClass(sc.heavy);
      for (let n = 0; n < op.n; n++) {
        router.drainChanges();
        const views: PlbReplicaView[] = router
          .snapshot()
          .map((s, index) => ({ ...s, index, upSinceMs: upSince[index] }));
        const spec = decidePlbAdmission(views, cls, now, sc.slowStartMs, borrowing, dwell, sc.rules);
        expect(specAdmit(views, cls, now, sc.slowStartMs, borrowing, sc.rules, secondDwell)).toEqual(spec);
        if (spec.replica < 0) {
          expect(() => router.admit(cls, now)).toThrow();
          continue;
        }
        const chosen = ids.indexOf(router.admit(cls, now).replica);
        const changes = router.drainChanges();
        const moved = (reason: string) =>
          changes
            .filter((c) => c.reason === reason)
            .map((c) => ids.indexOf(c.replica))
            .sort((a, b) => a - b);
        expect({
          reclaimed: moved('reclaim'),
          borrowed: moved('borrow'),
          returned: moved('return'),
          chosen,
        }).toEqual({
          reclaimed: spec.reclaimed,
          borrowed: spec.borrowed < 0 ? [] : [spec.borrowed],
          returned: spec.returned,
          chosen: spec.replica,
        });
        open.push({ i: chosen, cls });
      }
    }
  }
}

/**
 * The case the specification once got wrong: freemium's borrow condition starts holding at 0, a
 * down leaves no premium replica to lend, one freemium admission sees no lender (the dwell starts
 * over: BorrowDwell's "one admission that sees it false resets it"), the replica rejoins, and 2 s
 * later a freemium admission must not borrow (its condition has held for 0 s, not 2 s).
 */
const DOWN_REJOIN_BURST: Scenario = {
  k: 2,
  heavy: 'freemium',
  slowStartMs: 0,
  borrowing: undefined,
  rules: { lend: 'always', reclaim: 'none' },
  ops: [
    { t: 'admit', heavy: true, n: 4 },
    { t: 'flip', r: 0 },
    { t: 'admit', heavy: true, n: 1 },
    { t: 'flip', r: 0 },
    { t: 'tick', ms: 2000 },
    { t: 'admit', heavy: true, n: 1 },
  ],
};

describe('hold=dwell: specification and router', () => {
  it('agree on every admission over random events, admissions and releases', () => {
    fc.assert(
      fc.property(scenarioArb, (sc) => agree(sc)),
      { numRuns: 1000, examples: [[DOWN_REJOIN_BURST]] },
    );
  });

  it('a down, a rejoin and a freemium burst: no borrow before the condition held for the dwell', () => {
    const router = createRouter({
      strategy: 'plb',
      replicas: ['r1', 'r2'],
      slowStartMs: 0,
      readings: { hold: 'dwell' },
    });
    for (let i = 0; i < 4; i++) router.admit('freemium', 0); // r2 at pressure 4 >= 2 x r1's key 1
    router.markDown('r1', 0);
    router.admit('freemium', 0); // r2 is mixed, no premium replica to lend: the dwell starts over
    router.markUp('r1', 0); // back to premium 1, freemium 1
    router.drainChanges();
    expect(router.admit('freemium', 2000).replica).toBe('r2');
    expect(router.drainChanges().filter((c) => c.reason === 'borrow')).toEqual([]);
    // the condition now holds from 2000 on: at 4000 it has held for the dwell
    expect(router.admit('freemium', 4000).replica).toBe('r1');
    expect(router.drainChanges().map((c) => c.reason)).toEqual(['borrow']);
  });
});
