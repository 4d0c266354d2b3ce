/**
 * One client session's lifecycle, whichever front door carries its bytes (session-transport.ts):
 * its phases, its class and pacing, routing and its slot on a replica (admission), the cancel
 * request, the backend's end, the replica's loss, a stop, a failed transport, and its release.
 * As in pg-pool, one object owns the state and every transition goes through it; a slot is a lease
 * given back once (a second release is a bug and throws).
 */
import type { ServiceClass } from '../../core/service-class.js';
import { cancelFor } from './cancel-forward.js';
import type { ServerError } from '../protocol/server-messages.js';
import { judgeBackendEnd } from './session-end.js';
import type { ClientSession, SessionHost } from './session-host.js';
import { routeSession, type Dialer, type RouteResult, type RouteSteps } from './session-route.js';
import type { SessionTransport } from './session-transport.js';
import { chooseClass } from '../protocol/startup-packet.js';
import { errorResponse } from '../protocol/wire.js';
import { yieldMessage, type Yielder } from '../admission/host-share.js';

export type Phase = 'startup' | 'connecting' | 'backend-startup' | 'ready' | 'closing';

/** The phases a phase may go on to (closing is final; finish happens in it). */
const NEXT: Readonly<Record<Phase, readonly Phase[]>> = {
  startup: ['connecting', 'closing'],
  connecting: ['backend-startup', 'closing'],
  'backend-startup': ['ready', 'closing'],
  ready: ['closing'],
  closing: ['closing'],
};

const EXPIRED = ['53300', 'sorry, too many clients already (plb proxy: freemium startups paced)'] as const;

/**
 * --startup-timeout's default: how long a client may take to send its startup packet, and how long
 * a session may hold a replica slot before it reaches ReadyForQuery (PostgreSQL's own
 * authentication_timeout is 60 s): a flood of startups that never answer the password request
 * holds each slot this long at most, and that time counts against the flood's class.
 */
export const DEFAULT_STARTUP_TIMEOUT_MS = 5000;

/** A replica slot the session holds (from admission or an early connection) until released. */
class Lease {
  private released = false;
  /** Its session reached ReadyForQuery. */
  established = false;

  constructor(
    private readonly host: SessionHost,
    readonly replica: string,
    readonly cls: ServiceClass,
  ) {}

  release(): void {
    if (this.released) throw new Error(`session: its slot on ${this.replica} released twice`);
    this.released = true;
    this.host.release(this.replica, this.cls, this.established);
  }
}

/**
 * The session as the proxy keeps it (ClientSession) and as its route sees it (RouteSteps; also
 * its ticket in the admission queue).
 */
export class SessionCore<L> implements ClientSession, RouteSteps, Yielder {
  phase: Phase = 'startup';
  /** The listener's until the startup packet names another (chooseClass). */
  cls: ServiceClass;
  replica: string | undefined;
  private lease: Lease | undefined;
  /** The route answered: the session has a backend (it counts as closed when released). */
  private attached = false;
  private waiting = false;
  private routing = false;
  private gone = false;
  private backendGone = false;
  private clientTerminated = false;
  private ended = false;
  private donePromise: Promise<void> | undefined;
  private resolveDone: (() => void) | undefined;
  /** The route's dialer (a connection answered after a stop is dropped through it). */
  private dialer: Dialer<L> | undefined;
  /** Runs while a slot is held before ReadyForQuery (--startup-timeout). */
  private authTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly transport: SessionTransport<L>,
    readonly host: SessionHost,
    listenerClass: ServiceClass,
    /** As `done` resolves, without a promise per session. */
    private readonly onEnd: (s: ClientSession) => void,
    /** Its client's host (the admission queue and --startup-yield tell hosts apart by it). */
    readonly clientHost = '',
  ) {
    this.cls = listenerClass;
  }

  /** Resolves when both sides are closed and the slot released (made when asked: a stop). */
  get done(): Promise<void> {
    return (this.donePromise ??= this.ended ? Promise.resolve() : new Promise((r) => (this.resolveDone = r)));
  }

  get finished(): boolean {
    return this.ended;
  }

  /** Holds a replica slot now. */
  get holdsSlot(): boolean {
    return this.lease !== undefined;
  }

  private enter(next: Phase): void {
    if (!NEXT[this.phase].includes(next)) throw new Error(`session: phase ${this.phase} to ${next}`);
    this.phase = next;
  }

  // ---- the client's first packet ------------------------------------------------------------

  /** A startup packet: its class, freemium's turn under a flood (paced-intake.ts), its route. */
  startup(params: Readonly<Record<string, string>>): void {
    const choice = chooseClass(params, this.cls, this.host.classFrom);
    if (!choice.ok) return this.refuse('22023', choice.reason);
    this.cls = choice.cls;
    this.enter('connecting');
    // Premium never waits for its turn.
    if (this.cls === 'premium' || !this.host.pace) return this.route();
    this.host.pace({
      run: () => this.route(),
      expire: () => this.unrouted() && this.refuse(...EXPIRED),
    });
  }

  /** A CancelRequest: forwarded (cancel-forward.ts), then the client's connection is closed. */
  cancel(pid: number, secret: Buffer): void {
    this.enter('closing');
    cancelFor(this.host, pid, secret, () => this.transport.close('end', undefined));
  }

  /**
   * A first packet no client sends (a length no packet has: a Terminate, say): closed without a
   * word, as PostgreSQL closes it (it only logs "invalid length of startup packet").
   */
  closeQuietly(): void {
    this.enter('closing');
    this.transport.close('end', undefined);
  }

  /** An error to the client before any backend is involved, then close. */
  refuse(code: string, message: string): void {
    this.enter('closing');
    this.transport.refuse(this.gone ? undefined : errorResponse('FATAL', code, message));
  }

  // ---- routing (session-route.ts) ----------------------------------------------------------

  /** Not routed yet and not told to stop meanwhile (true); its client gone: the end. */
  private unrouted(): boolean {
    if (this.phase !== 'connecting' || this.routing) return false;
    if (this.gone) return (this.transport.close('destroy', 'destroy'), false);
    return true;
  }

  private route(): void {
    if (!this.unrouted()) return;
    this.routing = true;
    const { dialer, first } = this.transport.dialer();
    this.dialer = dialer;
    routeSession(this, dialer, (r) => this.routed(r), first);
  }

  private routed(r: RouteResult<L>): void {
    if (r.kind === 'gone') return this.transport.close('destroy', 'destroy');
    if (r.kind === 'error') {
      this.host.log(`session: ${r.err instanceof Error ? r.err.message : String(r.err)}`);
      this.releaseOnce();
      return this.refuse('XX000', 'plb proxy: internal error routing the session');
    }
    if (r.kind === 'refused') {
      if (r.code === '08006') this.replica = undefined;
      return this.refuse(r.code, r.message);
    }
    this.attached = true;
    if (this.phase === 'closing') {
      // Stopped meanwhile (told already): the new connection is not used.
      this.dialer?.drop(r.leg);
      return this.transport.close('destroy', 'destroy');
    }
    this.enter('backend-startup');
    this.transport.attach(r.target, r.leg);
  }

  clientGone(): boolean {
    return this.gone;
  }

  setWaiting(waiting: boolean): void {
    this.waiting = waiting;
  }

  /** A slot on replica is held now (an early connection's is its route's first attempt's). */
  admitted(replica: string): void {
    if (this.lease?.replica !== replica) this.lease = new Lease(this.host, replica, this.cls);
    this.replica = replica;
    if (!this.authTimer && this.phase !== 'ready') {
      this.authTimer = setTimeout(() => this.authExpired(), this.host.startupTimeoutMs);
      this.authTimer.unref();
    }
    // Before ReadyForQuery (not at an SSLRequest's early connection): it may yield to another host.
    if (this.unready()) this.host.share?.hold(this, this.cls, this.clientHost);
  }

  private unready(): boolean {
    return !this.gone && (this.phase === 'connecting' || this.phase === 'backend-startup');
  }

  /**
   * Held a slot --startup-timeout long without ReadyForQuery (a client that never answers the
   * password request, say): told as PostgreSQL words its authentication_timeout, the backend
   * dropped; until then the slot counted against the session's class.
   */
  private authExpired(): void {
    this.authTimer = undefined;
    const s = this.host.startupTimeoutMs / 1000;
    if (this.cutAuth(`canceling authentication due to timeout (plb proxy --startup-timeout ${s}s)`))
      this.host.stats.startupTimeouts += 1;
  }

  /** Another client host waits for a slot of its class (host-share.ts): cut as at the timeout. */
  yieldSlot(): boolean {
    const share = this.host.share;
    if (!share || !this.cutAuth(yieldMessage(share.yieldMs))) return false;
    this.host.stats.startupYields += 1;
    return true;
  }

  private cutAuth(message: string): boolean {
    if (!this.unready()) return false;
    this.enter('closing');
    // The backend is dropped now (the server sees EOF and exits): the slot goes back at once, not
    // when the client, which may never close, has gone too.
    this.releaseOnce();
    this.transport.close('at-boundary', 'destroy', errorResponse('FATAL', '57014', message));
    return true;
  }

  private stopAuthTimer(): void {
    if (this.authTimer) clearTimeout(this.authTimer);
    this.authTimer = undefined;
    this.host.share?.drop(this);
  }

  release(): void {
    this.releaseOnce();
  }

  /** The slot given back and its replica forgotten (an early connection dropped unused). */
  unadmit(): void {
    this.releaseOnce();
    this.replica = undefined;
  }

  // ---- what the transport reports ----------------------------------------------------------

  /** ReadyForQuery during the backend's startup: the session is established (false: it was not). */
  ready(): boolean {
    if (this.phase !== 'backend-startup') return false;
    this.enter('ready');
    this.stopAuthTimer();
    this.host.stats.classes[this.cls].ready += 1;
    if (this.lease) {
      this.lease.established = true;
      this.host.established?.(this.lease.replica, this.lease.cls);
    }
    return true;
  }

  /** The client's last bytes were a Terminate: the backend's close that follows is expected. */
  terminating(): void {
    this.clientTerminated = true;
  }

  clientClosed(): void {
    this.gone = true;
    if (this.waiting) this.host.cancelWait(this);
    // Attached: the slot is its backend's until that has gone (backendEnded, or finish): the
    // replica still counts it until then, and a new session must not take its place before.
    if (!this.attached || this.backendGone) this.releaseOnce();
    // Attached: the backend sees EOF and ends its session (a vanished replica: dropped after a
    // while). Still routing: the route ends it. Else nothing is left but to finish.
    if (this.attached && !this.backendGone) this.transport.close(undefined, 'end');
    else if (this.backendGone || this.phase !== 'connecting') this.transport.close(undefined, undefined);
  }

  /** The backend's stream ended (where it stopped, the server's last error, the socket's). */
  backendEnded(
    stream: { lastType: number; atBoundary: boolean },
    serverError: ServerError | undefined,
    socketError: Error | undefined,
  ): void {
    this.backendGone = true;
    const replica = this.replica as string;
    const wasReady = this.phase === 'ready';
    this.releaseOnce();
    if (this.gone || this.clientTerminated || this.phase === 'closing')
      return this.transport.close(this.gone ? undefined : 'end', undefined);
    this.enter('closing');
    this.host.stats.countLoss(this.cls, replica, wasReady);
    const v = judgeBackendEnd(replica, stream, serverError, socketError);
    if (v.failure) this.host.reportFailure(replica, v.failure, wasReady ? 'session' : 'connect');
    if (v.cut) this.transport.close('destroy', undefined);
    else this.transport.close('end', undefined, v.last);
  }

  /** Not PostgreSQL on the other end: nothing sensible can be relayed; the transport drops both. */
  backendBroke(detail: string): void {
    this.host.log(`session on ${this.replica}: ${detail}`);
    this.gone = this.backendGone = true;
    this.releaseOnce();
  }

  /**
   * The transport failed under this session (the native relay's 'error' event): the client is
   * told a FATAL (`sqlstate`, `message` as the transport words it) (at a message boundary, else dropped) unless it is gone or
   * told already, the backend dropped, the slot given back. The transport still reports the close.
   */
  transportFailed(message: string, sqlstate = 'XX000'): void {
    if (this.ended) return;
    this.host.log(`session${this.replica === undefined ? '' : ` on ${this.replica}`}: ${message}`);
    const tell = !this.gone && this.phase !== 'closing';
    this.enter('closing');
    this.releaseOnce();
    if (tell) this.transport.close('at-boundary', 'destroy', errorResponse('FATAL', sqlstate, message));
    else this.transport.close('destroy', 'destroy');
  }

  /** Both sides are closed: the session is over. */
  finish(): void {
    if (this.ended) return;
    if (!this.gone) {
      this.gone = true;
      if (this.waiting) this.host.cancelWait(this);
    }
    this.enter('closing');
    this.ended = true;
    this.transport.over();
    this.releaseOnce();
    this.resolveDone?.();
    this.onEnd(this);
  }

  // ---- told from outside (ClientSession) ---------------------------------------------------

  /** Graceful stop ran out of time: tell the client (at a boundary) and close both sides. */
  shutdown(): void {
    if (this.gone) return;
    const canTell = this.phase !== 'closing';
    this.enter('closing');
    if (canTell)
      this.transport.close(
        'at-boundary',
        'end',
        errorResponse('FATAL', '57P01', 'plb proxy is shutting down'),
      );
    else this.transport.close('destroy', 'end');
  }

  /**
   * The health checker took this session's replica for dead (e.g. a paused server, silent past the
   * hang timeout): tell the client now rather than leave it waiting on a connection that never
   * answers, and drop the backend. Not attached yet: its connect fails and is tried elsewhere.
   */
  replicaDown(cause: string): void {
    if (this.gone || !this.attached || this.backendGone || this.phase === 'closing') return;
    const replica = this.replica as string;
    this.host.stats.countLoss(this.cls, replica, this.phase === 'ready');
    this.enter('closing');
    this.releaseOnce();
    this.transport.close(
      'at-boundary',
      'destroy',
      errorResponse('FATAL', '08006', `${this.host.serverNoun ?? 'replica'} ${replica} went away: ${cause}`),
    );
  }

  /** The one place a slot is given back. */
  private releaseOnce(): void {
    const lease = this.lease;
    this.stopAuthTimer();
    if (!lease) return;
    this.lease = undefined;
    lease.release();
    if (this.attached) this.host.stats.classes[lease.cls].closed += 1;
    this.transport.forgetKey();
  }
}
