/**
 * Errors in the shapes pg gives them (failure-cause.ts classifies them): a server error is an
 * Error with a SQLSTATE `code` and a `severity`; a socket error has an errno `code`; a timeout is
 * pg's plain Error with its wording.
 */

/** Like pg's DatabaseError. */
function serverError(code: string, severity: 'ERROR' | 'FATAL', message: string): Error {
  return Object.assign(new Error(message), { name: 'error', code, severity });
}

/** Like a Node socket error (ECONNREFUSED on connect, ECONNRESET on read). */
export function socketError(
  code: 'ECONNREFUSED' | 'ECONNRESET',
  port: number,
): Error & { code: string; errno: number; syscall: string } {
  const syscall = code === 'ECONNREFUSED' ? 'connect' : 'read';
  const errno = code === 'ECONNREFUSED' ? -111 : -104;
  const message = code === 'ECONNREFUSED' ? `connect ECONNREFUSED 127.0.0.1:${port}` : 'read ECONNRESET';
  return Object.assign(new Error(message), {
    code,
    errno,
    syscall,
    ...(code === 'ECONNREFUSED' ? { address: '127.0.0.1', port } : {}),
  });
}

/** PostgreSQL's refusal when every connection slot is taken. */
export const tooManyClients = (): Error => serverError('53300', 'FATAL', 'sorry, too many clients already');

/** A backend terminated by a fast shutdown (stop). */
export const adminShutdown = (): Error =>
  serverError('57P01', 'FATAL', 'terminating connection due to administrator command');

/** pg's query_timeout. */
export const queryTimeout = (): Error => new Error('Query read timeout');

/** pg's connectionTimeoutMillis. */
export const connectTimeout = (): Error => new Error('Connection terminated due to connection timeout');

/** pg on a client whose connection already failed. */
export const notQueryable = (): Error =>
  new Error('Client has encountered a connection error and is not queryable');

/** pg on a client that was ended. */
export const closedClient = (): Error => new Error('Client was closed and is not queryable');

/** pg when the client is ended under a running query. */
export const connectionTerminated = (): Error => new Error('Connection terminated');
