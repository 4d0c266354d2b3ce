/**
 * A session's way to a replica: admit (perhaps after a wait for a slot), connect (TLS first when
 * --server-tls asks), send the startup packet and wait for the server's first bytes. Until those
 * reach the client nothing is lost by trying again: a refused or reset connection, or a server that
 * answers with a FATAL of a dying server (57P01/57P02, 08xxx), is reported and the session admitted
 * anew (the failures count toward fall, so the router soon leaves that replica). A server that does
 * not answer within the connect timeout is reported as slow and the client told so.
 */
import type { Socket } from 'node:net';
import { isPlbError } from '../core/errors.js';
import type { ServiceClass } from '../core/service-class.js';
import { connectTcp, dialTcp, firstAnswer, type FirstAnswer } from './backend-connect.js';
import type { SessionHost, SessionTarget } from './session-host.js';
import { negotiateServerTls } from './tls-server.js';
import type { EarlyTake } from './early-connect.js';

/** What routing needs of its session. */
export interface RouteSteps {
  readonly host: SessionHost;
  readonly cls: ServiceClass;
  clientGone(): boolean;
  /** Waiting for a slot (the client leaving then cancels the wait). */
  setWaiting(waiting: boolean): void;
  /** A slot on this replica is held now (release() gives it back). */
  admitted(replica: string): void;
  release(): void;
  /** The session's own read buffer (net's onread), and where a read goes. */
  readBuffer(): Buffer;
  deliver(chunk: Buffer): boolean;
  /** Points deliver() somewhere else (backend-connect.ts, during the first answer). */
  setSink(sink: (chunk: Buffer) => boolean): void;
}

export type RouteResult =
  | { kind: 'attached'; replica: string; host: string; port: number; socket: Socket; first: Buffer }
  | { kind: 'refused'; code: string; message: string }
  /** The client left meanwhile: nothing held, nothing to tell. */
  | { kind: 'gone' };

/** `early`: the first attempt's replica and connection, opened at the SSLRequest (early-connect.ts). */
export async function routeSession(
  steps: RouteSteps,
  packet: Buffer,
  early?: EarlyTake,
): Promise<RouteResult> {
  const { host, cls } = steps;
  const counters = host.stats.classes[cls];
  let lastError: unknown;
  let lastReplica: string | undefined;
  for (let attempt = 0; attempt < host.connectAttempts; attempt++) {
    let target: SessionTarget;
    if (attempt === 0 && early) target = early.target;
    else
      try {
        steps.setWaiting(true);
        const got = host.acquire(cls, steps);
        // Admitted at once (the usual case): no promise to wait on.
        target = got instanceof Promise ? await got : got;
      } catch (err) {
        if (steps.clientGone()) return { kind: 'gone' };
        if (isPlbError(err, 'ADMISSION_FULL') || isPlbError(err, 'ADMISSION_TIMEOUT')) {
          counters.refused += 1;
          return { kind: 'refused', code: '53300', message: `plb proxy: ${err.message}` };
        }
        if (!isPlbError(err, 'NO_REPLICA')) throw err;
        if (lastError === undefined) {
          counters.refused += 1;
          return { kind: 'refused', code: '57P03', message: `no replica available for class ${cls}` };
        }
        break;
      } finally {
        steps.setWaiting(false);
      }
    steps.admitted(target.replica);
    lastReplica = target.replica;
    let answer: FirstAnswer;
    let socket: Socket | undefined;
    try {
      const setSink = (sink: (chunk: Buffer) => boolean): void => steps.setSink(sink);
      const first = attempt === 0 ? early : undefined;
      if (first && 'failed' in first) answer = first.failed;
      else if (host.serverTls === 'disable') {
        // Plain TCP: the connect and the first answer as one step (backend-connect.ts).
        socket =
          first?.socket ??
          dialTcp(target.host, target.port, {
            buffer: () => steps.readBuffer(),
            callback: (n, buf) => steps.deliver((buf as Buffer).subarray(0, n)),
          });
        answer = await firstAnswer(socket, packet, host.connectTimeoutMs, setSink, {
          ...target,
          abandoned: () => steps.clientGone(),
        });
      } else {
        socket = await openTlsBackend(steps, target.host, target.port);
        answer = steps.clientGone()
          ? { ok: false, err: undefined }
          : await firstAnswer(socket, packet, host.connectTimeoutMs, setSink);
      }
    } catch (err) {
      answer = { ok: false, err, retry: (err as { code?: unknown }).code !== 'ETLSREFUSED' };
    }
    if (steps.clientGone()) {
      socket?.destroy();
      steps.release();
      return { kind: 'gone' };
    }
    if (!answer.ok) {
      socket?.destroy();
      steps.release();
      host.reportFailure(target.replica, answer.err, 'connect');
      lastError = answer.err;
      if (answer.retry) continue;
      break;
    }
    counters.opened += 1;
    host.stats.replica(target.replica).opened += 1;
    return { kind: 'attached', ...target, socket: socket as Socket, first: answer.chunk };
  }
  counters.startupFailed += 1;
  if (lastReplica !== undefined) host.stats.replica(lastReplica).failed += 1;
  return {
    kind: 'refused',
    code: '08006',
    message: `could not connect to a replica for class ${cls}: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
  };
}

/**
 * With TLS the TLS socket owns the handle, so its decrypted 'data' goes where plain TCP's reads go
 * (deliver), paused when the client is slow (deliver: false).
 */
async function openTlsBackend(steps: RouteSteps, host: string, port: number): Promise<Socket> {
  const { connectTimeoutMs, serverTls } = steps.host;
  const raw = await connectTcp(host, port, connectTimeoutMs);
  const socket = await negotiateServerTls(raw, serverTls, connectTimeoutMs);
  socket.on('data', (d: Buffer) => {
    if (!steps.deliver(d)) socket.pause();
  });
  socket.resume();
  return socket;
}
