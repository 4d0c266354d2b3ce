/**
 * One client connection to the proxy on Node's sockets: with TLS on either leg, or where the native
 * front door (native-session.ts) is not built or not wanted (--relay js). This is its transport
 * (session-transport.ts); the lifecycle is the session core's (session-core.ts). Here: reading the
 * startup packet (SSL/GSSENC requests answered 'N', or 'S' and TLS, connecting early,
 * early-connect.ts), the replica connection (socket-dial.ts), and relaying bytes both ways with
 * backpressure. The backend stream is followed message by message (BackendFramer): BackendKeyData
 * becomes the proxy's key, and a replica going away is told at a message boundary.
 */
import type { Socket } from 'node:net';
import type { ServiceClass } from '../../core/service-class.js';
import { BackendWatch } from '../session/backend-watch.js';
import { EarlyConnect } from './early-connect.js';
import { SessionCore } from '../session/session-core.js';
import { hostKey } from '../admission/host-share.js';
import type { ClientSession, SessionHost, SessionTarget } from '../session/session-host.js';
import { SessionLegs } from './session-legs.js';
import type { BackendClose, ClientClose, SessionTransport } from '../session/session-transport.js';
import { socketDialer, type SocketLeg } from './socket-dial.js';
import { ANSWER_N, ANSWER_S, endOnce, ReadBuffer, writeAll } from './socket-io.js';
import { MAX_STARTUP_PACKET, readStartupPacket, withApplicationName } from '../protocol/startup-packet.js';
import { markApplicationName } from '../../core/service-class.js';
import { upgradeClient } from '../protocol/tls-client.js';
import { BackendFramer, ClientFramer } from '../protocol/wire.js';

const EMPTY = Buffer.alloc(0);

export class ProxySession implements SessionTransport<SocketLeg> {
  readonly core: SessionCore<SocketLeg>;
  private inbuf: Buffer = EMPTY;
  /** The startup packet, sent to each replica the route dials. */
  private packet: Buffer = EMPTY;
  /** Its parameters (the replica view marks application_name with the class). */
  private startupParams: { protocol: number; params: Record<string, string> } | undefined;
  private backend: Socket | undefined;
  private readonly framer = new BackendFramer();
  /** Message boundaries of what the client sends after its startup packet. */
  private readonly clientFramer = new ClientFramer();
  private watch: BackendWatch | undefined;
  private backendError: Error | undefined;
  private readonly startupTimer: NodeJS.Timeout;
  /** The backend is read into this (net's onread) and handed to `sink` at once. */
  private readonly rbuf = new ReadBuffer();
  private sink: (chunk: Buffer) => boolean = () => false;
  private readonly legs: SessionLegs;
  /** A replica connection opened at the SSLRequest, until the startup packet takes it. */
  private early: EarlyConnect | undefined;

  constructor(
    private client: Socket,
    private readonly listenerClass: ServiceClass,
    private readonly host: SessionHost,
    onEnd: (s: ClientSession) => void = () => undefined,
  ) {
    this.core = new SessionCore(this, host, listenerClass, onEnd, hostKey(client.remoteAddress));
    client.setNoDelay(true);
    this.legs = new SessionLegs(client, this.framer, () => this.core.finish());
    this.listen(client);
    this.startupTimer = setTimeout(() => {
      if (this.core.phase === 'startup') this.core.refuse('08P01', 'timeout waiting for the startup packet');
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
    this.client = this.legs.client = socket;
    this.listen(socket);
  }

  // ---- client side ------------------------------------------------------------------------

  private onClientData(d: Buffer): void {
    const { core } = this;
    if (core.phase === 'startup' || core.phase === 'connecting') {
      this.inbuf = this.inbuf.length === 0 ? d : Buffer.concat([this.inbuf, d]);
      if (core.phase === 'startup') this.readStartup();
      // A client waits for the server's answer after its startup packet: this much is not a client.
      else if (this.inbuf.length > MAX_STARTUP_PACKET)
        core.refuse('08P01', 'unexpected data before the server answered the startup packet');
      return;
    }
    if (core.phase === 'closing' || !this.backend) return;
    // A Terminate, as a whole message: the backend's close that follows is expected.
    if (this.clientFramer.push(d)) core.terminating();
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
        case 'bad-length':
          clearTimeout(this.startupTimer);
          return this.core.closeQuietly();
        case 'invalid':
          return this.core.refuse(p.code, p.reason);
        case 'ssl':
        case 'gssenc':
          this.openEarly();
          if (p.kind === 'ssl' && this.host.tls) {
            // Bytes after the request would be read as if they had come encrypted: refused.
            if (this.inbuf.length > p.length)
              return this.core.refuse('08P01', 'unexpected data after the SSL request');
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
          clearTimeout(this.startupTimer);
          return this.core.cancel(p.pid, p.secret);
        case 'startup':
          this.packet = Buffer.from(this.inbuf.subarray(0, p.length));
          this.startupParams = p;
          this.inbuf = Buffer.from(this.inbuf.subarray(p.length));
          clearTimeout(this.startupTimer);
          return this.core.startup(p.params);
      }
    }
  }

  private onClientClose(): void {
    this.early?.drop();
    clearTimeout(this.startupTimer);
    this.core.clientClosed();
    // Paused for a client that will never drain: read on, so what it sends ends it (onBackendData).
    this.backend?.resume();
  }

  /** At an SSLRequest: the replica connection opened now (early-connect.ts), its slot held. */
  private openEarly(): void {
    if (this.early || this.core.holdsSlot) return;
    this.early = EarlyConnect.open(this.host, this.listenerClass, {
      buffer: () => this.rbuf.get(),
      deliver: (chunk) => this.sink(chunk),
      onDrop: () => (this.core.unadmit(), (this.early = undefined)),
    });
    if (this.early) this.core.admitted(this.early.target.replica);
  }

  // ---- the transport (SessionTransport) ----------------------------------------------------

  dialer(): { dialer: ReturnType<typeof socketDialer>; first: SessionTarget | undefined } {
    const early = this.early?.take();
    this.early = undefined;
    const dialer = socketDialer(
      {
        host: this.host,
        clientGone: () => this.core.clientGone(),
        readBuffer: () => this.rbuf.get(),
        deliver: (chunk) => this.sink(chunk),
        setSink: (sink) => (this.sink = sink),
      },
      this.startupParams && this.host.markClass
        ? withApplicationName(
            this.startupParams,
            markApplicationName(this.core.cls, this.startupParams.params.application_name),
          )
        : this.packet,
      early,
    );
    return { dialer, first: early?.target };
  }

  attach(target: SessionTarget, leg: SocketLeg): void {
    const backend = leg.socket;
    this.backend = this.legs.backend = backend;
    backend.setNoDelay(true);
    backend.on('error', (err) => (this.backendError = err));
    backend.on('close', () =>
      this.core.backendEnded(this.framer, this.watch?.lastServerError, this.backendError),
    );
    this.sink = (d) => this.onBackendData(d);
    const { cls, replica } = this.core;
    this.watch = new BackendWatch(
      this.host,
      this.framer,
      { cls, replica: replica as string, port: target.port },
      () => this.core.ready(),
    );
    const pending = this.inbuf;
    this.inbuf = EMPTY;
    if (pending.length > 0) {
      if (this.clientFramer.push(pending)) this.core.terminating();
      backend.write(pending);
    }
    if (this.onBackendData(leg.first)) backend.resume();
  }

  refuse(last: Buffer | undefined): void {
    this.early?.drop();
    clearTimeout(this.startupTimer);
    if (last) {
      const c = this.client;
      endOnce(c, last);
      // No backend, nothing more to relay: closed once the error and FIN are out, not when the
      // client closes (a flood's refused clients close in bulk, thousands in one loop turn).
      if (!this.backend) c.once('finish', () => c.destroy());
    }
    this.legs.linger();
  }

  close(client: ClientClose | undefined, backend: BackendClose | undefined, last?: Buffer): void {
    this.legs.close(client, backend, last);
  }

  forgetKey(): void {
    this.watch?.forgetKey();
  }

  over(): void {
    clearTimeout(this.startupTimer);
    this.legs.stop();
  }

  // ---- backend side -----------------------------------------------------------------------

  /** A read from the backend (a view of the read buffer); false stops reading (backpressure). */
  private onBackendData(d: Buffer): boolean {
    if (this.core.clientGone()) {
      // Sent to a client that has gone: closed, as the client's own kernel would answer it (the
      // backend's next write fails and it ends, instead of streaming until the linger runs out).
      this.backend?.destroy();
      return false;
    }
    let out: Buffer[];
    try {
      out = this.framer.push(d);
    } catch (err) {
      this.core.backendBroke(err instanceof Error ? err.message : String(err));
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
}
