/**
 * A replica connection on Node's sockets gets what the native front door sets on its own
 * (server-keepalive.ts): Node's net has no TCP_USER_TIMEOUT nor keepalive counts, so the addon's
 * keepalive() sets them on the socket's descriptor once it is connected (before that libuv has
 * none). Without the addon (not built) or a descriptor: Node's own keepalive (TCP_KEEPIDLE, libuv's
 * interval and count) and no TCP_USER_TIMEOUT, said once; the health checks still bound the wait.
 */
import type { Socket } from 'node:net';
import { loadAddon } from '../native/addon.js';
import type { SessionHost } from '../session/session-host.js';
import type { ServerKeepalive } from '../session/server-keepalive.js';

let warned = false;

/** Sets host.serverKeepalive on a replica connection (now, or when it connects). */
export function keepSocketAlive(socket: Socket, host: Pick<SessionHost, 'serverKeepalive' | 'log'>): void {
  const k = host.serverKeepalive;
  if (!k) return;
  if (socket.connecting) socket.once('connect', () => apply(socket, k, host.log));
  else apply(socket, k, host.log);
}

function apply(socket: Socket, k: ServerKeepalive, log: (line: string) => void): void {
  if (socket.destroyed) return;
  const why = setOnDescriptor(socket, k);
  if (why === undefined) return;
  socket.setKeepAlive(true, k.idleS * 1000);
  if (warned) return;
  warned = true;
  log(`replica connections on Node's sockets: keepalive only, no TCP_USER_TIMEOUT (${why})`);
}

/** undefined when set, else why not. */
function setOnDescriptor(socket: Socket, k: ServerKeepalive): string | undefined {
  const addon = loadAddon();
  if (typeof addon === 'string') return `native addon ${addon}`;
  // Linux: a TCP handle's descriptor (-1 until it connects, or once closed).
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) return 'no descriptor';
  try {
    addon.keepalive(fd, k.userTimeoutMs, k.idleS, k.intervalS, k.count);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
