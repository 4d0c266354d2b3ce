/**
 * How a session answers its backend's close while the client is still there (session-core.ts,
 * on Node's sockets or the native relay's report alike): the server's own FATAL was relayed already,
 * or the replica went away and the client is told at a message boundary (cut, if inside one).
 */
import type { ServerError } from '../protocol/server-messages.js';
import { errorResponse, MSG_ERROR } from '../protocol/wire.js';

export interface BackendEndVerdict {
  /** The passive failure signal for the health checker (none for a server alive enough to answer 08xxx). */
  failure: Error | undefined;
  /** The client's last message before its end (undefined: end it with nothing more). */
  last: Buffer | undefined;
  /** Drop the client's connection: the stream stopped inside a message, nothing more can be said. */
  cut: boolean;
}

/**
 * An established connection that timed out (ETIMEDOUT) was ended by its kernel: nothing was
 * acknowledged for --hang-timeout (TCP_USER_TIMEOUT, keepalive probes unanswered; server-keepalive.ts)
 * or for the system's retransmission limit. Evidence of a dead or cut-off replica, not of a slow
 * one (a busy server's kernel still acknowledges): reported as an abort, which counts toward fall.
 */
function unacknowledged(err: Error): Error {
  if ((err as NodeJS.ErrnoException).code !== 'ETIMEDOUT') return err;
  return Object.assign(
    new Error(`nothing acknowledged within the hang timeout (${err.message}: keepalive, TCP_USER_TIMEOUT)`),
    { code: 'ECONNABORTED' },
  );
}

export function judgeBackendEnd(
  replica: string,
  stream: { lastType: number; atBoundary: boolean },
  serverError: ServerError | undefined,
  socketError: Error | undefined,
): BackendEndVerdict {
  const severity = serverError?.severity;
  if (stream.lastType === MSG_ERROR && stream.atBoundary && (severity === 'FATAL' || severity === 'PANIC')) {
    const se = serverError as ServerError;
    // A server that answers 08xxx itself (08P01: the client broke the protocol) is alive: a
    // hostile client must not count toward marking its replica down.
    const failure = (se.code ?? '').startsWith('08') ? undefined : Object.assign(new Error(se.message), se);
    return { failure, last: undefined, cut: false };
  }
  const err = socketError
    ? unacknowledged(socketError)
    : Object.assign(new Error('connection terminated unexpectedly'), { code: 'ECONNRESET' });
  if (!stream.atBoundary) return { failure: err, last: undefined, cut: true };
  return {
    failure: err,
    last: errorResponse('FATAL', '08006', `replica ${replica} went away: ${err.message}`),
    cut: false,
  };
}
