/**
 * Many routers (DESIGN.md, "Many routers"): `--routers N` application instances, each with its own
 * router and health checker, and what each router knows of the sessions (`--router-view`). The
 * flags, their checks and their parse live here; flags.ts spreads them in. No oclif defaults: a
 * flag left out is told apart from one given (`--routers` with `--via` is refused even at 1).
 */
import { Flags } from '@oclif/core';
import { parseDuration } from '../../core/duration.js';
import { PlbError } from '../../core/errors.js';
import {
  ROUTER_ASSIGNMENT,
  ROUTER_VIEWS,
  type RouterView,
  type RoutersConfig,
} from '../../run-format/config.js';

/** Most routers a run takes (a simulated fleet of 1000 clients has at most that many instances). */
const MAX_ROUTERS = 1000;
export const DEFAULT_VIEW_INTERVAL_MS = 1000;
const MIN_VIEW_INTERVAL_MS = 10;
const MAX_VIEW_INTERVAL_MS = 60_000;

export const routersFlags = {
  routers: Flags.string({
    description: `application instances N (1..${MAX_ROUTERS}), each with its own router and health checker; sessions go to them round robin over the seeded client order (default 1: one router sees every session)`,
    helpGroup: 'PLB ROUTER',
  }),
  'router-view': Flags.string({
    description:
      "what each router knows of the sessions: local (its own), global (one router state every instance shares: the reference), replica (every --view-interval it reads each replica's per-class session counts from pg_stat_activity, plus its own since); default local",
    options: [...ROUTER_VIEWS],
    helpGroup: 'PLB ROUTER',
  }),
  'view-interval': Flags.string({
    description: `with --router-view replica: how often the replicas' counts are read, e.g. 500ms, 2s (default ${DEFAULT_VIEW_INTERVAL_MS / 1000}s)`,
    helpGroup: 'PLB ROUTER',
  }),
  workers: Flags.string({
    description:
      'real drivers: run the routers and their sessions in W processes (1..--routers), worker w owning the instances i with i mod W = w; the parent keeps the plan, the faults and the recorder and merges every value (default: one process)',
    helpGroup: 'PLB ROUTER',
  }),
  'worker-index': Flags.string({
    description:
      'several nodes: this process runs only worker i of --workers W (0..W-1), in-process, into its own run directory; index 0 alone prepares the cluster, injects the faults and runs the write load; needs --start-at; merge the nodes with plb bench merge',
    helpGroup: 'PLB ROUTER',
  }),
  'start-at': Flags.string({
    description:
      "with --worker-index: the plan's t0 every node shares, as epoch milliseconds or an ISO time (e.g. 2026-12-07T12:00:00Z); the node prepares, then waits for it",
    helpGroup: 'PLB ROUTER',
  }),
};

export interface RoutersFlagValues {
  routers?: string | number | undefined;
  'router-view'?: string | undefined;
  'view-interval'?: string | undefined;
  workers?: string | number | undefined;
  'worker-index'?: string | number | undefined;
  'start-at'?: string | undefined;
}

function routerCount(v: string | number): number {
  const n = typeof v === 'number' ? v : v.trim() === '' ? NaN : Number(v);
  if (!Number.isInteger(n) || n < 1 || n > MAX_ROUTERS)
    throw new PlbError('BAD_INPUT', `--routers: must be an integer 1..${MAX_ROUTERS} (got "${String(v)}")`);
  return n;
}

function routerView(v: string): RouterView {
  if (!(ROUTER_VIEWS as readonly string[]).includes(v))
    throw new PlbError('BAD_INPUT', `--router-view: must be ${ROUTER_VIEWS.join(', ')} (got "${v}")`);
  return v as RouterView;
}

function viewIntervalMs(v: string): number {
  const s = parseDuration(v);
  const ms = s === undefined ? NaN : Math.round(s * 1000);
  if (!(ms >= MIN_VIEW_INTERVAL_MS && ms <= MAX_VIEW_INTERVAL_MS))
    throw new PlbError(
      'BAD_INPUT',
      `--view-interval: must be a duration from ${MIN_VIEW_INTERVAL_MS}ms to ${MAX_VIEW_INTERVAL_MS / 1000}s, e.g. 1s (got "${v}")`,
    );
  return ms;
}

function workerCount(v: string | number): number {
  const n = typeof v === 'number' ? v : v.trim() === '' ? NaN : Number(v);
  if (!Number.isInteger(n) || n < 1 || n > MAX_ROUTERS)
    throw new PlbError('BAD_INPUT', `--workers: must be an integer 1..--routers (got "${String(v)}")`);
  return n;
}

function workerIndex(v: string | number): number {
  const n = typeof v === 'number' ? v : v.trim() === '' ? NaN : Number(v);
  if (!Number.isInteger(n) || n < 0 || n >= MAX_ROUTERS)
    throw new PlbError(
      'BAD_INPUT',
      `--worker-index: must be an integer 0..--workers minus 1 (got "${String(v)}")`,
    );
  return n;
}

/** --start-at: epoch ms or an ISO time, as an ISO time; one not in the future is refused. */
function startAt(v: string, nowMs = Date.now()): string {
  const t = /^\d+$/.test(v.trim()) ? Number(v) : Date.parse(v);
  if (!Number.isFinite(t))
    throw new PlbError(
      'BAD_INPUT',
      `--start-at: must be epoch milliseconds or an ISO time such as 2026-12-07T12:00:00Z (got "${v}")`,
    );
  if (t <= nowMs)
    throw new PlbError(
      'BAD_INPUT',
      `--start-at: ${new Date(t).toISOString()} has passed (${((nowMs - t) / 1000).toFixed(1)} s ago); every node needs time to prepare before it`,
    );
  return new Date(t).toISOString();
}

/** The checks by flag name (checks.ts BENCH_CHECKS). */
export const ROUTERS_CHECKS: Record<string, (v: string | number) => unknown> = {
  routers: routerCount,
  'router-view': (v) => routerView(String(v)),
  'view-interval': (v) => viewIntervalMs(String(v)),
  workers: workerCount,
  'worker-index': workerIndex,
  'start-at': (v) => startAt(String(v)),
};

/** The group parsed: config.json's `routers`, and which flags were given (for the checks across flags). */
export interface RoutersSettings {
  config: RoutersConfig;
  given: { routers: boolean; view: boolean; interval: boolean };
}

export function parseRoutersFlags(flags: RoutersFlagValues): RoutersSettings {
  const view = flags['router-view'];
  const interval = flags['view-interval'];
  return {
    config: {
      count: flags.routers === undefined ? 1 : routerCount(flags.routers),
      view: view === undefined ? 'local' : routerView(view),
      assignment: ROUTER_ASSIGNMENT,
      viewIntervalMs: interval === undefined ? DEFAULT_VIEW_INTERVAL_MS : viewIntervalMs(interval),
      ...(flags.workers === undefined ? {} : { workers: workerCount(flags.workers) }),
      ...(flags['worker-index'] === undefined ? {} : { workerIndex: workerIndex(flags['worker-index']) }),
      ...(flags['start-at'] === undefined ? {} : { startAt: startAt(flags['start-at']) }),
    },
    given: {
      routers: flags.routers !== undefined,
      view: view !== undefined,
      interval: interval !== undefined,
    },
  };
}

/**
 * The combinations a bench refuses, each one line naming its flag: the external balancer is the
 * router (`--via`); the replica view needs routers that take counts read elsewhere (not zones:
 * each zone has a router of its own). The queueing strategies judge their limits by the counts read.
 */
export function checkRoutersSettings(
  r: RoutersSettings,
  run: {
    via: boolean;
    strategies: readonly string[];
    zones: boolean;
    sim: boolean;
    oracle?: boolean;
    templates?: boolean;
  },
): void {
  checkWorkers(r.config, run);
  if (run.via && r.given.routers)
    throw new PlbError(
      'BAD_INPUT',
      '--routers: not with --strategy via (the external balancer is the router)',
    );
  if (run.via && r.given.view)
    throw new PlbError(
      'BAD_INPUT',
      '--router-view: not with --strategy via (the external balancer is the router)',
    );
  if (r.given.interval && r.config.view !== 'replica')
    throw new PlbError('BAD_INPUT', '--view-interval: only with --router-view replica');
  if (r.config.view !== 'replica') return;
  if (run.zones)
    throw new PlbError(
      'BAD_INPUT',
      '--router-view replica: not with --zones (each zone has a router of its own)',
    );
}

/** --workers: real drivers only, at most one per router, not with the external balancer. */
function checkWorkers(
  r: RoutersConfig,
  run: { via: boolean; sim: boolean; zones: boolean; oracle?: boolean; templates?: boolean },
): void {
  checkNode(r);
  const w = r.workers;
  if (w === undefined) return;
  if (run.sim)
    throw new PlbError('BAD_INPUT', '--workers: not with --driver sim (one process on one virtual clock)');
  if (run.via)
    throw new PlbError(
      'BAD_INPUT',
      '--workers: not with --strategy via (the external balancer is the router)',
    );
  if (r.view === 'global')
    throw new PlbError(
      'BAD_INPUT',
      '--workers: not with --router-view global (one router state cannot span processes; use local or replica)',
    );
  if (run.zones) throw new PlbError('BAD_INPUT', '--workers: not with --zones');
  if (run.oracle === true)
    throw new PlbError(
      'BAD_INPUT',
      '--workers: not with --oracle (the oracle tells routers in the parent process)',
    );
  if (run.templates === true)
    throw new PlbError('BAD_INPUT', "--workers: not with a workload file's SQL templates");
  if (w > r.count)
    throw new PlbError(
      'BAD_INPUT',
      `--workers: ${w} is more than --routers ${r.count} (a worker owns at least one router)`,
    );
}

/** --worker-index and --start-at: one node of a run over several nodes. */
function checkNode(r: RoutersConfig): void {
  if (r.startAt !== undefined && r.workerIndex === undefined)
    throw new PlbError('BAD_INPUT', '--start-at: only with --worker-index');
  if (r.workerIndex === undefined) return;
  if (r.workers === undefined)
    throw new PlbError('BAD_INPUT', '--worker-index: needs --workers W (the index is of W workers)');
  if (r.workerIndex >= r.workers)
    throw new PlbError(
      'BAD_INPUT',
      `--worker-index: ${r.workerIndex} is out of range for --workers ${r.workers} (0..${r.workers - 1})`,
    );
  if (r.startAt === undefined)
    throw new PlbError('BAD_INPUT', "--worker-index: needs --start-at (the plan's t0 the nodes share)");
}

/** A node of several runs one run: no series, no think-time calibration of its own. */
export function checkNodeSeries(r: RoutersConfig, runs: number, autoThink: boolean): void {
  if (r.workerIndex === undefined) return;
  if (runs !== 1)
    throw new PlbError(
      'BAD_INPUT',
      `--worker-index: one run per node (got ${runs}: one strategy, one mix, no --repeat)`,
    );
  if (autoThink)
    throw new PlbError(
      'BAD_INPUT',
      '--worker-index: not with --think-time auto (each node would calibrate its own; give the think time)',
    );
}
