/**
 * A session's two sockets as its endings see them (session.ts, the front door on Node's sockets).
 * The session decides what to say and when; this only does it.
 */
import type { Socket } from 'node:net';
import { endOnce } from './socket-io.js';
import type { BackendFramer } from './wire.js';

/** How long a closed side waits for the other to finish closing before it is destroyed. */
const LINGER_MS = 5000;

export class SessionLegs {
  backend: Socket | undefined;
  private lingerTimer: NodeJS.Timeout | undefined;

  constructor(
    public client: Socket,
    private readonly framer: BackendFramer,
    /** Both sides are closed. */
    private readonly onClosed: () => void,
  ) {}

  /** Ends the client's side after what is pending, with a last message. */
  endClient(last?: Buffer): void {
    endOnce(this.client, last);
  }

  /** Nothing more can be said: the client dropped, the backend ended. */
  cutBoth(): void {
    this.cutClient();
    this.endBackend();
  }

  /** Drops the client's connection (cut inside a message: nothing more can be said in protocol). */
  cutClient(): void {
    this.client.destroy();
  }

  /** The client told `last` if the backend stream is at a message boundary (else cut); the backend ended or dropped. */
  tell(last: Buffer, backend: 'end' | 'destroy'): void {
    if (this.framer.atBoundary) endOnce(this.client, last);
    else this.client.destroy();
    if (!this.backend) return;
    if (backend === 'end') endOnce(this.backend);
    else this.backend.destroy();
  }

  /** The backend sees EOF and ends its session. */
  endBackend(): void {
    if (this.backend) endOnce(this.backend);
  }

  get closed(): boolean {
    return this.client.closed && (!this.backend || this.backend.closed);
  }

  /** Gives the sockets a bounded time to close by themselves; then destroys them. */
  linger(): void {
    if (this.closed) return this.onClosed();
    if (this.lingerTimer) return;
    const check = (): void => {
      if (this.closed) this.onClosed();
    };
    this.client.once('close', check);
    this.backend?.once('close', check);
    this.lingerTimer = setTimeout(() => {
      this.client.destroy();
      this.backend?.destroy();
    }, LINGER_MS);
    this.lingerTimer.unref();
  }

  stop(): void {
    clearTimeout(this.lingerTimer);
  }
}
