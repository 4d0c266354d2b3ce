/**
 * One client of the native front door (native-relay.ts): the relay threads accepted it, read its
 * first packet and will connect it and copy its bytes; this decides what session.ts decides on
 * Node's sockets, with the same functions: the packet (startup-packet.ts: a startup, a cancel, or
 * a refusal), the class, freemium's pacing, routing with its retries (session-route.ts), the
 * replica's first answer (a dying server is tried elsewhere), the cancel key (issued before the
 * connect, bound to the backend's at ReadyForQuery), and every ending (session-end.ts).
 */
import type { ServiceClass } from '../core/service-class.js';
import { noteLateClass } from './backend-watch.js';
import { cancelFor } from './cancel-forward.js';
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
import { decodeServerError, type ServerError } from './server-messages.js';
import { judgeBackendEnd } from './session-end.js';
import type { ClientSession, SessionHost, SessionTarget } from './session-host.js';
import {
  answerTimeout,
  connectTimeout,
  dyingServerError,
  routeSession,
  type DialResult,
  type Dialer,
  type RouteResult,
  type RouteSteps,
} from './session-route.js';
import { chooseClass, readStartupPacket } from './startup-packet.js';
import { errorResponse } from './wire.js';

type Phase = 'connecting' | 'backend-startup' | 'ready' | 'closing';
/** A dial's leg: 'held' while the relay holds an error answer for the verdict. */
type Leg = 'on' | 'held';

const EXPIRED = ['53300', 'sorry, too many clients already (plb proxy: freemium startups paced)'] as const;

/**
 * The session is its own route's steps and dialer (session-route.ts), and its own ticket in the
 * admission queue: no closures per session.
 */
export class NativeSession implements FrontListener, ClientSession, RouteSteps, Dialer<Leg> {
  phase: Phase = 'connecting';
  /** The listener's until the startup packet names another (chooseClass). */
  cls: ServiceClass;
  replica: string | undefined;
  private target: SessionTarget | undefined;
  private isAdmitted = false;
  private attached = false;
  private waiting = false;
  private routing = false;
  private gone = false;
  private backendGone = false;
  private clientTerminated = false;
  private finished = false;
  private warnedLate = false;
  private key: { pid: number; secret: Buffer } | undefined;
  private dialAnswer: ((r: DialResult<Leg>) => void) | undefined;
  private lastServerError: ServerError | undefined;
  private donePromise: Promise<void> | undefined;
  private resolveDone: (() => void) | undefined;

  constructor(
    private readonly pair: FrontPair,
    listenerClass: ServiceClass,
    readonly host: SessionHost,
    private readonly onEnd: (s: NativeSession) => void,
    /** Its first packet; undefined: none came within the startup timeout. */
    packet: Buffer | undefined,
  ) {
    this.cls = listenerClass;
    if (packet === undefined) this.refuse('08P01', 'timeout waiting for the startup packet');
    else this.onPacket(packet);
  }

  get done(): Promise<void> {
    return (this.donePromise ??= this.finished
      ? Promise.resolve()
      : new Promise((r) => (this.resolveDone = r)));
  }

  private onPacket(packet: Buffer): void {
    const p = readStartupPacket(packet);
    if (p.kind === 'invalid') return this.refuse(p.code, p.reason);
    if (p.kind === 'cancel') {
      this.phase = 'closing';
      return cancelFor(this.host, p.pid, p.secret, () => this.pair.command(C_END));
    }
    // Encryption requests are answered by the relay; anything else here is not a first packet.
    if (p.kind !== 'startup') return this.refuse('08P01', 'invalid startup packet');
    const choice = chooseClass(p.params, this.cls, this.host.classFrom);
    if (!choice.ok) return this.refuse('22023', choice.reason);
    this.cls = choice.cls;
    // Freemium waits for its turn under a flood (paced-intake.ts); premium never does.
    if (this.cls === 'premium' || !this.host.pace) return this.route();
    this.host.pace({
      run: () => this.route(),
      expire: () => this.unrouted() && this.refuse(...EXPIRED),
    });
  }

  /** Not routed yet and not told to stop meanwhile (true); its client gone: the end. */
  private unrouted(): boolean {
    if (this.phase !== 'connecting' || this.routing) return false;
    if (this.gone) return (void this.end(), false);
    return true;
  }

  private route(): void {
    if (!this.unrouted()) return;
    this.routing = true;
    routeSession(this, this, (r) => this.routed(r));
  }

  private routed(r: RouteResult<Leg>): void {
    if (r.kind === 'gone') return this.end();
    if (r.kind === 'error') {
      this.host.log(`session: ${r.err instanceof Error ? r.err.message : String(r.err)}`);
      this.releaseOnce();
      return this.refuse('XX000', 'plb proxy: internal error routing the session');
    }
    if (r.kind === 'refused') {
      if (r.code === '08006') this.replica = undefined;
      return this.refuse(r.code, r.message);
    }
    this.target = r.target;
    this.attached = true;
    if (this.phase === 'closing') return this.end(); // stopped meanwhile: told already
    this.phase = 'backend-startup';
  }

  // ---- its route's steps and dialer (RouteSteps, Dialer) ---------------------------------

  clientGone(): boolean {
    return this.gone;
  }

  setWaiting(waiting: boolean): void {
    this.waiting = waiting;
  }

  admitted(replica: string): void {
    this.isAdmitted = true;
    this.replica = replica;
  }

  release(): void {
    this.releaseOnce();
  }

  dial(target: SessionTarget, _attempt: number, answered: (r: DialResult<Leg>) => void): void {
    // Closed meanwhile (its client gone, a stop): nothing will answer.
    if (this.finished) return answered({ ok: false, err: undefined });
    const { host } = this;
    this.target = target;
    this.dialAnswer = answered;
    this.key ??= host.cancelKeys.issue();
    const named = host.classFrom === 'application_name';
    this.pair.dial(target.host, target.port, host.connectTimeoutMs, this.key, named);
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
    if (this.phase !== 'backend-startup') return;
    this.phase = 'ready';
    const counters = this.host.stats;
    counters.classes[this.cls].ready += 1;
    counters.relayed += 1;
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
    if (this.warnedLate || this.replica === undefined) return;
    this.warnedLate = noteLateClass(this.host, { cls: this.cls, replica: this.replica }, msg);
  }

  ended(e: RelayEnd): void {
    if (e.terminated) this.clientTerminated = true;
    // A client's end is told only before it is connected (routing): the route stops.
    if (e.side === 'client') return this.onClientClose();
    this.settle();
    if (e.code === 'EPROTO') {
      // Not PostgreSQL on the other end: the relay closed both sides.
      this.host.log(`session on ${this.replica}: backend protocol error`);
      this.gone = this.backendGone = true;
      return this.releaseOnce();
    }
    if (e.lastError) this.lastServerError = decodeServerError(e.lastError);
    const err =
      e.code === undefined ? undefined : Object.assign(new Error(`read ${e.code}`), { code: e.code });
    this.backendEnded(e, err);
  }

  closed(answered: boolean): void {
    // Answered and closed before anything else was told (a client gone during authentication):
    // the route ends attached, so the session counts as connected, then closed.
    if (answered) this.settle();
    if (!this.gone) {
      this.gone = true;
      if (this.waiting) this.host.cancelWait(this);
    }
    this.phase = 'closing';
    this.finished = true;
    this.answered({ ok: false, err: undefined });
    this.releaseOnce();
    this.resolveDone?.();
    this.onEnd(this);
  }

  /**
   * The relay failed on the session (native-relay.ts): its backend is closed. Told as a backend's
   * failure would be, with the relay's own FATAL; the route (if any) stops as for a client gone,
   * and the relay closes the client once the FATAL is out (later commands are ignored).
   */
  failed(f: RelayFault): void {
    this.host.log(`session${this.replica === undefined ? '' : ` on ${this.replica}`}: ${f.message}`);
    const tell = this.phase !== 'closing' && !this.gone;
    this.phase = 'closing';
    this.gone = this.backendGone = true;
    if (this.waiting) this.host.cancelWait(this);
    this.releaseOnce();
    // At a message boundary, as for a replica gone (cut inside an oversize message passing through).
    if (tell) this.pair.command(C_AT_BOUNDARY, errorResponse('FATAL', f.sqlstate, f.message));
    this.answered({ ok: false, err: undefined });
  }

  // ---- endings ------------------------------------------------------------------------------

  private onClientClose(): void {
    this.gone = true;
    if (this.waiting) this.host.cancelWait(this);
    this.releaseOnce();
    // Attached: the backend sees EOF and ends its session. Still routing: the route ends it.
    // Refused (or a cancel): the relay closes it once the error is out.
    if (this.attached && !this.backendGone) this.pair.command(B_END);
  }

  private backendEnded(stream: { lastType: number; atBoundary: boolean }, socketError?: Error): void {
    this.backendGone = true;
    const replica = this.replica as string;
    const wasReady = this.phase === 'ready';
    this.releaseOnce();
    if (this.gone || this.clientTerminated || this.phase === 'closing') {
      if (!this.gone) this.pair.command(C_END);
      return;
    }
    this.phase = 'closing';
    this.host.stats.countLoss(this.cls, replica, wasReady);
    const v = judgeBackendEnd(replica, stream, this.lastServerError, socketError);
    if (v.failure) this.host.reportFailure(replica, v.failure, wasReady ? 'session' : 'connect');
    if (v.cut) this.pair.command(C_DESTROY);
    else this.pair.command(C_END, v.last);
  }

  /** An error to the client before any backend is involved, then close. */
  private refuse(code: string, message: string): void {
    this.phase = 'closing';
    this.pair.command(C_END, errorResponse('FATAL', code, message));
  }

  /** Whatever is left of the session is closed (the relay reports the close). */
  private end(): void {
    this.pair.command(C_DESTROY | B_DESTROY);
  }

  shutdown(): void {
    if (this.gone) return;
    const canTell = this.phase !== 'closing';
    this.phase = 'closing';
    if (canTell)
      this.pair.command(C_AT_BOUNDARY | B_END, errorResponse('FATAL', '57P01', 'plb proxy is shutting down'));
    else this.pair.command(C_DESTROY | B_END);
  }

  replicaDown(cause: string): void {
    // Not known to be answered yet (the relay tells ReadyForQuery, up to 5 ms late, not the first
    // answer): its connect fails and is tried elsewhere, as on Node's sockets; one the replica
    // answered meanwhile stays, as a session in its authentication does.
    if (this.gone || !this.attached || this.backendGone || this.phase === 'closing') return;
    const replica = this.replica as string;
    this.host.stats.countLoss(this.cls, replica, this.phase === 'ready');
    this.phase = 'closing';
    this.releaseOnce();
    this.pair.command(
      C_AT_BOUNDARY | B_DESTROY,
      errorResponse('FATAL', '08006', `replica ${replica} went away: ${cause}`),
    );
  }

  private releaseOnce(): void {
    if (!this.isAdmitted) return;
    this.isAdmitted = false;
    if (this.replica !== undefined && this.cls !== undefined) {
      this.host.release(this.replica, this.cls);
      if (this.attached) this.host.stats.classes[this.cls].closed += 1;
    }
    if (this.key) this.host.cancelKeys.forget(this.key.pid);
    this.key = undefined;
  }
}
