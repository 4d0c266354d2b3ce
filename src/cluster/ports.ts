/** Loopback ports of a cluster: free or not, and clear of the kernel's ephemeral range. */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { PlbError } from '../core/errors.js';

/** Resolves true when nothing listens on (or holds) 127.0.0.1:port. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/** The kernel's ephemeral (client source) port range, or null where it cannot be read. */
function ephemeralRange(
  file = '/proc/sys/net/ipv4/ip_local_port_range',
): { low: number; high: number } | null {
  try {
    const [low, high] = readFileSync(file, 'utf8').trim().split(/\s+/).map(Number);
    return low !== undefined && high !== undefined && low > 0 && high >= low ? { low, high } : null;
  } catch {
    return null;
  }
}

/**
 * A warning when the cluster's ports [first, last] overlap the ephemeral range: a client
 * connection may take one of them as its source port, and a killed replica then cannot bind it
 * again until that connection ends (seen at T=600: "could not bind ... Address already in use").
 */
export function ephemeralWarning(first: number, last: number, range = ephemeralRange()): string | null {
  if (!range || last < range.low || first > range.high) return null;
  return `ports ${first}-${last} lie in this machine's ephemeral port range ${range.low}-${range.high}: a client connection can hold one while its replica restarts (pick --base-port below ${range.low})`;
}

/** The lowest primary port: below it, ports are the system's. */
const MIN_BASE_PORT = 1024;

/**
 * The one check of a cluster's base port: the primary listens on it and replica i on base + i,
 * so all of them must be unprivileged ports. `replicas` 0: not known yet (a bench before its plan).
 */
export function checkBasePort(port: number, replicas: number, field = '--base-port'): number {
  const max = 65535 - replicas;
  if (!Number.isInteger(port) || port < MIN_BASE_PORT)
    throw new PlbError(
      'BAD_INPUT',
      `${field}: must be an integer from ${MIN_BASE_PORT} to ${max} (got ${port})`,
    );
  if (port > max)
    throw new PlbError(
      'BAD_INPUT',
      `${field}: must be at most ${max}${replicas > 0 ? ` (room for ${replicas} replicas)` : ''} (got ${port})`,
    );
  return port;
}
