/**
 * --max-client-conn: how many client connections the proxy holds at once (any phase: startup,
 * waiting for a slot, in session). Beyond it a client is answered at once with a prepared
 * ErrorResponse 53300 (too_many_connections) and closed: never parsed, never left waiting.
 * With both listeners, a tenth of the limit is kept for premium: freemium connections stop at
 * 90 %, so a freemium flood cannot lock premium clients out.
 */
import type { Socket } from 'node:net';
import type { ServiceClass } from '../../core/service-class.js';
import { errorResponse } from '../protocol/wire.js';

export interface ClientLimitOptions {
  maxClientConn: number;
  /** Listeners open (1 or 2). */
  classes: number;
}

export interface ClientLimiter {
  /** May a new client of the listener's class come in, with `open` clients already there? */
  admits(cls: ServiceClass, open: number): boolean;
  /** Clients open at once beyond which one of the listener's class is refused. */
  readonly max: Record<ServiceClass, number>;
  /** What a client over the limit is told. */
  readonly refusal: Buffer;
  /** The listen backlog: a burst waits in the kernel's accept queue rather than being dropped. */
  readonly backlog: number;
}

/** The share of the limit freemium may not take when premium has its own listener. */
const PREMIUM_RESERVE = 0.1;

export function clientLimiter(o: ClientLimitOptions): ClientLimiter {
  const reserve = o.classes > 1 ? Math.floor(o.maxClientConn * PREMIUM_RESERVE) : 0;
  const freemiumMax = Math.max(1, o.maxClientConn - reserve);
  const refusal = errorResponse(
    'FATAL',
    '53300',
    `sorry, too many clients already (plb proxy --max-client-conn ${o.maxClientConn})`,
  );
  const max = { premium: o.maxClientConn, freemium: freemiumMax };
  return {
    admits: (cls, open) => open < max[cls],
    max,
    refusal,
    backlog: Math.min(4096, Math.max(511, o.maxClientConn)),
  };
}

/** A client refused unread gets this long to close by itself; then it is destroyed. */
const REFUSED_LINGER_MS = 5000;
const ignore = (): void => undefined;

/**
 * Tells a client that was never read `refusal` and closes it (the 53300 of --max-client-conn). Its
 * bytes are read and dropped meanwhile, so its side closes when the client closes (allowHalfOpen
 * off) rather than staying open, its data unconsumed, for ever; and not at once, which with the
 * startup packet unread would reset the connection instead of letting the client read the error.
 */
export function refuseUnread(socket: Socket, refusal: Buffer): void {
  socket.on('error', ignore);
  // A paused socket (pauseOnConnect) stays paused with a 'data' listener: resumed explicitly.
  socket.on('data', ignore).resume();
  socket.setTimeout(REFUSED_LINGER_MS, () => socket.destroy());
  socket.end(refusal);
}
