/**
 * A session's replica connection on Node's sockets (node-session.ts): plain TCP read into the session's
 * own buffer (net's onread), or TLS first when --server-tls asks; an early connection opened at
 * the SSLRequest (early-connect.ts) serves the first attempt.
 */
import type { Socket } from 'node:net';
import { connectTcp, dialTcp, firstAnswer } from './backend-connect.js';
import type { EarlyTake } from './early-connect.js';
import type { SessionHost, SessionTarget } from '../session/session-host.js';
import type { Dialer, DialResult } from '../session/session-route.js';
import { negotiateServerTls } from '../protocol/tls-server.js';

/** An answered connection: the socket and the server's first bytes. */
export interface SocketLeg {
  socket: Socket;
  first: Buffer;
}

/** What the dialer needs of its session. */
export interface SocketDialIo {
  readonly host: SessionHost;
  clientGone(): boolean;
  /** The session's own read buffer (net's onread), and where a read goes. */
  readBuffer(): Buffer;
  deliver(chunk: Buffer): boolean;
  /** Points deliver() somewhere else (backend-connect.ts, during the first answer). */
  setSink(sink: (chunk: Buffer) => boolean): void;
}

const EMPTY = Buffer.alloc(0);

export function socketDialer(
  io: SocketDialIo,
  packet: Buffer,
  early: EarlyTake | undefined,
): Dialer<SocketLeg> {
  const { connectTimeoutMs: ms, serverTls } = io.host;
  const setSink = (sink: (chunk: Buffer) => boolean): void => io.setSink(sink);
  const onread = {
    buffer: () => io.readBuffer(),
    callback: (n: number, buf: Uint8Array) => io.deliver((buf as Buffer).subarray(0, n)),
  };
  const dial = async (target: SessionTarget, attempt: number): Promise<DialResult<SocketLeg>> => {
    const taken = attempt === 0 ? early : undefined;
    if (taken && 'failed' in taken) return taken.failed;
    let socket: Socket;
    if (serverTls === 'disable') {
      // Plain TCP: the connect and the first answer as one step (backend-connect.ts).
      socket = taken?.socket ?? dialTcp(target.host, target.port, onread, io.host);
      const a = await firstAnswer(socket, packet, ms, setSink, {
        ...target,
        abandoned: () => io.clientGone(),
      });
      return a.ok ? { ok: true, leg: { socket, first: a.chunk } } : { ...a, leg: { socket, first: EMPTY } };
    }
    socket = await openTlsBackend(io, target.host, target.port);
    if (io.clientGone()) return { ok: false, err: undefined, leg: { socket, first: EMPTY } };
    const a = await firstAnswer(socket, packet, ms, setSink);
    return a.ok ? { ok: true, leg: { socket, first: a.chunk } } : { ...a, leg: { socket, first: EMPTY } };
  };
  return {
    dial: (target, attempt, answered) =>
      void dial(target, attempt).then(answered, (err: unknown) =>
        // A replica that refuses TLS (--server-tls require) is configuration, not a dead replica.
        answered({ ok: false, err, retry: (err as { code?: unknown }).code !== 'ETLSREFUSED' }),
      ),
    drop: (leg) => leg?.socket.destroy(),
  };
}

/**
 * With TLS the TLS socket owns the handle, so its decrypted 'data' goes where plain TCP's reads go
 * (deliver), paused when the client is slow (deliver: false).
 */
async function openTlsBackend(io: SocketDialIo, host: string, port: number): Promise<Socket> {
  const { connectTimeoutMs, serverTls } = io.host;
  const raw = await connectTcp(host, port, connectTimeoutMs, io.host);
  const socket = await negotiateServerTls(raw, serverTls, connectTimeoutMs, { ca: io.host.serverCa, host });
  socket.on('data', (d: Buffer) => {
    if (!io.deliver(d)) socket.pause();
  });
  socket.resume();
  return socket;
}
