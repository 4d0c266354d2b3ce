// Priority admission reads the inner router's live replica state rather than a snapshot of all K per
// session. Its decisions must be the ones the snapshot-and-scan version made: both are driven with
// the same random admissions, requests, releases, cancels, pumps, downs, rejoins, weights and
// latencies, and must agree on every answer and on every state they expose after each step.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPlbError } from '../../src/core/errors.js';
import { SERVICE_CLASSES, type ServiceClass } from '../../src/core/service-class.js';
import { AdmittingRouter } from '../../src/router/admission/admission.js';
import { admissionFor } from '../../src/router/admission/admission-defaults.js';
import type { AdmissionOptions } from '../../src/router/admission/admission-types.js';
import { createRouter } from '../../src/router/router.js';
import type { Router, RouterOptions } from '../../src/router/types.js';
import { ReferenceAdmittingRouter } from '../helpers/admission-reference.js';

type Variant = 'plb-admit' | 'lc-queue' | 'wlc' | 'rr' | 'static' | 'opaque';

interface Setup {
  variant: Variant;
  k: number;
  weights: number[];
  slowStartMs: number;
  admission: Omit<AdmissionOptions, 'slowStartMs'>;
}

type Op =
  | { kind: 'request'; cls: ServiceClass }
  | { kind: 'admit'; cls: ServiceClass }
  | { kind: 'release'; pick: number }
  | { kind: 'cancel'; pick: number }
  | { kind: 'pump' }
  | { kind: 'down' | 'up'; replica: number }
  | { kind: 'weight'; replica: number; weight: number }
  | { kind: 'observe'; cls: ServiceClass; pick: number; latencyMs: number }
  | { kind: 'wait'; ms: number };

/** A router that is not one of the built-in ones: admission must fall back to snapshots. */
function opaque(inner: Router): Router {
  return {
    strategy: inner.strategy,
    admit: (cls, nowMs) => inner.admit(cls, nowMs),
    release: (replica, cls, nowMs) => inner.release(replica, cls, nowMs),
    markDown: (replica, nowMs) => inner.markDown(replica, nowMs),
    markUp: (replica, nowMs) => inner.markUp(replica, nowMs),
    snapshot: () => inner.snapshot(),
    drainChanges: () => inner.drainChanges(),
    setWeight: (replica, weight) => inner.setWeight(replica, weight),
    addReplica: (spec, nowMs) => inner.addReplica(spec, nowMs),
    assign: (replica, cls, nowMs) => (inner.assign as NonNullable<Router['assign']>)(replica, cls, nowMs),
  };
}

/** The router under test and the reference, over two inner routers built alike. */
function build(s: Setup): { fast: AdmittingRouter<number>; ref: ReferenceAdmittingRouter<number> } {
  const replicas = s.weights.map((weight, i) => ({ id: `r${i + 1}`, weight }));
  const base: RouterOptions = {
    strategy: 'plb',
    replicas,
    slowStartMs: s.slowStartMs,
    admission: s.admission,
  };
  if (s.variant === 'plb-admit' || s.variant === 'lc-queue') {
    const fast = createRouter({ ...base, strategy: s.variant }) as AdmittingRouter<number>;
    const innerOpts = { ...base, strategy: s.variant === 'plb-admit' ? 'plb' : 'lc' } as const;
    let opts = admissionFor(base, s.slowStartMs);
    if (s.variant === 'lc-queue') {
      const { guard: _g, premiumReserve: _p, freemiumReserve: _f, ...plain } = admissionFor(base, 0);
      opts = { ...plain, classBlind: true };
    }
    const ref = new ReferenceAdmittingRouter<number>(createRouter(innerOpts), s.variant, opts);
    return { fast, ref };
  }
  const strategy = s.variant === 'opaque' ? 'plb' : s.variant;
  const opts = { ...s.admission, slowStartMs: s.slowStartMs };
  const inner = (): Router => {
    const r = createRouter({ ...base, strategy, admission: undefined });
    return s.variant === 'opaque' ? opaque(r) : r;
  };
  return {
    fast: new AdmittingRouter<number>(inner(), strategy, opts),
    ref: new ReferenceAdmittingRouter<number>(inner(), strategy, opts),
  };
}

const clsArb = fc.constantFrom<ServiceClass>(...SERVICE_CLASSES);

const setupArb: fc.Arbitrary<Setup> = fc.record({
  variant: fc.constantFrom<Variant>('plb-admit', 'lc-queue', 'wlc', 'rr', 'static', 'opaque'),
  k: fc.integer({ min: 2, max: 8 }),
  weights: fc.array(fc.constantFrom(0.5, 1, 1, 2), { minLength: 8, maxLength: 8 }),
  slowStartMs: fc.constantFrom(0, 3000),
  admission: fc.record({
    limits: fc.oneof(
      fc.record({ mode: fc.constant<'fixed'>('fixed'), limit: fc.integer({ min: 1, max: 6 }) }),
      fc.record({
        mode: fc.constant<'gradient'>('gradient'),
        limit: fc.integer({ min: 2, max: 6 }),
        intervalMs: fc.constantFrom(300, 1000),
      }),
    ),
    queue: fc.record({
      capacity: fc.integer({ min: 1, max: 12 }),
      timeoutMs: fc.constantFrom(400, 2000, 10_000),
    }),
    guard: fc.option(
      fc.record({
        target: fc.constant({ kind: 'absolute' as const, ms: 20 }),
        minShare: fc.constantFrom(0, 0.25, 0.5),
        windowMs: fc.constant(2000),
        intervalMs: fc.constant(200),
      }),
      { nil: undefined },
    ),
    premiumReserve: fc.constantFrom(0, 0.1, 0.5),
    freemiumReserve: fc.constantFrom(0, 0.25),
  }),
});

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('request' as const), cls: clsArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('admit' as const), cls: clsArb }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('pump' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('down' as const), replica: fc.nat(7) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('up' as const), replica: fc.nat(7) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('weight' as const),
      replica: fc.nat(7),
      weight: fc.constantFrom(0.25, 0.5, 1, 3),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('observe' as const),
      cls: clsArb,
      pick: fc.nat(),
      latencyMs: fc.integer({ min: 1, max: 60 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 700 }) }),
  },
);

/** An admit's answer, or the code it threw. */
function attempt(f: () => { replica: string }): string {
  try {
    return f().replica;
  } catch (err) {
    if (isPlbError(err)) return `error ${err.code}`;
    throw err;
  }
}

function run(s: Setup, ops: Op[]): void {
  s.weights = s.weights.slice(0, s.k);
  const { fast, ref } = build(s);
  const ids = s.weights.map((_, i) => `r${i + 1}`);
  const open: { replica: string; cls: ServiceClass }[] = [];
  const waiting: number[] = [];
  let now = 0;
  let ticket = 0;
  const took = (replica: string | undefined, cls: ServiceClass): void => {
    if (replica !== undefined && !replica.startsWith('error')) open.push({ replica, cls });
  };
  const pump = (): void => {
    const a = fast.pump(now);
    expect(a).toEqual(ref.pump(now));
    for (const h of a) {
      waiting.splice(waiting.indexOf(h.ticket), 1);
      took(h.replica, h.cls);
    }
  };
  for (const [step, op] of ops.entries()) {
    switch (op.kind) {
      case 'request': {
        const t = ticket++;
        const a = fast.request(op.cls, t, now);
        expect(a, `step ${step}`).toEqual(ref.request(op.cls, t, now));
        if (a === 'queued') waiting.push(t);
        else if (a !== 'full') took(a.replica, op.cls);
        break;
      }
      case 'admit': {
        const a = attempt(() => fast.admit(op.cls, now));
        expect(a, `step ${step}`).toBe(attempt(() => ref.admit(op.cls, now)));
        took(a, op.cls);
        break;
      }
      case 'release': {
        if (open.length === 0) break;
        const [o] = open.splice(op.pick % open.length, 1);
        if (!o) break;
        expect(fast.release(o.replica, o.cls, now)).toBe(ref.release(o.replica, o.cls, now));
        pump();
        break;
      }
      case 'cancel': {
        if (waiting.length === 0) break;
        const [t] = waiting.splice(op.pick % waiting.length, 1);
        if (t === undefined) break;
        expect(fast.cancel(t)).toBe(ref.cancel(t));
        break;
      }
      case 'pump':
        pump();
        break;
      case 'down':
      case 'up': {
        const id = ids[op.replica % ids.length] as string;
        if (op.kind === 'down') {
          fast.markDown(id, now);
          ref.markDown(id, now);
        } else {
          fast.markUp(id, now);
          ref.markUp(id, now);
          pump();
        }
        break;
      }
      case 'weight': {
        const id = ids[op.replica % ids.length] as string;
        fast.setWeight(id, op.weight);
        ref.setWeight(id, op.weight);
        break;
      }
      case 'observe': {
        const id = open.length > 0 ? (open[op.pick % open.length] as { replica: string }).replica : 'r1';
        fast.observe(op.cls, id, op.latencyMs, now);
        ref.observe(op.cls, id, op.latencyMs, now);
        break;
      }
      case 'wait':
        now += op.ms;
        break;
    }
    expect(fast.snapshot(), `step ${step}`).toEqual(ref.snapshot());
    expect(fast.drainChanges()).toEqual(ref.drainChanges());
    expect(fast.stats(now)).toEqual(ref.stats(now));
    for (const cls of [undefined, ...SERVICE_CLASSES]) expect(fast.queued(cls)).toBe(ref.queued(cls));
    expect(fast.nextWakeMs(now)).toBe(ref.nextWakeMs(now));
  }
}

describe('admission: the live-state path decides as the snapshot-and-scan reference', () => {
  it('agrees on every admission, queueing, handout and state over random event sequences', () => {
    fc.assert(
      fc.property(setupArb, fc.array(opArb, { minLength: 20, maxLength: 160 }), (s, ops) => run(s, ops)),
      { numRuns: 150 },
    );
  });

  it('agrees where replicas run full and the fallback scan decides (small limits, reserves, the guard, slow start)', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 40, maxLength: 200 }), (ops) =>
        run(
          {
            variant: 'plb-admit',
            k: 5,
            weights: [1, 1, 2, 0.5, 1],
            slowStartMs: 3000,
            admission: {
              limits: { mode: 'fixed', limit: 2 },
              queue: { capacity: 6, timeoutMs: 2000 },
              guard: { target: { kind: 'absolute', ms: 20 }, windowMs: 2000, intervalMs: 200 },
              premiumReserve: 0.5,
              freemiumReserve: 0.25,
            },
          },
          ops,
        ),
      ),
      { numRuns: 80 },
    );
  });

  it('agrees while gradient limits move under a busy fleet (the free-slot set follows the limits)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<Variant>('plb-admit', 'lc-queue'),
        fc.array(opArb, { minLength: 80, maxLength: 250 }),
        (variant, ops) =>
          run(
            {
              variant,
              k: 4,
              weights: [1, 1, 1, 1],
              slowStartMs: 0,
              admission: {
                limits: { mode: 'gradient', limit: 2, intervalMs: 100, smoothing: 1 },
                queue: { capacity: 8, timeoutMs: 10_000 },
              },
            },
            ops,
          ),
      ),
      { numRuns: 80 },
    );
  });
});
