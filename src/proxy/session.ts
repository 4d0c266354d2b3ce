/**
 * One client connection to the proxy: read its startup packet (answering SSL/GSSENC requests
 * with 'N', forwarding a CancelRequest), admit it to a replica for its class, connect, forward the
 * startup packet, then relay bytes both ways until either side closes. Authentication passes
 * through end to end. The backend stream is followed message by message (BackendFramer), so the
 * proxy can replace BackendKeyData with its own key and, when the replica goes away, tell the
 * client with an ErrorResponse at a message boundary instead of leaving it hanging.
 */
import { createConnection, type Socket } from 'node:net';
import type { SecureContext } from 'node:tls';
import { upgradeClient } from './tls-client.js';
import { connectTcp, firstAnswer, type FirstAnswer } from './backend-connect.js';
import { Parser } from 'pg-protocol/dist/parser.js';
import type { BackendMessage } from 'pg-protocol/dist/messages.js';
import { isPlbError } from '../core/errors.js';
import type { ServiceClass } from '../core/service-class.js';
import type { CancelKeys } from './cancel-keys.js';
import { chooseClass, MAX_STARTUP_PACKET, readStartupPacket, type ClassFrom } from './startup-packet.js';
import type { ProxyStats } from './stats.js';
import {
  BackendFramer,
  backendKeyData,
  cancelRequest,
  errorResponse,
  MSG_BACKEND_KEY,
  MSG_ERROR,
  MSG_READY,
} from './wire.js';

/** What a session needs from the proxy around it. */
export interface SessionHost {
  readonly classFrom: ClassFrom;
  /** The client must send its startup packet within this. */
  readonly startupTimeoutMs: number;
  /** TCP connect to a replica must succeed within this. */
  readonly connectTimeoutMs: number;
  /** Replicas tried for one session when connecting fails (each failure is reported). */
  readonly connectAttempts: number;
  readonly cancelKeys: CancelKeys;
  readonly stats: ProxyStats;
  /** With a certificate (--tls-cert/--tls-key): SSLRequest is answered 'S' and TLS ends here. */
  readonly tls?: SecureContext | undefined;
  /**
   * A replica for a session of cls, perhaps after a wait for a slot (admission-gate.ts); rejects
   * with PlbError NO_REPLICA when none may take it, ADMISSION_FULL or ADMISSION_TIMEOUT when the
   * session could not get a slot.
   */
  acquire(cls: ServiceClass, ticket: object): Promise<{ replica: string; host: string; port: number }>;
  /** The session's client left while it waited for a slot: stop waiting (acquire rejects). */
  cancelWait(ticket: object): void;
  release(replica: string, cls: ServiceClass): void;
  /** A passive failure signal for the health checker. */
  reportFailure(replica: string, err: unknown, via: 'connect' | 'session'): void;
  log(line: string): void;
}

type Phase = 'startup' | 'connecting' | 'backend-startup' | 'ready' | 'closing';

const STARTUP_TYPES: ReadonlySet<number> = new Set([MSG_ERROR, MSG_BACKEND_KEY, MSG_READY]);
const SESSION_TYPES: ReadonlySet<number> = new Set([MSG_ERROR]);
/** The backend read buffer (libuv reads up to this much at once). */
const READ_BUFFER_BYTES = 32 * 1024;
/** How long a closed side waits for the other to finish closing before it is destroyed. */
const LINGER_MS = 5000;

interface ServerError {
  severity?: string | undefined;
  code?: string | undefined;
  message: string;
}

export class ProxySession {
  phase: Phase = 'startup';
  cls: ServiceClass | undefined;
  replica: string | undefined;
  /** Resolves when both sockets are closed and the router released. */
  readonly done: Promise<void>;

  private resolveDone!: () => void;
  private inbuf: Buffer = Buffer.alloc(0);
  private backend: Socket | undefined;
  private backendPort = 0;
  private backendHost = '127.0.0.1';
  private readonly framer = new BackendFramer();
  private readonly parser = new Parser();
  private admitted = false;
  /** Waiting for a replica slot (the gate holds it). */
  private waiting = false;
  private clientGone = false;
  private backendGone = false;
  private clientTerminated = false;
  private backendError: Error | undefined;
  private lastServerError: ServerError | undefined;
  private key: { pid: number; secret: Buffer } | undefined;
  private startupTimer: NodeJS.Timeout | undefined;
  /**
   * The backend is read into this session's own buffer (net's onread: no stream machinery or
   * allocation per read). A read is handed to `sink` at once; when the client's write of it is left
   * pending, the buffer is still referenced, so the next read gets a fresh one (`readBuffer`).
   */
  private rbuf: Buffer | undefined;
  private rbufBusy = false;
  private sink: (chunk: Buffer) => boolean = () => false;
  private lingerTimer: NodeJS.Timeout | undefined;

  constructor(
    private client: Socket,
    private readonly listenerClass: ServiceClass,
    private readonly host: SessionHost,
  ) {
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
    client.setNoDelay(true);
    this.listen(client);
    this.startupTimer = setTimeout(() => {
      if (this.phase === 'startup') this.refuse('08P01', 'timeout waiting for the startup packet');
    }, host.startupTimeoutMs);
    this.startupTimer.unref();
  }

  private listen(client: Socket): void {
    client.on('data', (d: Buffer) => this.onClientData(d));
    client.on('error', () => undefined); // a reset client is an ordinary end
    client.on('close', () => this.onClientClose());
  }

  /** The client's socket is now the TLS one over it (tls-client.ts). */
  useClientSocket(socket: Socket): void {
    this.client = socket;
    this.listen(socket);
  }

  /** Graceful stop ran out of time: tell the client (at a boundary) and close both sides. */
  shutdown(): void {
    if (this.clientGone) return;
    const canTell = this.framer.atBoundary && this.phase !== 'closing';
    this.phase = 'closing';
    if (canTell) this.client.end(errorResponse('FATAL', '57P01', 'plb proxy is shutting down'));
    else this.client.destroy();
    this.backend?.end();
    this.linger();
  }

  /**
   * The health checker took this session's replica for dead (e.g. a paused server, silent past the
   * hang timeout): tell the client now rather than leave it waiting on a connection that never
   * answers, and drop the backend.
   */
  replicaDown(cause: string): void {
    if (this.clientGone || !this.backend || this.backendGone || this.phase === 'closing') return;
    const replica = this.replica as string;
    const counters = this.host.stats.classes[this.cls as ServiceClass];
    if (this.phase === 'ready') {
      counters.lost += 1;
      this.host.stats.replica(replica).lost += 1;
    } else {
      counters.startupFailed += 1;
      this.host.stats.replica(replica).failed += 1;
    }
    this.phase = 'closing';
    this.releaseOnce();
    if (this.framer.atBoundary)
      this.client.end(errorResponse('FATAL', '08006', `replica ${replica} went away: ${cause}`));
    else this.client.destroy();
    this.backend.destroy();
    this.linger();
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
          if (p.kind === 'ssl' && this.host.tls) {
            // Bytes after the request would be read as if they had come encrypted: refused.
            if (this.inbuf.length > p.length)
              return this.refuse('08P01', 'unexpected data after the SSL request');
            this.inbuf = Buffer.alloc(0);
            this.client.write('S');
            return upgradeClient(this, this.client, this.host.tls);
          }
          // No certificate (or GSS): the client goes on in plain text (or gives up).
          this.inbuf = this.inbuf.subarray(p.length);
          this.client.write('N');
          continue;
        case 'cancel':
          this.inbuf = Buffer.alloc(0);
          return this.forwardCancel(p.pid, p.secret);
        case 'startup': {
          const packet = Buffer.from(this.inbuf.subarray(0, p.length));
          this.inbuf = Buffer.from(this.inbuf.subarray(p.length));
          const choice = chooseClass(p.params, this.listenerClass, this.host.classFrom);
          if (!choice.ok) return this.refuse('22023', choice.reason);
          this.cls = choice.cls;
          this.phase = 'connecting';
          clearTimeout(this.startupTimer);
          this.route(packet).catch((err: unknown) => {
            this.host.log(`session: ${err instanceof Error ? err.message : String(err)}`);
            this.releaseOnce();
            this.backend?.destroy();
            this.refuse('XX000', 'plb proxy: internal error routing the session');
          });
          return;
        }
      }
    }
  }

  private onClientClose(): void {
    this.clientGone = true;
    clearTimeout(this.startupTimer);
    if (this.waiting) this.host.cancelWait(this);
    this.releaseOnce();
    if (this.backend && !this.backendGone) {
      // The backend sees EOF and ends its session (a vanished replica: destroyed after a while).
      this.backend.end();
      this.linger();
    } else if (!this.backend && this.phase !== 'connecting') this.finish();
    else if (this.backendGone) this.finish();
  }

  /** An error to the client before any backend is involved, then close. */
  private refuse(code: string, message: string): void {
    this.phase = 'closing';
    clearTimeout(this.startupTimer);
    if (!this.clientGone) this.client.end(errorResponse('FATAL', code, message));
    this.linger();
  }

  // ---- routing ----------------------------------------------------------------------------

  /**
   * Admits, connects and sends the startup packet. Until the server's first byte reaches the client
   * nothing is lost by trying again: a refused or reset connection, or a server that answers with
   * a FATAL of a dying server (57P01/57P02, 08xxx), is reported and the session admitted anew
   * (the failures count toward fall, so the router soon leaves that replica). A server that does
   * not answer within the connect timeout is reported as slow and the client told so.
   */
  private async route(packet: Buffer): Promise<void> {
    const cls = this.cls as ServiceClass;
    const counters = this.host.stats.classes[cls];
    let lastError: unknown;
    for (let attempt = 0; attempt < this.host.connectAttempts; attempt++) {
      let target: { replica: string; host: string; port: number };
      try {
        this.waiting = true;
        target = await this.host.acquire(cls, this);
      } catch (err) {
        if (this.clientGone) return this.finish();
        if (isPlbError(err, 'ADMISSION_FULL') || isPlbError(err, 'ADMISSION_TIMEOUT')) {
          counters.refused += 1;
          return this.refuse('53300', `plb proxy: ${err.message}`);
        }
        if (!isPlbError(err, 'NO_REPLICA')) throw err;
        if (lastError === undefined) {
          counters.refused += 1;
          return this.refuse('57P03', `no replica available for class ${cls}`);
        }
        break;
      } finally {
        this.waiting = false;
      }
      this.admitted = true;
      this.replica = target.replica;
      let answer: FirstAnswer;
      let socket: Socket | undefined;
      try {
        socket = await connectTcp(target.host, target.port, this.host.connectTimeoutMs, {
          buffer: () => this.readBuffer(),
          callback: (n, buf) => this.sink((buf as Buffer).subarray(0, n)),
        });
        answer = this.clientGone ? { ok: false, err: undefined } : await this.firstAnswer(socket, packet);
      } catch (err) {
        answer = { ok: false, err, retry: true };
      }
      if (this.clientGone) {
        socket?.destroy();
        this.releaseOnce();
        return this.finish();
      }
      if (!answer.ok) {
        socket?.destroy();
        this.releaseOnce();
        this.host.reportFailure(target.replica, answer.err, 'connect');
        lastError = answer.err;
        if (answer.retry) continue;
        break;
      }
      counters.opened += 1;
      this.host.stats.replica(target.replica).opened += 1;
      this.backendHost = target.host;
      this.backendPort = target.port;
      this.attach(socket as Socket, answer.chunk);
      return;
    }
    counters.startupFailed += 1;
    if (this.replica !== undefined) this.host.stats.replica(this.replica).failed += 1;
    this.replica = undefined;
    this.refuse(
      '08006',
      `could not connect to a replica for class ${cls}: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
    );
  }

  /** Sends the startup packet and waits for the server's first bytes (backend-connect.ts). */
  private firstAnswer(socket: Socket, packet: Buffer): Promise<FirstAnswer> {
    return firstAnswer(socket, packet, this.host.connectTimeoutMs, (sink) => (this.sink = sink));
  }

  private attach(backend: Socket, first: Buffer): void {
    this.backend = backend;
    this.phase = 'backend-startup';
    backend.setNoDelay(true);
    backend.on('error', (err) => (this.backendError = err));
    backend.on('close', () => this.onBackendClose());
    this.sink = (d) => this.onBackendData(d);
    this.framer.hook = { types: STARTUP_TYPES, fn: (type, msg) => this.onStartupMessage(type, msg) };
    const pending = this.inbuf;
    this.inbuf = Buffer.alloc(0);
    if (pending.length > 0) backend.write(pending);
    if (this.onBackendData(first)) backend.resume();
  }

  // ---- backend side -----------------------------------------------------------------------

  private readBuffer(): Buffer {
    if (this.rbuf === undefined || this.rbufBusy) {
      this.rbuf = Buffer.allocUnsafe(READ_BUFFER_BYTES);
      this.rbufBusy = false;
    }
    return this.rbuf;
  }

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
    if (out.length === 0) return true;
    let ok = true;
    if (out.length === 1) ok = this.client.write(out[0] as Buffer);
    else {
      this.client.cork();
      for (const b of out) ok = this.client.write(b);
      this.client.uncork();
    }
    // Not all written at once: the kernel did not take it, the pending write holds the buffer.
    if (this.client.writableLength > 0) this.rbufBusy = true;
    if (!ok) {
      this.client.once('drain', () => this.backend?.resume());
      return false;
    }
    return true;
  }

  /** Startup: record the server's errors, swap BackendKeyData for the proxy's key, see ReadyForQuery. */
  private onStartupMessage(type: number, msg: Buffer): Buffer | undefined {
    if (type === MSG_BACKEND_KEY) {
      if (msg.length < 13) return msg;
      const backend = {
        replica: this.replica as string,
        port: this.backendPort,
        pid: msg.readInt32BE(5),
        secret: Buffer.from(msg.subarray(9)),
      };
      if (this.key) this.host.cancelKeys.forget(this.key.pid);
      this.key = this.host.cancelKeys.issue(backend);
      return backendKeyData(this.key.pid, this.key.secret);
    }
    if (type === MSG_ERROR) {
      this.recordServerError(msg);
      return msg;
    }
    // ReadyForQuery: the session is established; from now on only errors are decoded.
    this.phase = 'ready';
    this.host.stats.classes[this.cls as ServiceClass].ready += 1;
    this.framer.hook = { types: SESSION_TYPES, fn: (_t, m) => (this.recordServerError(m), m) };
    return msg;
  }

  private recordServerError(msg: Buffer): void {
    let decoded: BackendMessage | undefined;
    this.parser.parse(msg, (m) => (decoded = m));
    const e = decoded as (BackendMessage & Partial<ServerError>) | undefined;
    this.lastServerError = { severity: e?.severity, code: e?.code, message: e?.message ?? 'server error' };
  }

  private onBackendClose(): void {
    this.backendGone = true;
    const replica = this.replica as string;
    const cls = this.cls as ServiceClass;
    const wasReady = this.phase === 'ready';
    this.releaseOnce();
    if (this.clientGone || this.clientTerminated || this.phase === 'closing') {
      if (!this.clientGone) this.client.end();
      return this.clientGone ? this.finish() : this.linger();
    }
    this.phase = 'closing';
    const serverSaid =
      this.framer.lastType === MSG_ERROR &&
      this.framer.atBoundary &&
      (this.lastServerError?.severity === 'FATAL' || this.lastServerError?.severity === 'PANIC');
    const counters = this.host.stats.classes[cls];
    if (wasReady) {
      counters.lost += 1;
      this.host.stats.replica(replica).lost += 1;
    } else {
      counters.startupFailed += 1;
      this.host.stats.replica(replica).failed += 1;
    }
    const via = wasReady ? 'session' : 'connect';
    if (serverSaid) {
      // The server ended the session with its own FATAL (shutdown, authentication...), already relayed.
      const se = this.lastServerError as ServerError;
      // A server that answers 08xxx itself (08P01: the client broke the protocol) is alive: a
      // hostile client must not count toward marking its replica down.
      if (!(se.code ?? '').startsWith('08'))
        this.host.reportFailure(replica, Object.assign(new Error(se.message), se), via);
      this.client.end();
    } else {
      const err =
        this.backendError ??
        Object.assign(new Error('connection terminated unexpectedly'), { code: 'ECONNRESET' });
      this.host.reportFailure(replica, err, via);
      if (this.framer.atBoundary)
        this.client.end(errorResponse('FATAL', '08006', `replica ${replica} went away: ${err.message}`));
      else this.client.destroy(); // cut inside a message: nothing more can be said in protocol
    }
    this.linger();
  }

  // ---- cancel -----------------------------------------------------------------------------

  /** CancelRequest: forwarded to the session's backend with the backend's own key; no reply. */
  private forwardCancel(pid: number, secret: Buffer): void {
    this.phase = 'closing';
    clearTimeout(this.startupTimer);
    const key = this.host.cancelKeys.lookup(pid, secret);
    if (!key) {
      this.client.end();
      return this.linger();
    }
    this.host.stats.cancels += 1;
    const s = createConnection({ host: this.backendHost, port: key.port });
    const timer = setTimeout(() => s.destroy(), this.host.connectTimeoutMs);
    timer.unref();
    s.on('error', () => undefined);
    s.on('connect', () => s.end(cancelRequest(key.pid, key.secret)));
    s.on('data', () => undefined);
    // The client waits for the close to know the request was delivered.
    s.on('close', () => {
      clearTimeout(timer);
      this.client.end();
      this.linger();
    });
  }

  // ---- endings ----------------------------------------------------------------------------

  private releaseOnce(): void {
    if (!this.admitted) return;
    this.admitted = false;
    if (this.replica !== undefined && this.cls !== undefined) {
      this.host.release(this.replica, this.cls);
      if (this.backend) this.host.stats.classes[this.cls].closed += 1;
    }
    if (this.key) {
      this.host.cancelKeys.forget(this.key.pid);
      this.key = undefined;
    }
  }

  /** Gives the sockets a bounded time to close by themselves; then destroys them. */
  private linger(): void {
    const bothClosed = (): boolean => this.client.closed && (!this.backend || this.backend.closed);
    if (bothClosed()) return this.finish();
    if (this.lingerTimer) return;
    const check = (): void => {
      if (bothClosed()) this.finish();
    };
    this.client.once('close', check);
    this.backend?.once('close', check);
    this.lingerTimer = setTimeout(() => {
      this.client.destroy();
      this.backend?.destroy();
    }, LINGER_MS);
    this.lingerTimer.unref();
  }

  private finished = false;
  private finish(): void {
    if (this.finished) return;
    if (!this.client.closed || (this.backend && !this.backend.closed)) return this.linger();
    this.finished = true;
    this.releaseOnce();
    clearTimeout(this.startupTimer);
    clearTimeout(this.lingerTimer);
    this.resolveDone();
  }
}
