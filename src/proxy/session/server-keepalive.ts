/**
 * What a replica connection's socket is told, from --hang-timeout, on both front doors: a replica
 * that acknowledges nothing for that long has the connection ended by the kernel (ETIMEDOUT), as a
 * reset one would be, whether a query is in flight (TCP_USER_TIMEOUT: data unacknowledged) or the
 * session is idle (keepalive probes unanswered: with TCP_USER_TIMEOUT set, Linux ends it at the
 * first probe tick where the last thing heard is that old and a probe is out, whatever the count).
 * The first probe goes after half the hang of quiet (1 to 5 s: an idle connection is probed before
 * the hang is up, at most one probe a 5 s when all is well), then one a second (the kernel's
 * granularity): an idle connection is ended between H and H + 1 s after it last heard its replica.
 * The count is what gives the same bound where TCP_USER_TIMEOUT is missing.
 */
export interface ServerKeepalive {
  /** TCP_USER_TIMEOUT. */
  userTimeoutMs: number;
  /** TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT. */
  idleS: number;
  intervalS: number;
  count: number;
}

/** The kernel takes TCP_USER_TIMEOUT as an unsigned int of ms; Node's APIs as an int32. */
const MAX_MS = 2 ** 31 - 1;

/** The options for a hang timeout of hangMs; undefined for 0 (replica connections get none). */
export function serverKeepalive(hangMs: number): ServerKeepalive | undefined {
  if (!(hangMs > 0)) return undefined;
  const userTimeoutMs = Math.min(MAX_MS, Math.ceil(hangMs));
  const idleS = Math.max(1, Math.min(5, Math.floor(userTimeoutMs / 2000)));
  const count = Math.max(1, Math.min(127, Math.ceil(userTimeoutMs / 1000) - idleS));
  return { userTimeoutMs, idleS, intervalS: 1, count };
}

/** "TCP_USER_TIMEOUT 5000 ms, keepalive after 2 s, every 1 s" (the proxy's start line). */
export function describeKeepalive(k: ServerKeepalive | undefined): string {
  if (!k) return 'no keepalive, no TCP_USER_TIMEOUT (--hang-timeout 0)';
  return `TCP_USER_TIMEOUT ${k.userTimeoutMs} ms, keepalive after ${k.idleS} s, every ${k.intervalS} s`;
}
