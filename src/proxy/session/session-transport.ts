/**
 * What a session's lifecycle (session-core.ts) needs of the front door that carries its bytes: Node's
 * sockets (node-session.ts) or the native relay's threads (native-session.ts). The core decides what to
 * say and when; a transport only does it, and reports back to the core (startup, cancel,
 * clientClosed, backendEnded, ready, finish, transportFailed).
 */
import type { Dialer } from './session-route.js';
import type { SessionTarget } from './session-host.js';

/**
 * How the client's side is closed: after what is pending (with the last message), told the last
 * message only at a message boundary of the backend stream (else dropped), or dropped at once.
 */
export type ClientClose = 'end' | 'at-boundary' | 'destroy';
/** How the backend's side is closed: EOF after what is pending (it ends its session), or dropped. */
export type BackendClose = 'end' | 'destroy';

/** The front door's side of one session; L is what a dial answers with (the backend leg). */
export interface SessionTransport<L> {
  /** A route begins: how it dials, and the first attempt's replica when one was taken already. */
  dialer(): { dialer: Dialer<L>; first?: SessionTarget | undefined };
  /** The route's answered connection becomes the session's backend (phase backend-startup). */
  attach(target: SessionTarget, leg: L): void;
  /** Before any backend is involved: the client told `last` (undefined: its client is gone), then closed. */
  refuse(last: Buffer | undefined): void;
  /**
   * Closes either side (undefined: leaves it); afterwards the transport reports both sides closed
   * (finish) within a bounded time. Called with neither side: only that report is awaited.
   */
  close(client: ClientClose | undefined, backend: BackendClose | undefined, last?: Buffer): void;
  /** The session's slot was given back: the proxy's cancel key for it is void. */
  forgetKey(): void;
  /** The session is over: what the transport still holds (timers, a dial waiting for its answer) goes. */
  over(): void;
}
