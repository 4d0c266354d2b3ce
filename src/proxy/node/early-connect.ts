/**
 * A replica connection opened at a client's SSLRequest (or GSSENCRequest), before its startup
 * packet: the server's fork and start then overlap the client's answer to 'N' (or its TLS
 * handshake), as a TCP balancer's connect at accept does (in one instrumented run, accept to the
 * server's first answer went from 2.5 to 1.9 ms; pgbench's connect time moves less than its noise:
 * docs/proxy-hardening.md). It is only tried where the port alone
 * names the class (--class-from off), on plain TCP to the replica, with a slot free now (it never
 * queues) and fewer than EARLY_MAX others held so: a flood of SSLRequests that go no further holds
 * at most that many connections, each for at most EARLY_HOLD_MS. A CancelRequest or a client with
 * sslmode=disable sends no SSLRequest, so costs the replica nothing early. A server says nothing
 * before the startup packet: a connection that spoke or closed is not used (the session connects
 * as usual, the failure reported as a connect failure would be).
 */
import type { Socket } from 'node:net';
import type { ServiceClass } from '../../core/service-class.js';
import { dialTcp, type FirstAnswer } from './backend-connect.js';
import type { SessionHost, SessionTarget } from '../session/session-host.js';

/** Early connections held at once (per proxy), and how long one waits for its startup packet. */
export const EARLY_MAX = 32;
export const EARLY_HOLD_MS = 2000;

/** The first attempt's connection, or why the early one cannot be used. */
export type EarlyTake =
  | { target: SessionTarget; socket: Socket }
  | { target: SessionTarget; failed: FirstAnswer & { ok: false } };

export class EarlyConnect {
  private err: Error | undefined;
  private closed = false;
  private spoke = false;
  private taken = false;
  private ended = false;
  private readonly timer: NodeJS.Timeout;

  private constructor(
    private readonly host: SessionHost,
    readonly target: SessionTarget,
    readonly socket: Socket,
    /** Dropped unused (client gone, refused, held too long): the session gives its slot back. */
    private readonly onDrop: () => void,
  ) {
    socket.on('error', (e) => (this.err = e));
    socket.once('close', () => (this.closed = true));
    this.timer = setTimeout(() => this.drop(), EARLY_HOLD_MS);
    this.timer.unref();
  }

  /**
   * Opens one when the host allows (host.earlyTarget: slot taken, counted), reading into the
   * session's buffer and, once taken, to `deliver`; undefined when not.
   */
  static open(
    host: SessionHost,
    cls: ServiceClass,
    io: { buffer: () => Buffer; deliver: (chunk: Buffer) => boolean; onDrop: () => void },
  ): EarlyConnect | undefined {
    const target = host.earlyTarget?.(cls);
    if (target === undefined) return undefined;
    let early: EarlyConnect | undefined = undefined;
    const socket = dialTcp(
      target.host,
      target.port,
      {
        buffer: io.buffer,
        // Before the startup packet the server has nothing to say: stop reading, do not use it.
        callback: (n, buf) => {
          if (early?.taken) return io.deliver((buf as Buffer).subarray(0, n));
          if (early) early.spoke = true;
          return false;
        },
      },
      host,
    );
    early = new EarlyConnect(host, target, socket, io.onDrop);
    return early;
  }

  /** The startup packet is in: the connection for the session's first attempt. */
  take(): EarlyTake {
    this.taken = true;
    this.end();
    const { target } = this;
    if (!this.closed && !this.spoke && !this.socket.destroyed) return { target, socket: this.socket };
    this.socket.destroy();
    const why = this.spoke ? 'the server spoke before the startup packet' : 'connection closed';
    const err = this.err ?? Object.assign(new Error(why), { code: 'ECONNRESET' });
    return { target, failed: { ok: false, err, retry: true } };
  }

  /** Not to be used: closed (the server sees a connection that sent nothing), slot given back. */
  drop(): void {
    if (this.taken || this.ended) return;
    this.end();
    this.socket.destroy();
    this.host.stats.earlyUnused += 1;
    this.onDrop();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    this.host.earlyEnded?.();
  }
}
