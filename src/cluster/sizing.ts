/**
 * Sizing a cluster for a workload (DESIGN.md, Scale): every replica must be able to hold every
 * session that could land on it when it is the only survivor, plus plb's own connections.
 */
import { PlbError } from '../core/errors.js';

export const MIN_MAX_CONNECTIONS = 20;
export const MAX_MAX_CONNECTIONS = 20_000;

/**
 * Connections beyond the sessions: the health checker's one, `cluster status`, the dataset check,
 * a calibration probe, and slack for sessions whose close has not reached the server yet. plb
 * connects as the superuser, so superuser_reserved_connections does not protect any of these.
 */
export const CONNECTION_RESERVE = 20;

/** Memory per server that is not per connection (shared_buffers, WAL buffers, catalog caches). */
const BASE_MEMORY_MB = 256;
/** A backend's private memory after a few queries (catalog caches, work_mem headroom). */
const MEMORY_PER_CONNECTION_MB = 3;

/**
 * max_connections that lets one replica hold `sessions` concurrent sessions, and `plb` more
 * connections of plb's own beyond the reserve's (routerConnections).
 */
export function connectionsFor(sessions: number, plb = 0): number {
  return Math.max(MIN_MAX_CONNECTIONS, Math.ceil(sessions) + CONNECTION_RESERVE + plb);
}

/**
 * What many routers hold on every replica beyond the reserve's one health checker: a checker per
 * further router (each application instance checks on its own) and each process's reader of the
 * `replica` view.
 */
export function routerConnections(checkers: number, readers: number): number {
  return Math.max(0, checkers - 1) + readers;
}

/** Memory limit per server for that many connections; never below the old 512 MiB default. */
export function memoryForConnections(maxConnections: number): number {
  return Math.max(512, BASE_MEMORY_MB + MEMORY_PER_CONNECTION_MB * maxConnections);
}

/**
 * Fails before anything starts when an existing cluster cannot hold the sessions a bench may put
 * on one replica; names the flag the user controls and the limit.
 */
export function checkCapacity(opts: {
  sessions: number;
  cluster: string;
  maxConnections: number;
  field: string;
  /** routerConnections (default 0). */
  plbConnections?: number;
}): void {
  const need = connectionsFor(opts.sessions, opts.plbConnections);
  if (need <= opts.maxConnections) return;
  throw new PlbError(
    'BAD_INPUT',
    `${opts.field}: ${opts.sessions} sessions need max_connections >= ${need} on every replica (one survivor holds them all), but cluster ${opts.cluster} has ${opts.maxConnections}`,
    {
      hint: `plb cluster down --name ${opts.cluster}, then let bench bring one up, or plb cluster up --max-connections ${need}`,
    },
  );
}
