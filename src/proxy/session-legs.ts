/**
 * A session's two sockets as its endings see them (session.ts): on Node's sockets, or handed to the
 * native relay once established (native-relay.ts), which then carries out the same endings and
 * reports the close. The session decides what to say and when; this only does it.
 */
import type { Socket } from 'node:net';
import {
  B_DESTROY,
  B_END,
  C_AT_BOUNDARY,
  C_DESTROY,
  C_END,
  type NativeRelay,
  type RelayedPair,
  type RelayListener,
} from './native-relay.js';
import { endOnce } from './socket-io.js';
import type { BackendFramer } from './wire.js';

/** How long a closed side waits for the other to finish closing before it is destroyed. */
const LINGER_MS = 5000;

export class SessionLegs {
  backend: Socket | undefined;
  private relayed: RelayedPair | undefined;
  private relayClosed = false;
  private relayTried = false;
  private lingerTimer: NodeJS.Timeout | undefined;

  constructor(
    public client: Socket,
    private readonly framer: BackendFramer,
    /** Both sides are closed. */
    private readonly onClosed: () => void,
  ) {}

  get isRelayed(): boolean {
    return this.relayed !== undefined;
  }

  /**
   * After startup and two queries (one query pays no handover), nothing pending, held or
   * half-passed (else tried again at the next read): the native relay takes the sockets over (counted).
   * Not taken (no descriptor of its own): relayed here from then on.
   */
  handOff(relay: NativeRelay, named: boolean, stats: { relayed: number }, on: () => RelayListener): void {
    if (this.relayTried || this.framer.readyCount < 3) return;
    const b = this.backend as Socket;
    const pending = this.client.writableLength + this.client.readableLength + b.writableLength;
    if (pending + this.framer.heldBytes > 0 || !this.framer.atBoundary) return;
    this.relayTried = true;
    this.relayed = relay.adopt(this.client, b, named, on());
    if (this.relayed) stats.relayed += 1;
  }

  /** The relay closed both sides. */
  relayDone(): void {
    this.relayClosed = true;
    this.onClosed();
  }

  /** Ends the client's side after what is pending, with a last message. */
  endClient(last?: Buffer): void {
    if (this.relayed) this.relayed.command(C_END, last);
    else endOnce(this.client, last);
  }

  /** Nothing more can be said: the client dropped, the backend ended. */
  cutBoth(): void {
    this.cutClient();
    this.endBackend();
  }

  /** Drops the client's connection (cut inside a message: nothing more can be said in protocol). */
  cutClient(): void {
    if (this.relayed) this.relayed.command(C_DESTROY);
    else this.client.destroy();
  }

  /** The client told `last` if the backend stream is at a message boundary (else cut); the backend ended or dropped. */
  tell(last: Buffer, backend: 'end' | 'destroy'): void {
    if (this.relayed)
      return this.relayed.command(C_AT_BOUNDARY | (backend === 'end' ? B_END : B_DESTROY), last);
    if (this.framer.atBoundary) endOnce(this.client, last);
    else this.client.destroy();
    if (!this.backend) return;
    if (backend === 'end') endOnce(this.backend);
    else this.backend.destroy();
  }

  /** The backend sees EOF and ends its session. */
  endBackend(): void {
    if (this.relayed) this.relayed.command(B_END);
    else if (this.backend) endOnce(this.backend);
  }

  get closed(): boolean {
    if (this.relayed) return this.relayClosed;
    return this.client.closed && (!this.backend || this.backend.closed);
  }

  /** Gives the sockets a bounded time to close by themselves; then destroys them (the relay does its own). */
  linger(): void {
    if (this.relayed) return;
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
