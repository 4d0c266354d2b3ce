/** A client's CancelRequest, sent on to the session's backend with the backend's own key. */
import { createConnection } from 'node:net';
import { cancelRequest } from '../protocol/wire.js';
import type { SessionHost } from './session-host.js';

/**
 * A client's CancelRequest (a connection of its own): forwarded to the session's backend with the
 * backend's own key, counted; no reply. `close` ends the client's connection when that is done
 * (at once for a key the proxy never gave out).
 */
export function cancelFor(host: SessionHost, pid: number, secret: Buffer, close: () => void): void {
  const key = host.cancelKeys.lookup(pid, secret);
  if (!key) return close();
  host.stats.cancels += 1;
  forwardCancel('127.0.0.1', key, host.connectTimeoutMs, close);
}

/**
 * Connects to the replica, sends the request and calls done when that connection closes (the
 * client waits for its own to close to know the request was delivered), or after timeoutMs.
 * Always plain TCP: PostgreSQL takes a CancelRequest without TLS.
 */
function forwardCancel(
  host: string,
  key: { port: number; pid: number; secret: Buffer },
  timeoutMs: number,
  done: () => void,
): void {
  const s = createConnection({ host, port: key.port });
  const timer = setTimeout(() => s.destroy(), timeoutMs);
  timer.unref();
  s.on('error', () => undefined);
  s.on('connect', () => s.end(cancelRequest(key.pid, key.secret)));
  s.on('data', () => undefined);
  s.on('close', () => {
    clearTimeout(timer);
    done();
  });
}
