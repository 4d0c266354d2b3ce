/**
 * The arrival models of a run's clients: a closed population that joins over the ramp-up, each
 * client running sessions one after another, or open Poisson arrivals of sessions whatever
 * happens to them.
 */
import type { Rng } from '../core/rng.js';
import type { ServiceClass } from '../core/service-class.js';
import { nearestRank } from '../metrics/math.js';
import type { RunWriter } from '../metrics/types.js';
import type { WorkloadSpec } from '../run-format/config.js';
import { clientZone } from '../router/zones.js';
import { runClient, runSession, type SessionContext } from './session-loop.js';
import { splitByMix } from './spec.js';

export interface Arrivals {
  /** Every client (closed) or the arrival loop (open); settled once all sessions ended. */
  tasks: Promise<unknown>[];
  /** Open model: how late each session started against its schedule, ms (closed: none). */
  scheduleLags: () => number[];
}

/**
 * The application instance of client i (closed model, i in the seeded client order) or session i
 * (open model), of n: round robin (config.json routers.assignment). It draws nothing, so one
 * instance is exactly the run without instances, and which classes an instance gets is the
 * seeded shuffle's.
 */
export function instanceOf(i: number, n: number): number {
  return i % n;
}

/**
 * Starts the clients of `workload`; rng forks 1-4, 100+i and 1000+n are theirs. Several contexts:
 * one per application instance, each client (or open-model session) in instanceOf's.
 */
export function startClients(
  contexts: SessionContext | readonly SessionContext[],
  workload: WorkloadSpec,
  plan: { warmupS: number; durationS: number },
  rng: Rng,
  /** Share of clients per zone (--client-zones): each client draws its zone. */
  clientZones?: Readonly<Record<string, number>>,
  /** --workers: the instances this process runs (the others' clients draw the same, and skip). */
  owns: (instance: number) => boolean = () => true,
): Arrivals {
  const ctxs = Array.isArray(contexts)
    ? (contexts as readonly SessionContext[])
    : [contexts as SessionContext];
  const ctxOf = (i: number): SessionContext => ctxs[instanceOf(i, ctxs.length)] as SessionContext;
  const tasks: Promise<unknown>[] = [];
  let lags: number[] = [];
  if (workload.model === 'closed') {
    const rampMs = (workload.rampUpS ?? plan.warmupS) * 1000;
    const split = splitByMix(workload.clients, workload.mix);
    const classes: ServiceClass[] = [
      ...Array<ServiceClass>(split.premium).fill('premium'),
      ...Array<ServiceClass>(split.freemium).fill('freemium'),
    ];
    // Clients join as a Poisson process over the ramp-up (clamped so all have joined by its end).
    const arrivals = rng.fork(1);
    shuffle(classes, rng.fork(2));
    const zoneDraws = rng.fork(4);
    let at = 0;
    classes.forEach((cls, i) => {
      at += arrivals.exp(rampMs / Math.max(1, classes.length));
      const zone = clientZones ? clientZone(clientZones, zoneDraws.next()) : undefined;
      // Drawn whether or not this process runs it: every process sees the same schedule.
      const stream = rng.fork(100 + i);
      if (!owns(instanceOf(i, ctxs.length))) return;
      tasks.push(runClient(ctxOf(i), cls, stream, Math.min(at, rampMs), zone));
    });
  } else {
    tasks.push(
      openArrivals(ctxOf, workload, rng.fork(3), plan.durationS * 1000, clientZones, (n) =>
        owns(instanceOf(n, ctxs.length)),
      ).then((l) => {
        lags = l;
      }),
    );
  }
  return { tasks, scheduleLags: () => lags };
}

/** Open model: sessions arrive as a Poisson process at `rate` per second, whatever happens to them. */
async function openArrivals(
  ctxOf: (n: number) => SessionContext,
  spec: WorkloadSpec,
  rng: Rng,
  durationMs: number,
  zoneShares?: Readonly<Record<string, number>>,
  owns: (n: number) => boolean = () => true,
): Promise<number[]> {
  const ctx = ctxOf(0);
  const lags: number[] = [];
  const zoneDraws = rng.fork(4);
  const running = new Set<Promise<unknown>>();
  let next = 0;
  let n = 0;
  const premiumShare = spec.mix.premium / (spec.mix.premium + spec.mix.freemium);
  while (!ctx.stopping()) {
    next += rng.exp(1000 / spec.rate);
    if (next >= durationMs) break;
    await ctx.clock.sleep(next - ctx.clock.now());
    if (ctx.stopping()) break;
    const lag = Math.max(0, ctx.clock.now() - next);
    lags.push(lag);
    const cls: ServiceClass = rng.next() < premiumShare ? 'premium' : 'freemium';
    // Another process's session: its draws made (the same schedule everywhere), not run here.
    if (!owns(n)) {
      rng.fork(1000 + n++);
      continue;
    }
    if (running.size >= spec.maxOpenSessions) {
      ctxOf(n).recorder.admissionFailed(cls, ctx.clock.now(), 'overload');
      continue;
    }
    const zone = zoneShares ? clientZone(zoneShares, zoneDraws.next()) : undefined;
    const own = ctxOf(n);
    const p = runSession(own, cls, rng.fork(1000 + n++), next, zone);
    running.add(p);
    void p.finally(() => running.delete(p));
  }
  await Promise.allSettled([...running]);
  return lags;
}

/** The open model's start lags, as a note in the run and a log line (nothing when there are none). */
export function logScheduleLag(
  lags: number[],
  writer: RunWriter,
  endMs: number,
  log: (line: string) => void,
): void {
  if (lags.length === 0) return;
  const sorted = [...lags].sort((a, b) => a - b);
  const lag = {
    meanMs: sorted.reduce((s, x) => s + x, 0) / sorted.length,
    p95Ms: nearestRank(sorted, 95) ?? 0,
    maxMs: sorted[sorted.length - 1] ?? 0,
  };
  writer.event({ type: 'note', tMs: endMs, what: 'schedule-lag', ...lag });
  log(
    `open model: ${sorted.length} sessions scheduled; start lag mean ${lag.meanMs.toFixed(1)} ms, p95 ${lag.p95Ms.toFixed(1)} ms, max ${lag.maxMs.toFixed(1)} ms`,
  );
}

function shuffle<T>(xs: T[], rng: Rng): void {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    const a = xs[i] as T;
    xs[i] = xs[j] as T;
    xs[j] = a;
  }
}
