/**
 * One client of the native front door (native-relay.ts): the relay threads accepted it, read its
 * first packet and will connect it and copy its bytes. This is its transport
 * (session-transport.ts): what the relay tells becomes the session core's events (session-core.ts),
 * and the core's closings become the relay's commands. Here also: the replica's first answer (a
 * dying server is tried elsewhere), and the cancel key (issued before the connect, bound to the
 * backend's at ReadyForQuery). The relay tells ReadyForQuery and the close lazily (up to 5 ms
 * late): the session learns that a first answer went on from what follows it (settle).
 */
import type { ServiceClass } from '../../core/service-class.js';
import { noteLateClass } from '../session/backend-watch.js';
import {
  B_DESTROY,
  B_END,
  C_AT_BOUNDARY,
  C_DESTROY,
  C_END,
  type FrontListener,
  type FrontPair,
  type RelayEnd,
  type RelayFault,
} from './native-relay.js';
import { decodeServerError, type ServerError } from '../protocol/server-messages.js';
import { SessionCore } from '../session/session-core.js';
import type { ClientSession, SessionHost, SessionTarget } from '../session/session-host.js';
import {
  answerTimeout,
  connectTimeout,
  dyingServerError,
  type DialResult,
  type Dialer,
} from '../session/session-route.js';
import type { BackendClose, ClientClose, SessionTransport } from '../session/session-transport.js';
import { readStartupPacket } from '../protocol/startup-packet.js';

/** A dial's leg: 'held' while the relay holds an error answer for the verdict. */
type Leg = 'on' | 'held';

const CLIENT_FLAGS: Readonly<Record<ClientClose, number>> = {
  end: C_END,
  'at-boundary': C_AT_BOUNDARY,
  destroy: C_DESTROY,
};
const BACKEND_FLAGS: Readonly<Record<BackendClose, number>> = { end: B_END, destroy: B_DESTROY };

/** The session's transport is its own route's dialer too: no closures per session. */
export class NativeSession implements FrontListener, SessionTransport<Leg>, Dialer<Leg> {
  readonly core: SessionCore<Leg>;
  private target: SessionTarget | undefined;
  private warnedLate = false;
  private key: { pid: number; secret: Buffer } | undefined;
  private dialAnswer: ((r: DialResult<Leg>) => void) | undefined;
  private lastServerError: ServerError | undefined;

  constructor(
    private readonly pair: FrontPair,
    listenerClass: ServiceClass,
    private readonly host: SessionHost,
    onEnd: (s: ClientSession) => void,
    /** Its first packet; undefined: none came within the startup timeout. */
    packet: Buffer | undefined,
    clientHost = '',
  ) {
    this.core = new SessionCore(this, host, listenerClass, onEnd, clientHost);
    if (packet === undefined) this.core.refuse('08P01', 'timeout waiting for the startup packet');
    else this.onPacket(packet);
  }

  private onPacket(packet: Buffer): void {
    const p = readStartupPacket(packet);
    if (p.kind === 'bad-length') return this.core.closeQuietly();
    if (p.kind === 'invalid') return this.core.refuse(p.code, p.reason);
    if (p.kind === 'cancel') return this.core.cancel(p.pid, p.secret);
    // Encryption requests are answered by the relay; anything else here is not a first packet.
    if (p.kind !== 'startup') return this.core.refuse('08P01', 'invalid startup packet');
    this.core.startup(p.params);
  }

  // ---- the transport (SessionTransport) ----------------------------------------------------

  dialer(): { dialer: Dialer<Leg> } {
    return { dialer: this };
  }

  attach(target: SessionTarget): void {
    this.target = target;
  }

  refuse(last: Buffer | undefined): void {
    if (last) this.pair.command(C_END, last);
  }

  close(client: ClientClose | undefined, backend: BackendClose | undefined, last?: Buffer): void {
    const flags = (client ? CLIENT_FLAGS[client] : 0) | (backend ? BACKEND_FLAGS[backend] : 0);
    // Nothing to close: the relay reports the close by itself.
    if (flags !== 0) this.pair.command(flags, last);
  }

  forgetKey(): void {
    if (this.key) this.host.cancelKeys.forget(this.key.pid);
    this.key = undefined;
  }

  over(): void {
    this.answered({ ok: false, err: undefined });
  }

  // ---- its route's dialer (Dialer) ---------------------------------------------------------

  dial(target: SessionTarget, _attempt: number, answered: (r: DialResult<Leg>) => void): void {
    // Closed meanwhile (its client gone, a stop): nothing will answer.
    if (this.core.finished) return answered({ ok: false, err: undefined });
    const { host } = this;
    this.target = target;
    this.dialAnswer = answered;
    this.key ??= host.cancelKeys.issue();
    const named = host.classFrom === 'application_name';
    this.pair.dial(target.host, target.port, host.connectTimeoutMs, this.key, named, host.serverKeepalive);
  }

  drop(leg: Leg | undefined): void {
    if (leg === 'held') this.pair.verdict(false);
  }

  /** The dial waiting for its answer gets it (once). */
  private answered(r: DialResult<Leg>): void {
    const answer = this.dialAnswer;
    this.dialAnswer = undefined;
    answer?.(r);
  }

  /**
   * The relay went on with the first answer without a word: a dial still waiting is answered now,
   * which attaches the session before what the relay said next is handled.
   */
  private settle(): void {
    this.answered({ ok: true, leg: 'on' });
  }

  // ---- what the relay tells (FrontListener) -------------------------------------------------

  answer(heldError: Buffer): void {
    const dying = dyingServerError(heldError);
    if (dying) return this.answered({ ok: false, err: dying, retry: true, leg: 'held' });
    // The server refuses the session itself (a bad password, too many connections): said as it is.
    this.pair.verdict(true);
    this.answered({ ok: true, leg: 'on' });
  }

  dialFailed(code: string, connected: boolean): void {
    const { host, port } = this.target as SessionTarget;
    const ms = this.host.connectTimeoutMs;
    let err: Error;
    if (code === 'ETIMEDOUT') err = connected ? answerTimeout(ms) : connectTimeout(host, port, ms);
    else if (connected)
      err = Object.assign(new Error(`connection closed before the server answered (${code})`), { code });
    else err = Object.assign(new Error(`connect ${code} ${host}:${port}`), { code });
    // Not connected in time: tried elsewhere; connected but no answer in time: not.
    this.answered({ ok: false, err, retry: !(code === 'ETIMEDOUT' && connected) });
  }

  ready(backendKey: Buffer | undefined): void {
    this.settle();
    if (!this.core.ready()) return;
    this.host.stats.relayed += 1;
    const target = this.target as SessionTarget;
    if (this.key && backendKey && backendKey.length >= 8)
      this.host.cancelKeys.bind(this.key.pid, {
        replica: target.replica,
        port: target.port,
        pid: backendKey.readInt32BE(0),
        secret: Buffer.from(backendKey.subarray(4)),
      });
  }

  parameter(msg: Buffer): void {
    const { cls, replica } = this.core;
    if (this.warnedLate || replica === undefined) return;
    this.warnedLate = noteLateClass(this.host, { cls, replica }, msg);
  }

  ended(e: RelayEnd): void {
    if (e.terminated) this.core.terminating();
    // A client's end is told only before it is connected (routing): the route stops.
    if (e.side === 'client') return this.core.clientClosed();
    this.settle();
    // Not PostgreSQL on the other end: the relay closed both sides.
    if (e.code === 'EPROTO') return this.core.backendBroke('backend protocol error');
    if (e.lastError) this.lastServerError = decodeServerError(e.lastError);
    const err =
      e.code === undefined ? undefined : Object.assign(new Error(`read ${e.code}`), { code: e.code });
    this.core.backendEnded(e, this.lastServerError, err);
  }

  closed(answered: boolean): void {
    // Answered and closed before anything else was told (a client gone during authentication):
    // the route ends attached, so the session counts as connected, then closed.
    if (answered) this.settle();
    this.core.finish();
  }

  /**
   * The relay failed under this session (an allocation, an epoll_ctl; native-relay.ts): its
   * backend is closed. The core tells the client a FATAL where it still can; a dial still waiting
   * ends as for a client gone, so no replica is blamed.
   */
  failed(f: RelayFault): void {
    this.core.transportFailed(f.message, f.sqlstate);
    this.answered({ ok: false, err: undefined });
  }
}
