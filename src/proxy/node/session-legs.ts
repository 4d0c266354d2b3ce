/**
 * A session's two sockets as its endings see them (node-session.ts, the front door on Node's sockets).
 * The session core decides what to say and when (session-core.ts); this only does it.
 */
import type { Socket } from 'node:net';
import type { BackendClose, ClientClose } from '../session/session-transport.js';
import { endOnce } from './socket-io.js';
import type { BackendFramer } from '../protocol/wire.js';

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

  /** Closes either side as the core asks (SessionTransport.close), then lingers. */
  close(client: ClientClose | undefined, backend: BackendClose | undefined, last?: Buffer): void {
    // At a boundary: the client told `last` if the backend stream is between messages, else cut.
    if (client === 'end' || (client === 'at-boundary' && this.framer.atBoundary)) endOnce(this.client, last);
    else if (client !== undefined) this.client.destroy();
    if (backend === 'end' && this.backend) endOnce(this.backend);
    else if (backend === 'destroy') this.backend?.destroy();
    this.linger();
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
