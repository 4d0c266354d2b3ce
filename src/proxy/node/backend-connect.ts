/**
 * The replica side of a session's start: a TCP connection (read into the session's own buffer,
 * net's onread) and the server's first answer to the startup packet, which tells a server that is
 * going away (try another replica) from one that answers.
 */
import { createConnection, type OnReadOpts, type Socket } from 'node:net';
import { answerTimeout, connectTimeout, dyingServerError } from '../session/session-route.js';
import type { SessionHost } from '../session/session-host.js';
import { keepSocketAlive } from './socket-keepalive.js';

/** What a replica connection's socket options come from. */
type KeepHost = Pick<SessionHost, 'serverKeepalive' | 'log'>;

export type FirstAnswer = { ok: true; chunk: Buffer } | { ok: false; err: unknown; retry?: boolean };

/**
 * Sends the startup packet and waits for the server's first bytes. The socket reads into a
 * buffer of the session's (onread); `setSink` points its reads here until the answer, then at
 * nothing: reading stays stopped until the session resumes it. A socket still connecting (`dialing`
 * names where to) gets the packet once connected (unless `dialing.abandoned()` says the client left
 * meanwhile: then nothing is sent, and the answer is not ok, with no error): the connect and the answer share one promise and
 * one timer (re-armed at the connect), each with its own timeout of `ms`, as one step per session.
 */
export function firstAnswer(
  socket: Socket,
  packet: Buffer,
  ms: number,
  setSink: (sink: (chunk: Buffer) => boolean) => void,
  dialing?: { host: string; port: number; abandoned?: () => boolean },
): Promise<FirstAnswer> {
  return new Promise((resolve) => {
    let socketError: Error | undefined;
    let connecting = dialing !== undefined && socket.connecting;
    const end = (a: FirstAnswer): void => {
      clearTimeout(timer);
      setSink(() => false);
      socket.off('close', onClose);
      resolve(a);
    };
    // Copied: the read buffer is used again. Reading stops (false) until attach() resumes it.
    setSink((read: Buffer): boolean => {
      const chunk = Buffer.from(read);
      const dying = dyingServerError(chunk);
      end(dying ? { ok: false, err: dying, retry: true } : { ok: true, chunk });
      return false;
    });
    const onClose = (): void =>
      end({
        ok: false,
        err:
          socketError ??
          Object.assign(new Error('connection closed before the server answered'), { code: 'ECONNRESET' }),
        retry: true,
      });
    const timer = setTimeout(
      () =>
        end(
          connecting
            ? // Not even connected: tried again elsewhere, as a refused connect.
              {
                ok: false,
                err: connectTimeout(dialing?.host ?? '', dialing?.port ?? 0, ms),
                retry: true,
              }
            : { ok: false, err: answerTimeout(ms), retry: false },
        ),
      ms,
    );
    socket.on('error', (err) => (socketError = err));
    socket.on('close', onClose);
    if (!connecting) socket.write(packet);
    else
      socket.once('connect', () => {
        connecting = false;
        if (dialing?.abandoned?.()) return end({ ok: false, err: undefined });
        timer.refresh();
        socket.write(packet);
      });
  });
}

/**
 * A TCP connection to a replica, still connecting, read into `onread`'s buffer (firstAnswer waits);
 * with the session host's keepalive and TCP_USER_TIMEOUT once connected (socket-keepalive.ts).
 */
export function dialTcp(host: string, port: number, onread: OnReadOpts, keep: KeepHost): Socket {
  const s = createConnection({ host, port, noDelay: true, onread });
  keepSocketAlive(s, keep);
  return s;
}

/**
 * A TCP connection to a replica, or the error (refused, or no answer within timeoutMs); read by
 * 'data' events (a socket TLS will take over).
 */
export function connectTcp(host: string, port: number, timeoutMs: number, keep: KeepHost): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = createConnection({ host, port, noDelay: true });
    keepSocketAlive(s, keep);
    const timer = setTimeout(() => {
      s.destroy();
      reject(connectTimeout(host, port, timeoutMs));
    }, timeoutMs);
    s.once('error', (err) => {
      clearTimeout(timer);
      s.destroy();
      reject(err);
    });
    s.once('connect', () => {
      clearTimeout(timer);
      resolve(s);
    });
  });
}
