/**
 * The routers of a run (DESIGN.md, "Many routers"): `--routers N` application instances, each
 * with its own router, health view and clients (`local`: a router counts its own sessions;
 * `replica`: it also reads every replica's counts every interval, view-poller.ts), or one router
 * state they all share (`global`, the reference). One router and the local view is the run as it
 * always was: the same router, checker and data source, and nothing more recorded.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { routerConnections } from '../cluster/sizing.js';
import type { RunWriter } from '../metrics/types.js';
import type { RunSummary } from '../run-format/summary.js';
import { RouterBook } from '../metrics/routers/router-book.js';
import { PlbError } from '../core/errors.js';
import type { ServiceClass } from '../core/service-class.js';
import type { SessionRouter } from '../router/types.js';
import { isQueueingRouter, type QueueingRouter } from '../workload/admission-wait.js';
import { ROUTER_ASSIGNMENT, type BenchConfig, type RoutersConfig } from '../run-format/config.js';
import type { RouterFactory } from './options/router-settings.js';
import { DEFAULT_VIEW_INTERVAL_MS } from './options/routers-options.js';

/** Role changes that are borrowing decisions (how often a router changes its mind). */
const FLIPS = new Set(['borrow', 'return', 'reclaim']);
export const isFlip = (reason: string): boolean => FLIPS.has(reason);

/** config.json's `routers` of a run, older runs' (absent) as one router. */
export function routersOf(config: Pick<BenchConfig, 'routers'>): RoutersConfig {
  return (
    config.routers ?? {
      count: 1,
      view: 'local',
      assignment: ROUTER_ASSIGNMENT,
      viewIntervalMs: DEFAULT_VIEW_INTERVAL_MS,
    }
  );
}

/**
 * The connections many routers hold on each replica beyond one checker (cluster sizing): a checker
 * per router, and the replica view's poller of every process (W workers or W nodes: W pollers).
 */
export function fleetConnections(r: RoutersConfig): number {
  const checkers = r.view === 'global' ? 1 : r.count;
  return routerConnections(checkers, r.view === 'replica' ? (r.workers ?? 1) : 0);
}

export class RouterFleet {
  /** Distinct routers: one per instance, or one for all (global). */
  readonly routers: SessionRouter[];
  /** Per-router figures, with more than one instance. */
  readonly book: RouterBook | undefined;
  readonly spec: RoutersConfig;
  /** Replica view: the sessions really open per replica (the routers' own counts are views). */
  private readonly open: Map<string, Record<ServiceClass, number>> | undefined;
  private readonly strategy: string;

  constructor(
    config: BenchConfig,
    readonly ids: readonly string[],
    createRouter: RouterFactory,
    private readonly writer: RunWriter,
  ) {
    this.spec = routersOf(config);
    this.strategy = config.strategy;
    const { count, view } = this.spec;
    this.book = count > 1 ? new RouterBook(count, view) : undefined;
    this.open =
      view === 'replica' ? new Map(ids.map((id) => [id, { premium: 0, freemium: 0 }] as const)) : undefined;
    const n = view === 'global' ? 1 : count;
    this.routers = Array.from({ length: n }, (_, j) => {
      const router = createRouter([...ids], (c) => {
        writer.event({
          type: 'role',
          tMs: c.nowMs,
          replica: c.replica,
          from: c.from,
          to: c.to,
          reason: c.reason,
          ...(j > 0 ? { router: j } : {}),
        });
        if (FLIPS.has(c.reason)) this.book?.flip(j, c.nowMs);
      });
      return this.open ? counted(router, this.open) : router;
    });
  }

  /** The router instance i's sessions go through (global: the one). */
  routerOf(instance: number): number {
    return this.routers.length === 1 ? 0 : instance;
  }

  /** Router j's checker (or the oracle) changed its view of a replica; recorded (routers past the first: with `router`). */
  setHealth(j: number, replica: string, state: 'up' | 'down', via: string, cause: string, tMs: number): void {
    const r = this.routers[j];
    if (r === undefined) return;
    if (state === 'down') r.markDown(replica, tMs);
    else r.markUp(replica, tMs);
    this.writer.event({ type: 'detect', tMs, replica, state, via, cause, ...(j > 0 ? { router: j } : {}) });
  }

  /** Lag or plan weights reach every router. */
  setWeight(replica: string, weight: number): void {
    for (const r of this.routers) r.setWeight?.(replica, weight);
  }

  /**
   * timeline.csv's view: the first router's roles and health, and the sessions really open (one
   * router: its own snapshot, as always).
   */
  readonly sampled: Pick<SessionRouter, 'snapshot'> = {
    snapshot: () => {
      const first = this.routers[0] as SessionRouter;
      if (this.routers.length === 1 && !this.open) return first.snapshot();
      const others = this.open ? [] : this.routers.slice(1).map((r) => r.snapshot());
      return first.snapshot().map((s, i) => {
        let { premium, freemium } = this.open?.get(s.id) ?? s.sessions;
        for (const o of others) {
          premium += o[i]?.sessions.premium ?? 0;
          freemium += o[i]?.sessions.freemium ?? 0;
        }
        return { ...s, sessions: { premium, freemium } };
      });
    },
  };

  /** Each second: how far the routers disagree (nothing with one router). */
  perSecond(tMs: number): void {
    if (this.book === undefined) return;
    this.book.sample(
      tMs,
      this.routers.map((r) => r.snapshot()),
    );
  }

  /**
   * With several instances: the per-router section added to the summary (each phase and the fault
   * interval), and summary.json rewritten whole (also with --workers' per-worker section).
   */
  finish(summary: RunSummary, summaryPath: string): void {
    if (this.book === undefined && summary.workers === undefined) return;
    if (this.book)
      summary.routers = this.book.summarize([
        ...summary.phases,
        ...(summary.faultInterval ? [summary.faultInterval] : []),
      ]);
    writeFileSync(`${summaryPath}.tmp`, `${JSON.stringify(summary, null, 2)}\n`);
    renameSync(`${summaryPath}.tmp`, summaryPath);
  }

  /** The routers the replica view's poller feeds. */
  observers(): Required<Pick<SessionRouter, 'observeSessions'>>[] {
    return this.routers.map((r) => {
      const observe = r.observeSessions?.bind(r);
      if (observe === undefined)
        throw new PlbError(
          'INTERNAL',
          `--router-view replica: strategy ${this.strategy} takes no counts read elsewhere`,
        );
      return { observeSessions: observe };
    });
  }
}

/** The replica view's router: every admission and release also counted as really open. */
function counted(inner: SessionRouter, open: Map<string, Record<ServiceClass, number>>): SessionRouter {
  const add = (replica: string, cls: ServiceClass, d: number): void => {
    const c = open.get(replica);
    if (c) c[cls] = Math.max(0, c[cls] + d);
  };
  return {
    admit: (cls, nowMs, zone) => {
      const a = inner.admit(cls, nowMs, zone);
      add(a.replica, cls, 1);
      return a;
    },
    release: (replica, cls, nowMs) => {
      add(replica, cls, -1);
      return inner.release(replica, cls, nowMs);
    },
    markDown: (replica, nowMs) => inner.markDown(replica, nowMs),
    markUp: (replica, nowMs) => inner.markUp(replica, nowMs),
    setWeight: (replica, weight) => inner.setWeight?.(replica, weight),
    ...(inner.observeSessions ? { observeSessions: inner.observeSessions.bind(inner) } : {}),
    snapshot: () => inner.snapshot(),
    ...(isQueueingRouter(inner) ? queueCounted(inner, add) : {}),
  };
}

/** A queueing router's requests and handouts counted as open too (its waiter stays in front of it). */
function queueCounted(
  inner: QueueingRouter,
  add: (replica: string, cls: ServiceClass, d: number) => void,
): Omit<QueueingRouter, 'release'> {
  return {
    request: (cls, ticket, nowMs) => {
      const r = inner.request(cls, ticket, nowMs);
      if (typeof r === 'object') add(r.replica, cls, 1);
      return r;
    },
    pump: (nowMs) => {
      const out = inner.pump(nowMs);
      for (const h of out) if (h.replica !== undefined) add(h.replica, h.cls, 1);
      return out;
    },
    cancel: (ticket) => inner.cancel(ticket),
    nextWakeMs: (nowMs) => inner.nextWakeMs(nowMs),
    observe: (cls, replica, latencyMs, nowMs) => inner.observe(cls, replica, latencyMs, nowMs),
  };
}
