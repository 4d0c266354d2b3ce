// Router microbenchmark: admit+release pairs per second for each strategy at K=5, 100 and 1000, under a
// steady number of open sessions (20 per replica, oldest released first, class mix P25:F75).
// Run: npm run bench (builds, then node --import tsx benchmarks/router-bench.ts [--ms 400] [--sizes 5,1000])
import Table from 'cli-table3';
import { performance } from 'node:perf_hooks';
import type { AdmittingRouter } from '../src/router/admission/admission.js';
import type { ServiceClass, StrategyName } from '../src/router/index.js';

// Measures the built library (dist/, what users get; `npm run bench` builds first), typed from src/.
const lib = (await import('../dist/router/index.js' as string)) as typeof import('../src/router/index.js');
const { createRouter, STRATEGY_NAMES } = lib;

const argOf = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const SIZES = (argOf('--sizes') ?? '5,100,1000').split(',').map(Number);
const OPEN_PER_REPLICA = 20;
const MEASURE_MS = Number(argOf('--ms') ?? 700);

interface Result {
  strategy: StrategyName;
  k: number;
  perSec: number;
  nsPerOp: number;
}

interface Bench {
  strategy: StrategyName;
  k: number;
  /** run n admit+release pairs */
  step: (n: number) => void;
}

function setup(strategy: StrategyName, k: number): Bench {
  const ids = Array.from({ length: k }, (_, i) => `r${i + 1}`);
  const router = createRouter({ strategy, replicas: ids });
  const open = k * OPEN_PER_REPLICA;
  const ringReplica: string[] = new Array<string>(open);
  const ringClass: ServiceClass[] = new Array<ServiceClass>(open);
  let seed = 42;
  const nextClass = (): ServiceClass => {
    seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
    return seed % 4 === 0 ? 'premium' : 'freemium';
  };
  let now = 0;
  for (let i = 0; i < open; i++) {
    const cls = nextClass();
    ringClass[i] = cls;
    ringReplica[i] = router.admit(cls, now).replica;
  }
  let head = 0;
  const step = (n: number): void => {
    for (let j = 0; j < n; j++) {
      router.release(ringReplica[head] as string, ringClass[head] as ServiceClass, now);
      const cls = nextClass();
      ringClass[head] = cls;
      ringReplica[head] = router.admit(cls, now).replica;
      head = head + 1 === open ? 0 : head + 1;
      if ((j & 127) === 0) now += 1;
    }
    router.drainChanges();
  };
  step(20_000); // warm-up
  return { strategy, k, step };
}

/** ns per pair over one slice of about MEASURE_MS / ROUNDS. */
function measure(b: Bench): number {
  let ops = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < MEASURE_MS / ROUNDS) {
    b.step(5_000);
    ops += 5_000;
    elapsed = performance.now() - start;
  }
  return (elapsed * 1e6) / ops;
}

/**
 * The queueing strategies at their limit (20 sessions a replica, every slot taken, sessions waiting):
 * each step releases the oldest session, pumps the queue (a waiter takes the freed slot, wherever the
 * inner router would rather have put it) and queues a newcomer: the path of a saturated fleet.
 */
function setupSaturated(strategy: StrategyName, k: number): Bench {
  const ids = Array.from({ length: k }, (_, i) => `r${i + 1}`);
  const admission = {
    limits: { mode: 'fixed' as const, limit: OPEN_PER_REPLICA },
    queue: { capacity: 1_000_000, timeoutMs: Number.POSITIVE_INFINITY },
  };
  const router = createRouter({ strategy, replicas: ids, admission }) as AdmittingRouter<number>;
  const open: { replica: string; cls: ServiceClass }[] = [];
  let seed = 7;
  const nextClass = (): ServiceClass => {
    seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff;
    return seed % 4 === 0 ? 'premium' : 'freemium';
  };
  let ticket = 0;
  const arrive = (): void => {
    const cls = nextClass();
    const a = router.request(cls, ticket++, 0);
    if (typeof a === 'object') open.push({ replica: a.replica, cls });
  };
  while (open.length < k * OPEN_PER_REPLICA || router.queued() < 10) arrive();
  let head = 0;
  const step = (n: number): void => {
    for (let j = 0; j < n; j++) {
      const o = open[head] as { replica: string; cls: ServiceClass };
      router.release(o.replica, o.cls, 0);
      for (const h of router.pump(0))
        if (h.replica !== undefined) open.push({ replica: h.replica, cls: h.cls });
      arrive();
      head++;
      if (head > 4096) {
        open.splice(0, head);
        head = 0;
      }
    }
    router.drainChanges();
  };
  step(20_000);
  return { strategy, k, step };
}

// The machine may be shared: interleave all configurations over several rounds and keep each one's
// best round, so a noisy neighbour slows a round rather than one strategy.
const ROUNDS = 7;
const benches: Bench[] = [];
for (const k of SIZES) for (const strategy of STRATEGY_NAMES) benches.push(setup(strategy, k));
const QUEUEING: readonly StrategyName[] = ['plb-admit', 'lc-queue'];
const saturated: Bench[] = [];
for (const k of SIZES) for (const strategy of QUEUEING) saturated.push(setupSaturated(strategy, k));
const all = [...benches, ...saturated];
const best = all.map(() => Number.POSITIVE_INFINITY);
for (let round = 0; round < ROUNDS; round++) {
  all.forEach((b, i) => {
    best[i] = Math.min(best[i] as number, measure(b));
  });
}
const resultOf = (b: Bench, i: number): Result => ({
  strategy: b.strategy,
  k: b.k,
  nsPerOp: best[i] as number,
  perSec: 1e9 / (best[i] as number),
});
const results: Result[] = benches.map(resultOf);
const saturatedResults: Result[] = saturated.map((b, i) => resultOf(b, benches.length + i));

const table = new Table({ head: ['strategy', 'K', 'admissions/s', 'ns per admit+release'] });
for (const r of results)
  table.push([r.strategy, r.k, Math.round(r.perSec).toLocaleString('en-US'), r.nsPerOp.toFixed(0)]);
console.log(
  `router microbenchmark: admit+release pairs, ${OPEN_PER_REPLICA} open sessions per replica, P25:F75, best of ${ROUNDS} rounds`,
);
console.log(table.toString());
const full = new Table({ head: ['strategy', 'K', 'handouts/s', 'ns per release+pump+request'] });
for (const r of saturatedResults)
  full.push([r.strategy, r.k, Math.round(r.perSec).toLocaleString('en-US'), r.nsPerOp.toFixed(0)]);
console.log(`saturated: every slot taken (limit ${OPEN_PER_REPLICA} a replica), sessions waiting`);
console.log(full.toString());

const get = (s: StrategyName, k: number): Result => {
  const r = results.find((x) => x.strategy === s && x.k === k);
  if (r === undefined) throw new Error(`missing result ${s} K=${k}`);
  return r;
};
const smallest = Math.min(...SIZES);
const largest = Math.max(...SIZES);
const plbVsRr = get('plb', smallest).nsPerOp / get('rr', smallest).nsPerOp;
console.log(
  `plb/rr cost at K=${smallest}: ${plbVsRr.toFixed(2)}x (aim <= 3x) ${plbVsRr <= 3 ? 'ok' : 'MISSED'}`,
);
// Growth with K: the per-session path must not scan the replicas (aim: K=1000 within 3x K=5).
for (const s of STRATEGY_NAMES) {
  const scale = get(s, largest).nsPerOp / get(s, smallest).nsPerOp;
  console.log(
    `${s} cost K=${largest} vs K=${smallest}: ${scale.toFixed(2)}x (aim <= 3x) ${scale <= 3 ? 'ok' : 'MISSED'}`,
  );
}
