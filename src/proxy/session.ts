/**
 * One client connection to the proxy: read its startup packet (answering SSL/GSSENC requests with
 * 'N' and connecting early, early-connect.ts; forwarding a CancelRequest), admit it to a replica
 * for its class (freemium paced under a flood), connect, forward the startup packet, relay bytes
 * both ways until either side closes. Authentication passes through. The backend stream is followed
 * message by message (BackendFramer): BackendKeyData becomes the proxy's key, and a replica going
 * away is told at a message boundary. Routing is session-route.ts, the replica connection
 * socket-dial.ts. This is the proxy's front door on Node's sockets: with TLS on either leg, or
 * where the native one (native-session.ts) is not built or not wanted (--relay js).
 */
import type { Socket } from 'node:net';
import { upgradeClient } from './tls-client.js';
import type { ServiceClass } from '../core/service-class.js';
import { chooseClass, MAX_STARTUP_PACKET, readStartupPacket } from './startup-packet.js';
import { cancelFor } from './cancel-forward.js';
import { routeSession, type RouteResult, type RouteSteps } from './session-route.js';
import { socketDialer, type SocketLeg } from './socket-dial.js';
import type { SessionHost } from './session-host.js';
import { BackendWatch } from './backend-watch.js';
import { ANSWER_N, ANSWER_S, endOnce, ReadBuffer, writeAll } from './socket-io.js';
import { EarlyConnect } from './early-connect.js';
import { judgeBackendEnd } from './session-end.js';
import { SessionLegs } from './session-legs.js';
import { BackendFramer, errorResponse } from './wire.js';

export type { SessionHost } from './session-host.js';

type Phase = 'startup' | 'connecting' | 'backend-startup' | 'ready' | 'closing';

const EMPTY = Buffer.alloc(0);
const EXPIRED = ['53300', 'sorry, too many clients already (plb proxy: freemium startups paced)'] as const;

export class ProxySession {
  phase: Phase = 'startup';
  cls: ServiceClass | undefined;
  replica: string | undefined;
  private donePromise: Promise<void> | undefined;
  private resolveDone: (() => void) | undefined;
  private inbuf: Buffer = EMPTY;
  private backend: Socket | undefined;
  private readonly framer = new BackendFramer();
  private watch: BackendWatch | undefined;
  private admitted = false;
  /** Waiting for a replica slot (the gate holds it). */
  private waiting = false;
  private clientGone = false;
  private backendGone = false;
  private clientTerminated = false;
  private backendError: Error | undefined;
  private startupTimer: NodeJS.Timeout | undefined;
  /** The backend is read into this (net's onread) and handed to `sink` at once. */
  private readonly rbuf = new ReadBuffer();
  private sink: (chunk: Buffer) => boolean = () => false;
  /** The sockets' endings, on Node's sockets or the native relay's. */
  private readonly legs: SessionLegs;
  /** A replica connection opened at the SSLRequest, until the startup packet takes it. */
  private early: EarlyConnect | undefined;

  constructor(
    private client: Socket,
    private readonly listenerClass: ServiceClass,
    private readonly host: SessionHost,
    /** As `done` resolves, without a promise per session. */
    private readonly onEnd: (s: ProxySession) => void = () => undefined,
  ) {
    client.setNoDelay(true);
    this.legs = new SessionLegs(client, this.framer, () => this.finish());
    this.listen(client);
    this.startupTimer = setTimeout(() => {
      if (this.phase === 'startup') this.refuse('08P01', 'timeout waiting for the startup packet');
    }, host.startupTimeoutMs);
    this.startupTimer.unref();
  }

  /** Resolves when both sockets are closed and the router released (made when asked: a stop). */
  get done(): Promise<void> {
    return (this.donePromise ??= this.finished
      ? Promise.resolve()
      : new Promise((r) => (this.resolveDone = r)));
  }

  private listen(client: Socket): void {
    client.on('data', (d: Buffer) => this.onClientData(d));
    client.on('error', () => undefined); // a reset client is an ordinary end
    client.on('close', () => this.onClientClose());
  }

  /** The client's socket is now the TLS one over it (tls-client.ts). */
  useClientSocket(socket: Socket): void {
    this.client = this.legs.client = socket;
    this.listen(socket);
  }

  /** Graceful stop ran out of time: tell the client (at a boundary) and close both sides. */
  shutdown(): void {
    if (this.clientGone) return;
    const canTell = this.phase !== 'closing';
    this.phase = 'closing';
    if (canTell) this.legs.tell(errorResponse('FATAL', '57P01', 'plb proxy is shutting down'), 'end');
    else this.legs.cutBoth();
    this.legs.linger();
  }

  /**
   * The health checker took this session's replica for dead (e.g. a paused server, silent past the
   * hang timeout): tell the client now rather than leave it waiting on a connection that never
   * answers, and drop the backend.
   */
  replicaDown(cause: string): void {
    if (this.clientGone || !this.backend || this.backendGone || this.phase === 'closing') return;
    const replica = this.replica as string;
    this.host.stats.countLoss(this.cls as ServiceClass, replica, this.phase === 'ready');
    this.phase = 'closing';
    this.releaseOnce();
    this.legs.tell(errorResponse('FATAL', '08006', `replica ${replica} went away: ${cause}`), 'destroy');
    this.legs.linger();
  }

  // ---- client side ------------------------------------------------------------------------

  private onClientData(d: Buffer): void {
    if (this.phase === 'startup' || this.phase === 'connecting') {
      this.inbuf = this.inbuf.length === 0 ? d : Buffer.concat([this.inbuf, d]);
      if (this.phase === 'startup') this.readStartup();
      // A client waits for the server's answer after its startup packet: this much is not a client.
      else if (this.inbuf.length > MAX_STARTUP_PACKET)
        this.refuse('08P01', 'unexpected data before the server answered the startup packet');
      return;
    }
    if (this.phase === 'closing' || !this.backend) return;
    // Terminate ('X', length 4) as the last thing sent: the backend's close that follows is expected.
    if (d.length >= 5 && d[d.length - 5] === 0x58 && d.readInt32BE(d.length - 4) === 4)
      this.clientTerminated = true;
    if (!this.backend.write(d)) {
      this.client.pause();
      this.backend.once('drain', () => this.client.resume());
    }
  }

  private readStartup(): void {
    for (;;) {
      const p = readStartupPacket(this.inbuf);
      switch (p.kind) {
        case 'incomplete':
          return;
        case 'invalid':
          return this.refuse(p.code, p.reason);
        case 'ssl':
        case 'gssenc':
          this.openEarly();
          if (p.kind === 'ssl' && this.host.tls) {
            // Bytes after the request would be read as if they had come encrypted: refused.
            if (this.inbuf.length > p.length)
              return this.refuse('08P01', 'unexpected data after the SSL request');
            this.inbuf = EMPTY;
            this.client.write(ANSWER_S);
            return upgradeClient(this, this.client, this.host.tls);
          }
          // No certificate (or GSS): the client goes on in plain text (or gives up).
          this.inbuf = this.inbuf.subarray(p.length);
          this.client.write(ANSWER_N);
          continue;
        case 'cancel':
          this.early?.drop();
          this.inbuf = EMPTY;
          this.phase = 'closing';
          clearTimeout(this.startupTimer);
          return cancelFor(this.host, p.pid, p.secret, () => {
            endOnce(this.client);
            this.legs.linger();
          });
        case 'startup': {
          const packet = Buffer.from(this.inbuf.subarray(0, p.length));
          this.inbuf = Buffer.from(this.inbuf.subarray(p.length));
          const choice = chooseClass(p.params, this.listenerClass, this.host.classFrom);
          if (!choice.ok) return this.refuse('22023', choice.reason);
          this.cls = choice.cls;
          this.phase = 'connecting';
          clearTimeout(this.startupTimer);
          // Freemium waits for its turn under a flood (paced-intake.ts); premium never does.
          const run = (): void => this.startRoute(packet);
          if (this.cls === 'premium' || !this.host.pace) return run();
          return this.host.pace({ run, expire: () => this.unrouted(() => this.refuse(...EXPIRED)) });
        }
      }
    }
  }

  private onClientClose(): void {
    this.clientGone = true;
    this.early?.drop();
    clearTimeout(this.startupTimer);
    if (this.waiting && this.steps) this.host.cancelWait(this.steps);
    this.releaseOnce();
    if (this.backend && !this.backendGone) {
      // The backend sees EOF and ends its session (a vanished replica: destroyed after a while).
      this.legs.endBackend();
      this.legs.linger();
    } else if (!this.backend && this.phase !== 'connecting') this.finish();
    else if (this.backendGone) this.finish();
  }

  /** An error to the client before any backend is involved, then close. */
  private refuse(code: string, message: string): void {
    this.phase = 'closing';
    this.early?.drop();
    clearTimeout(this.startupTimer);
    if (!this.clientGone) {
      const c = this.client;
      endOnce(c, errorResponse('FATAL', code, message));
      // No backend, nothing more to relay: closed once the error and FIN are out, not when the
      // client closes (a flood's refused clients close in bulk, thousands in one loop turn).
      if (!this.backend) c.once('finish', () => c.destroy());
    }
    this.legs.linger();
  }

  // ---- routing (session-route.ts) --------------------------------------------------------
  /** At an SSLRequest: the replica connection opened now (early-connect.ts), its slot held. */
  private openEarly(): void {
    if (this.early || this.admitted) return;
    this.early = EarlyConnect.open(this.host, this.listenerClass, {
      buffer: () => this.rbuf.get(),
      deliver: (chunk) => this.sink(chunk),
      onDrop: () => (this.releaseOnce(), (this.early = this.replica = undefined)),
    });
    if (this.early)
      [this.admitted, this.cls, this.replica] = [true, this.listenerClass, this.early.target.replica];
  }

  /** Not routed yet and not told to stop meanwhile: `then`; its client gone: the end. */
  private unrouted(then: () => void): void {
    if (this.phase !== 'connecting' || this.steps) return;
    if (this.clientGone) return this.finish();
    then();
  }

  private startRoute(packet: Buffer): void {
    this.unrouted(() => this.route(packet));
  }

  /** The session's side of routing; also the ticket it waits under (cancelWait). */
  private steps: RouteSteps | undefined;

  private route(packet: Buffer): void {
    this.steps = {
      host: this.host,
      cls: this.cls as ServiceClass,
      clientGone: () => this.clientGone,
      setWaiting: (w) => (this.waiting = w),
      admitted: (replica) => {
        this.admitted = true;
        this.replica = replica;
      },
      release: () => this.releaseOnce(),
    };
    const early = this.early?.take();
    this.early = undefined;
    const dialer = socketDialer(
      {
        host: this.host,
        clientGone: () => this.clientGone,
        readBuffer: () => this.rbuf.get(),
        deliver: (chunk) => this.sink(chunk),
        setSink: (sink) => (this.sink = sink),
      },
      packet,
      early,
    );
    routeSession(this.steps, dialer, (r) => this.routed(r), early?.target);
  }

  private routed(r: RouteResult<SocketLeg>): void {
    if (r.kind === 'gone') return this.finish();
    if (r.kind === 'error') {
      this.host.log(`session: ${r.err instanceof Error ? r.err.message : String(r.err)}`);
      this.releaseOnce();
      return this.refuse('XX000', 'plb proxy: internal error routing the session');
    }
    if (r.kind === 'refused') {
      if (r.code === '08006') this.replica = undefined;
      return this.refuse(r.code, r.message);
    }
    this.attach(r.leg.socket, r.leg.first, r.target.port);
  }

  private attach(backend: Socket, first: Buffer, port: number): void {
    this.backend = this.legs.backend = backend;
    this.phase = 'backend-startup';
    backend.setNoDelay(true);
    backend.on('error', (err) => (this.backendError = err));
    backend.on('close', () => this.onBackendClose());
    this.sink = (d) => this.onBackendData(d);
    this.watch = new BackendWatch(
      this.host,
      this.framer,
      { cls: this.cls as ServiceClass, replica: this.replica as string, port },
      () => {
        this.phase = 'ready';
        this.host.stats.classes[this.cls as ServiceClass].ready += 1;
      },
    );
    const pending = this.inbuf;
    this.inbuf = EMPTY;
    if (pending.length > 0) backend.write(pending);
    if (this.onBackendData(first)) backend.resume();
  }

  // ---- backend side -----------------------------------------------------------------------

  /** A read from the backend (a view of the read buffer); false stops reading (backpressure). */
  private onBackendData(d: Buffer): boolean {
    if (this.clientGone) return true;
    let out: Buffer[];
    try {
      out = this.framer.push(d);
    } catch (err) {
      // Not PostgreSQL on the other end: nothing sensible can be relayed.
      this.host.log(`session on ${this.replica}: ${err instanceof Error ? err.message : String(err)}`);
      this.client.destroy();
      this.backend?.destroy();
      return true;
    }
    // The framer keeps a view of an unfinished message's start: the next read needs a fresh buffer.
    if (this.framer.heldBytes > 0) this.rbuf.hold();
    if (out.length === 0) return true;
    const ok = writeAll(this.client, out);
    // Not all written at once: the kernel did not take it, the pending write holds the buffer.
    if (this.client.writableLength > 0) this.rbuf.hold();
    if (!ok) {
      this.client.once('drain', () => this.backend?.resume());
      return false;
    }
    return true;
  }

  private onBackendClose(): void {
    this.backendEnded(this.framer, this.backendError);
  }

  private backendEnded(stream: { lastType: number; atBoundary: boolean }, socketError?: Error): void {
    this.backendGone = true;
    const replica = this.replica as string;
    const wasReady = this.phase === 'ready';
    this.releaseOnce();
    if (this.clientGone || this.clientTerminated || this.phase === 'closing') {
      if (!this.clientGone) this.legs.endClient();
      return this.clientGone ? this.finish() : this.legs.linger();
    }
    this.phase = 'closing';
    this.host.stats.countLoss(this.cls as ServiceClass, replica, wasReady);
    const v = judgeBackendEnd(replica, stream, this.watch?.lastServerError, socketError);
    if (v.failure) this.host.reportFailure(replica, v.failure, wasReady ? 'session' : 'connect');
    if (v.cut) this.legs.cutClient();
    else this.legs.endClient(v.last);
    this.legs.linger();
  }

  // ---- endings ----------------------------------------------------------------------------

  private releaseOnce(): void {
    if (!this.admitted) return;
    this.admitted = false;
    if (this.replica !== undefined && this.cls !== undefined) {
      this.host.release(this.replica, this.cls);
      if (this.backend) this.host.stats.classes[this.cls].closed += 1;
    }
    this.watch?.forgetKey();
  }

  private finished = false;
  private finish(): void {
    if (this.finished) return;
    if (!this.legs.closed) return this.legs.linger();
    this.finished = true;
    this.releaseOnce();
    clearTimeout(this.startupTimer);
    this.legs.stop();
    this.resolveDone?.();
    this.onEnd(this);
  }
}
