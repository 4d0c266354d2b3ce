/**
 * What a failure says about a replica (DESIGN.md, Failure knowledge). Only `unreachable` is
 * evidence of death and counts toward `fall`; a saturated server is not a dead one, as in HAProxy
 * (a server at maxconn queues, its checks still pass) and pgcat (a pool timeout does not ban).
 *
 * - unreachable: nothing answers (connection refused or reset, the socket closed under a query,
 *   the server shutting down: 57P01/57P02, a lost connection: 08xxx);
 * - overloaded: the server answered and refused (53300 too_many_connections, 53xxx insufficient
 *   resources, 57P03 cannot_connect_now while it starts or recovers);
 * - slow: no answer yet within a timeout (connect, query or check) — the server may be busy;
 * - other: the server answered with an error about the request (a bad query, an auth failure).
 *
 * A session's end is not a replica's failure: a server that ends one session (57P01 of
 * pg_terminate_backend, as of a fast shutdown) or a connection closed under a session is only
 * proof once a probe of the server fails too (endsOnlyASession; the health checker asks one).
 */
export type FailureCause = 'unreachable' | 'overloaded' | 'slow' | 'other';

const UNREACHABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTCONN',
  // A certificate that fails --server-tls verify-ca/verify-full (server-verify.ts): not to be used.
  'ETLSVERIFY',
]);

interface ErrorLike {
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  severity?: unknown;
}

/** SQLSTATE of a server error (pg's DatabaseError has a 5-character `code` and a `severity`). */
function sqlState(e: ErrorLike): string | undefined {
  return typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) && e.severity !== undefined
    ? e.code
    : undefined;
}

function classifyOne(e: ErrorLike): FailureCause | undefined {
  const state = sqlState(e);
  if (state !== undefined) {
    if (state === '57P01' || state === '57P02' || state.startsWith('08')) return 'unreachable';
    if (state === '57P03' || state.startsWith('53')) return 'overloaded';
    if (state === '57014') return 'slow'; // statement timeout / cancel
    return 'other';
  }
  if (typeof e.code === 'string') {
    if (UNREACHABLE_ERRNO.has(e.code)) return 'unreachable';
    if (e.code === 'ETIMEDOUT' || e.code === 'TIMEOUT') return 'slow';
  }
  const msg = typeof e.message === 'string' ? e.message : '';
  // pg's own wording: a connect that timed out, a query_timeout, our own bounded waits.
  if (/timeout|timed out/i.test(msg)) return 'slow';
  // "Connection terminated unexpectedly", "Client has encountered a connection error", a socket
  // closed while a query was in flight: the server went away.
  if (/connection terminated|connection error|socket|not queryable|closed/i.test(msg)) return 'unreachable';
  return undefined;
}

/** Classifies an error, looking through `cause` chains: the innermost error that says something wins (PlbError wraps pg's). */
export function classifyFailure(err: unknown): FailureCause {
  let found: FailureCause | undefined;
  let e: unknown = err;
  for (let depth = 0; depth < 5 && e !== null && typeof e === 'object'; depth++) {
    found = classifyOne(e as ErrorLike) ?? found;
    e = (e as ErrorLike).cause;
  }
  return found ?? 'other';
}

/** True for the causes that count toward `fall`. */
export function isDeathEvidence(cause: FailureCause): boolean {
  return cause === 'unreachable';
}

/** Who heard of a failure: the health checker's own probe, a connect, an established session. */
export type FailureVia = 'health' | 'connect' | 'session';

/** The server itself sent the error (a SQLSTATE with a severity somewhere in the cause chain). */
function serverSaid(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; depth < 5 && e !== null && typeof e === 'object'; depth++) {
    if (sqlState(e as ErrorLike) !== undefined) return true;
    e = (e as ErrorLike).cause;
  }
  return false;
}

/**
 * The server refuses new sessions for now (57P03: shutting down, starting up, recovering after a
 * crash). Overloaded for a health check; after a session's end it confirms the server is going.
 */
export function cannotConnectNow(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; depth < 5 && e !== null && typeof e === 'object'; depth++) {
    if (sqlState(e as ErrorLike) === '57P03') return true;
    e = (e as ErrorLike).cause;
  }
  return false;
}

function errnoOf(err: unknown): unknown {
  return err !== null && typeof err === 'object' ? (err as ErrorLike).code : undefined;
}

/**
 * An `unreachable` failure that says only that one session ended, not that its server is gone:
 * the server said it (57P01/57P02 or 08xxx: it was there to say it; pg_terminate_backend of one
 * backend and a fast shutdown send the same 57P01), or a session's connection closed under it (a
 * killed backend, a killed server). Counted toward fall only once a probe of the server fails.
 * A refused or reset connect is proof by itself, and so is a session whose kernel gave up on
 * unacknowledged data (ECONNABORTED: the hang timeout ran out on a dead or cut-off server).
 */
export function endsOnlyASession(err: unknown, via: FailureVia): boolean {
  if (via === 'health' || classifyFailure(err) !== 'unreachable') return false;
  if (serverSaid(err)) return true;
  return via === 'session' && errnoOf(err) !== 'ECONNABORTED';
}
