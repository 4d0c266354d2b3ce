/**
 * --max-client-conn: how many client connections the proxy holds at once (any phase: startup,
 * waiting for a slot, in session). Beyond it a client is answered with a prepared ErrorResponse
 * 53300 (too_many_connections) at its first packet (after 'N', or TLS, to an SSLRequest) and
 * closed: never a session, never left waiting.
 * With both listeners, a tenth of the limit is kept for premium: freemium connections stop at
 * 90 %, so a freemium flood cannot lock premium clients out.
 */
import type { Socket } from 'node:net';
import { TLSSocket, type SecureContext } from 'node:tls';
import { GSSENC_REQUEST_CODE, MAX_STARTUP_PACKET, SSL_REQUEST_CODE } from '../protocol/startup-packet.js';
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

/** A refused client gets this long to close by itself; then it is destroyed. */
const REFUSED_LINGER_MS = 5000;
const ignore = (): void => undefined;
const ANSWER_N = Buffer.from('N');
const ANSWER_S = Buffer.from('S');

/**
 * Tells a client over the limit `refusal` (the 53300 of --max-client-conn) where it reads it, as a
 * server would: read only as far as its first packet's code, an SSLRequest (or GSSENCRequest)
 * answered 'N' first, or with `tls` 'S' and the handshake, so libpq prints the reason rather than a
 * failed SSL exchange. A length no packet has (a Terminate) is closed without a word. Its bytes are
 * read and dropped meanwhile, so its side closes when the client closes (allowHalfOpen off) rather
 * than staying open, its data unconsumed, and not at once, which with its data unread would reset
 * the connection instead of letting the client read the error.
 */
export function refuseOverLimit(socket: Socket, refusal: Buffer, tls?: SecureContext): void {
  socket.on('error', ignore);
  socket.setTimeout(REFUSED_LINGER_MS, () => socket.destroy());
  let buf = Buffer.alloc(0);
  const say = (s: Socket, last?: Buffer): void => {
    s.removeAllListeners('data');
    // A paused socket (pauseOnConnect) stays paused with a 'data' listener: resumed explicitly.
    s.on('data', ignore).resume();
    if (last) s.end(last);
    else s.end();
  };
  const onData = (d: Buffer): void => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      const first = firstPacketCode(buf);
      if (first === 'incomplete') return;
      if (first === 'bad-length') return say(socket);
      if (first !== 'ssl' && first !== 'gssenc') return say(socket, refusal);
      buf = buf.subarray(8);
      if (first === 'gssenc' || !tls) {
        socket.write(ANSWER_N);
        continue;
      }
      // Bytes after the request would be read as if they had come encrypted: told in plain text.
      if (buf.length > 0) return say(socket, refusal);
      socket.removeAllListeners('data');
      socket.write(ANSWER_S);
      const secure = new TLSSocket(socket, { isServer: true, secureContext: tls });
      secure.on('error', () => socket.destroy());
      secure.once('secure', () => say(secure, refusal));
      secure.on('close', () => socket.destroy());
      return;
    }
  };
  socket.on('data', onData).resume();
}

/** The first packet's kind, from its first 8 bytes (what a refusal needs to know of it). */
function firstPacketCode(buf: Buffer): 'incomplete' | 'bad-length' | 'ssl' | 'gssenc' | 'other' {
  if (buf.length < 4) return 'incomplete';
  const length = buf.readInt32BE(0);
  if (length < 8 || length > MAX_STARTUP_PACKET) return 'bad-length';
  if (buf.length < 8) return 'incomplete';
  const code = buf.readInt32BE(4);
  if (length === 8 && code === SSL_REQUEST_CODE) return 'ssl';
  if (length === 8 && code === GSSENC_REQUEST_CODE) return 'gssenc';
  return 'other';
}
