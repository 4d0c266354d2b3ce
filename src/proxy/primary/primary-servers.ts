/**
 * Where the primary listener's servers come from: the one function to switch when the fleet's
 * resolver (a cluster file, --replica) gives the endpoints instead of a cluster plb made.
 */
import type { Endpoint } from '../../core/endpoint.js';
import { PlbError } from '../../core/errors.js';

export interface PrimaryServers {
  /** The primary as configured (the follower moves off it when another server takes writes). */
  primary: Endpoint;
  /** Every server the follower asks: the primary first, then the replicas. */
  servers: Endpoint[];
}

/** From a cluster's endpoints (driver.endpoints()): the one of kind primary, and all of them. */
export function primaryServers(endpoints: readonly Endpoint[], flag = '--primary-port'): PrimaryServers {
  const primaries = endpoints.filter((e) => e.kind === 'primary');
  const primary = primaries[0];
  if (primary === undefined || primaries.length > 1)
    throw new PlbError(
      'BAD_INPUT',
      `${flag}: the servers must name exactly one primary (got ${primaries.length})` +
        (primaries.length === 0
          ? ': --replica names replicas only; name the primary in a --cluster-file'
          : ''),
    );
  return { primary, servers: [primary, ...endpoints.filter((e) => e.kind !== 'primary')] };
}
