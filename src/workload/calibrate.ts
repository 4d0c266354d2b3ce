/**
 * `--think-time auto`: the think time that puts the reference phase at a target replica CPU for
 * the chosen T, from a short calibration on one real replica under its quota.
 *
 * Model (closed clients, PS replicas): a query costs q CPU-seconds and a connect c; a session has
 * n queries (n - 1 think times Z). At target utilisation u the K replicas of C cores each serve
 *   lambda = u K C / (q + c / n)            queries per second,
 * which T clients offer when one session cycle takes D = T n / lambda:
 *   D = connect + n R + (n - 1) Z   =>   Z = (D - connect - n R) / (n - 1),
 * with R = (q / C) / (1 - u) the mean response of a processor-sharing server of C cores at u.
 */
import type { ClusterDriver } from '../cluster/driver.js';
import type { Credentials, Endpoint } from '../core/endpoint.js';
import { connect } from '../cluster/pg-util.js';
import { openPool, type SessionPool } from './calibrate-pool.js';
import { PlbError } from '../core/errors.js';
import type { ServiceClass } from '../core/service-class.js';
import type { Rng } from '../core/rng.js';
import { splitByMix } from './spec.js';
import type { WorkloadSpec } from '../run-format/config.js';
import { instantiate, type Template } from '../cluster/templates.js';
import { classTemplates } from './statements.js';

/**
 * The replica's cumulative CPU seconds (its cgroup counter, through the driver) as a function;
 * CALIBRATION_FAILED with `hint` when the driver has no reading for it.
 */
export function replicaCpu(driver: ClusterDriver, id: string, hint: string): () => Promise<number> {
  return async () => {
    const v = (await driver.cpuSeconds())[id];
    if (v === undefined) throw new PlbError('CALIBRATION_FAILED', `no CPU reading for ${id}`, { hint });
    return v;
  };
}

export interface ConnectSamples {
  /** Replica CPU over all the connects (each connect, authentication and close), s. */
  cpuS: number;
  /** Wall time of each connect + authentication, ms. */
  wallMs: number[];
  /** With perSample: the replica CPU of each cycle, ms (the counter read after each close). */
  cpuMs: number[] | null;
}

/**
 * `count` connect + authenticate + close cycles in a row, reading the replica's CPU counter around
 * them (and after each one with perSample): what a session's connect costs the server.
 */
export async function measureConnects(opts: {
  replica: Endpoint;
  credentials: Credentials;
  count: number;
  cpu: () => Promise<number>;
  perSample?: boolean;
  signal?: AbortSignal;
}): Promise<ConnectSamples> {
  const wallMs: number[] = [];
  const cpuMs: number[] | null = opts.perSample ? [] : null;
  const c0 = await opts.cpu();
  let last = c0;
  for (let i = 0; i < opts.count && !opts.signal?.aborted; i++) {
    const w0 = performance.now();
    const c = await connect(opts.replica, opts.credentials, { applicationName: 'plb-calibrate' });
    wallMs.push(performance.now() - w0);
    await c.end().catch(() => undefined);
    if (cpuMs) {
      const now = await opts.cpu();
      cpuMs.push((now - last) * 1000);
      last = now;
    }
  }
  return { cpuS: (await opts.cpu()) - c0, wallMs, cpuMs };
}

/** Busy but not saturated: plb's class split loads some replicas above the mean (measured). */
export const DEFAULT_TARGET_CPU = 0.7;

export interface ThinkTimeInputs {
  clients: number;
  replicas: number;
  cpusPerReplica: number;
  targetCpu: number;
  queriesPerSession: number;
  /** CPU-seconds per query and per connect (the replica's side). */
  cpuPerQueryS: number;
  cpuPerConnectS: number;
  /** Wall time of a connect, s. */
  connectWallS: number;
}

export interface ThinkTimeResult {
  thinkTimeMs: number;
  /** Queries per second the cluster serves at the target. */
  targetQps: number;
  responseEstMs: number;
  /** Set when even zero think time cannot reach the target with this T. */
  shortfall: string | null;
}

/** The formula above (pure). */
export function thinkTimeFor(x: ThinkTimeInputs): ThinkTimeResult {
  const n = Math.max(1, x.queriesPerSession);
  const u = Math.min(0.99, Math.max(0.01, x.targetCpu));
  const perQuery = x.cpuPerQueryS + x.cpuPerConnectS / n;
  const targetQps = (u * x.replicas * x.cpusPerReplica) / perQuery;
  const responseS = x.cpuPerQueryS / x.cpusPerReplica / (1 - u);
  const cycleS = (x.clients * n) / targetQps;
  const thinkS = n > 1 ? (cycleS - x.connectWallS - n * responseS) / (n - 1) : 0;
  const shortfall =
    thinkS < 0
      ? `${x.clients} clients cannot reach ${Math.round(u * 100)}% replica CPU even with no think time (about ${Math.round((x.clients * n) / (x.connectWallS + n * responseS))} q/s of ${Math.round(targetQps)} needed)`
      : null;
  return {
    thinkTimeMs: Math.max(0, Math.round(thinkS * 1000)),
    targetQps: Math.round(targetQps * 10) / 10,
    responseEstMs: Math.round(responseS * 10000) / 10,
    shortfall,
  };
}

export interface ClassThinkInputs {
  /** Clients of the class (closed model). */
  clients: number;
  queriesPerSession: number;
  /** CPU-seconds a query of the class costs (its template weights). */
  cpuPerQueryS: number;
  /** Wall time of a session beyond its queries and think times (connect, fixed overheads), s. */
  fixedWallS: number;
  /** The class's think time before scaling: the calibration keeps the ratio between classes. */
  baseThinkMs: number;
}

export interface ThinkTimesResult {
  /** Each class's think time: its base times `scale`. */
  thinkTimeMs: Record<ServiceClass, number>;
  scale: number;
  targetQps: number;
  shortfall: string | null;
}

/** Longest think time the search goes to (an hour): beyond it nothing changes the load. */
const MAX_THINK_MS = 3_600_000;

/**
 * The model above with classes that differ (queries per session, query cost, think time): one
 * factor k scales both classes' think times, and k solves
 *   sum over classes of T_c (n_c q_c + c) / (fixed_c + n_c R_c + (n_c - 1) k Z_c) = u K C
 * (the CPU the sessions offer equals the target). The offer falls as k grows, so bisection finds
 * it. With equal classes this is thinkTimeFor's Z.
 */
export function thinkTimesFor(x: {
  classes: Record<ServiceClass, ClassThinkInputs>;
  replicas: number;
  cpusPerReplica: number;
  targetCpu: number;
  cpuPerConnectS: number;
}): ThinkTimesResult {
  const u = Math.min(0.99, Math.max(0.01, x.targetCpu));
  const capacity = u * x.replicas * x.cpusPerReplica;
  const list = (['premium', 'freemium'] as const).map((cls) => ({ cls, ...x.classes[cls] }));
  // No base at all: the classes think alike.
  const noBase = list.every((c) => !(c.baseThinkMs > 0));
  const base = (c: (typeof list)[number]) => (noBase ? 1 : Math.max(0, c.baseThinkMs));
  const offer = (k: number) => {
    let cpu = 0;
    let qps = 0;
    for (const c of list) {
      const n = Math.max(1, c.queriesPerSession);
      const cycle =
        c.fixedWallS + (n * c.cpuPerQueryS) / x.cpusPerReplica / (1 - u) + ((n - 1) * k * base(c)) / 1000;
      if (!(c.clients > 0 && cycle > 0)) continue;
      cpu += (c.clients * (n * c.cpuPerQueryS + x.cpuPerConnectS)) / cycle;
      qps += (c.clients * n) / cycle;
    }
    return { cpu, qps };
  };
  const maxBase = Math.max(...list.map(base));
  let k = 0;
  const at0 = offer(0);
  if (at0.cpu > capacity && maxBase > 0) {
    let lo = 0;
    let hi = 1;
    while (offer(hi).cpu > capacity && hi * maxBase < MAX_THINK_MS) hi *= 2;
    for (let i = 0; i < 100 && hi - lo > 1e-9 * hi; i++) {
      const mid = (lo + hi) / 2;
      if (offer(mid).cpu > capacity) lo = mid;
      else hi = mid;
    }
    k = hi;
  }
  const at = offer(k);
  const targetQps = at.cpu > 0 ? (at.qps * capacity) / at.cpu : 0;
  const clients = list.reduce((s, c) => s + c.clients, 0);
  const shortfall =
    at0.cpu < capacity * (1 - 1e-9)
      ? `${clients} clients cannot reach ${Math.round(u * 100)}% replica CPU even with no think time (about ${Math.round(at0.qps)} q/s of ${Math.round(targetQps)} needed)`
      : null;
  const think = (c: (typeof list)[number]) => Math.min(MAX_THINK_MS, Math.round(k * base(c)));
  return {
    thinkTimeMs: { premium: think(list[0]!), freemium: think(list[1]!) },
    scale: noBase ? k : Math.round(k * 1e6) / 1e6,
    targetQps: Math.round(targetQps * 10) / 10,
    shortfall,
  };
}

export interface Calibration extends Omit<ThinkTimesResult, 'thinkTimeMs'> {
  /** Premium's think time (both classes' when they think alike). */
  thinkTimeMs: number;
  /** Each class's think time. */
  classThinkTimeMs: Record<ServiceClass, number>;
  targetCpu: number;
  replica: string;
  queries: number;
  cpuPerQueryMs: number;
  connects: number;
  cpuPerConnectMs: number;
  connectWallMs: number;
  tookMs: number;
}

/**
 * Measures q and c on one replica: `concurrency` sessions run queries of the workload's mix for
 * `warmMs` unmeasured and 1.5 s for a first estimate; then queries arrive (Poisson) at the rate
 * that estimate says makes the target CPU, for `budgetMs`, and that measures q; then `connects`
 * connect+close cycles measure c, reading the replica's CPU counter around each step.
 */
export async function calibrateThinkTime(opts: {
  driver: ClusterDriver;
  replica: Endpoint;
  credentials: Credentials;
  workload: WorkloadSpec;
  replicas: number;
  cpusPerReplica: number;
  targetCpu: number;
  rng: Rng;
  budgetMs?: number;
  warmMs?: number;
  connects?: number;
  concurrency?: number;
  /** Replicas loaded the same way at the same time, not measured (the testbed at load). */
  companions?: readonly Endpoint[];
}): Promise<Calibration> {
  const t0 = Date.now();
  const { driver, replica, credentials, workload, rng } = opts;
  const budgetMs = opts.budgetMs ?? 8000;
  const warmMs = opts.warmMs ?? 3000;
  const connects = opts.connects ?? 20;
  const concurrency = opts.concurrency ?? 16;
  const cpuOf = replicaCpu(driver, replica.id, 'give --think-time a value instead of auto');
  // The classes' shares of the queries: clients times queries per session.
  const qOf = (cls: ServiceClass) => workload.mix[cls] * Math.max(1, workload.classes[cls].queriesPerSession);
  const premiumShare = qOf('premium') / (qOf('premium') + qOf('freemium'));
  // A deck of 100 templates in the workload's exact proportions, shuffled and dealt in turn: a
  // few hundred random draws would leave the share of costly scans (and so the result) to chance.
  const deck: Template[] = [];
  for (const cls of ['premium', 'freemium'] as ServiceClass[]) {
    const share = cls === 'premium' ? premiumShare : 1 - premiumShare;
    // Reads only: the replica refuses writes (they go to the primary in the run).
    const ts = classTemplates(workload, cls).filter((t) => !t.writes);
    const total = ts.reduce((a, t) => a + t.weight, 0);
    for (const t of ts) for (let i = 0; i < Math.round((100 * share * t.weight) / total); i++) deck.push(t);
  }
  for (let i = deck.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [deck[i], deck[j]] = [deck[j] as Template, deck[i] as Template];
  }
  if (deck.length === 0)
    throw new PlbError('CALIBRATION_FAILED', 'the workload has no read template to calibrate with', {
      hint: 'give --think-time a value instead of auto',
    });
  let dealt = 0;
  const next = () => instantiate(deck[dealt++ % deck.length] as Template, workload.datasetRows, rng);
  const main = await openPool(replica, credentials, concurrency, next);
  // The other replicas under the same load, unmeasured: they share the host with the measured one,
  // and a bench loads them all at once.
  const others: SessionPool[] = [];
  let queries = 0;
  let queryCpu = 0;
  try {
    for (const e of opts.companions ?? []) others.push(await openPool(e, credentials, concurrency, next));
    const all = [main, ...others];
    // Unmeasured first: a freshly loaded standby pays extra for its first reads (cold caches,
    // hint bits), up to a third more CPU a query than a warm one.
    const warmEnd = Date.now() + warmMs;
    await Promise.all(all.map((p) => p.flood(warmEnd)));
    // A first estimate from back-to-back queries, then the measurement at the target load: the
    // CPU a query costs depends on the load (idle: less; saturated and throttled: more).
    let c0 = await cpuOf();
    const estEnd = Date.now() + Math.min(1500, budgetMs);
    const [n0] = await Promise.all(all.map((p) => p.flood(estEnd)));
    const estimate = Math.max(1e-4, ((await cpuOf()) - c0) / Math.max(1, n0 ?? 0));
    const rate = (opts.targetCpu * opts.cpusPerReplica) / estimate;
    c0 = await cpuOf();
    const [n] = await Promise.all(all.map((p, i) => p.paced(rate, budgetMs, i === 0 ? rng : rng.fork(i))));
    queries = n ?? 0;
    queryCpu = (await cpuOf()) - c0;
  } finally {
    await Promise.all([main, ...others].map((p) => p.close()));
  }
  const conn = await measureConnects({ replica, credentials, count: connects, cpu: cpuOf });
  const connectCpu = Math.max(0, conn.cpuS);
  const connectWall = conn.wallMs.reduce((a, b) => a + b, 0);
  if (!(queries > 0 && queryCpu > 0))
    throw new PlbError('CALIBRATION_FAILED', `no CPU measured on ${replica.id} over ${queries} queries`, {
      hint: 'give --think-time a value instead of auto',
    });
  const cpuPerQueryS = queryCpu / queries;
  const cpuPerConnectS = connectCpu / connects;
  const connectWallS = connectWall / connects / 1000;
  const split = splitByMix(workload.clients, workload.mix);
  // One measured cost a query for both classes (the deck mixes their templates).
  const cls = (c: ServiceClass): ClassThinkInputs => ({
    clients: split[c],
    queriesPerSession: workload.classes[c].queriesPerSession,
    cpuPerQueryS,
    fixedWallS: connectWallS,
    baseThinkMs: workload.classes[c].thinkTimeMs,
  });
  const result = thinkTimesFor({
    classes: { premium: cls('premium'), freemium: cls('freemium') },
    replicas: opts.replicas,
    cpusPerReplica: opts.cpusPerReplica,
    targetCpu: opts.targetCpu,
    cpuPerConnectS,
  });
  const r3 = (v: number) => Math.round(v * 1000) / 1000;
  return {
    ...result,
    thinkTimeMs: result.thinkTimeMs.premium,
    classThinkTimeMs: result.thinkTimeMs,
    targetCpu: opts.targetCpu,
    replica: replica.id,
    queries,
    cpuPerQueryMs: r3(cpuPerQueryS * 1000),
    connects,
    cpuPerConnectMs: r3(cpuPerConnectS * 1000),
    connectWallMs: r3(connectWallS * 1000),
    tookMs: Date.now() - t0,
  };
}
