/**
 * The native front door and relay (native/*.c): relay threads accept a proxy's clients, read their
 * first packets, connect to the replica JavaScript routes them to and copy the session's bytes,
 * outside Node's event loop; every decision is asked of JavaScript here (native-session.ts).
 * Optional: absent (not built, not Linux), the proxy serves its clients on Node's sockets
 * (node-session.ts) as before. PLB_NATIVE_RELAY names another build to load (the sanitizers' one,
 * docs/development.md).
 */
import { availableParallelism } from 'node:os';
import { getSystemErrorName } from 'node:util';
import type { ServiceClass } from '../../core/service-class.js';
import type { ServerKeepalive } from '../session/server-keepalive.js';
import { loadAddon, type Addon, type EventBytes } from './addon.js';

/** Commands (as in relay.h): end a side (after what is pending, with a last message), or drop it. */
export const C_END = 1;
/** End the client with the last message if the backend stream is at a message boundary, else drop it. */
export const C_AT_BOUNDARY = 2;
export const C_DESTROY = 4;
export const B_END = 8;
export const B_DESTROY = 16;

/** Who serves the proxy's plain-TCP clients (--relay, --relay-threads). */
export type RelayChoice = { kind: 'native'; threads: number } | { kind: 'js' };

/** Relay threads by default: one per core, at most 2 (as many as HAProxy's threads on this host). */
export const DEFAULT_RELAY_THREADS = Math.min(2, availableParallelism());

const EV_END = 1;
const EV_PARAM = 2;
const EV_CLOSED = 3;
const EV_PACKET = 4;
const EV_ANSWER = 5;
const EV_DIAL_FAILED = 6;
const EV_READY = 7;
const EV_TIMEOUT = 8;
const EV_FAULT = 9;
/** What failed in a fault (native/relay.h F_*): its words, and the SQLSTATE the client is told. */
const FAULTS: Record<number, { what: string; sqlstate: string }> = {
  1: { what: 'epoll_ctl failed', sqlstate: '58000' },
  2: { what: 'out of memory', sqlstate: '53200' },
  // Only ever a warning (no session ends): a replica connection went on without them.
  3: { what: 'setsockopt failed (keepalive, TCP_USER_TIMEOUT)', sqlstate: '58000' },
};
const CLASSES: readonly ServiceClass[] = ['premium', 'freemium'];

export interface RelayEnd {
  side: 'client' | 'backend';
  /** The socket error (ECONNRESET, EPROTO for a stream that is not PostgreSQL); undefined: EOF. */
  code: string | undefined;
  /** The backend stream is at a message boundary (nothing partly forwarded). */
  atBoundary: boolean;
  /** Type byte of the last backend message forwarded. */
  lastType: number;
  /** The client's last bytes were a Terminate. */
  terminated: boolean;
  /** The last ErrorResponse the backend sent while relayed (backend ends only). */
  lastError: Buffer | undefined;
}

/** The relay itself failed on a session (an allocation, an epoll_ctl): its backend is closed. */
export interface RelayFault {
  /** For the log and the client's FATAL: "plb proxy: native relay failure: out of memory (ENOMEM)". */
  message: string;
  /** The errno's name (ENOMEM, ENOSPC). */
  code: string;
  /** The SQLSTATE of the FATAL the client is told (53200 out of memory, 58000 system error). */
  sqlstate: string;
}

/**
 * What the relay tells one session. A replica's first answer that is not an error goes on without
 * a word: the session learns it from what follows (ready, a backend's end, the close). `ready` and
 * `closed` may come up to 5 ms late (they wait to go with the next event: native/relay.h LAZY_MS),
 * never after anything that happened later. A Buffer given to these is a view valid only during
 * the call: copy what is kept.
 */
export interface FrontListener {
  /** The replica's first answer is an ErrorResponse, held for the session's verdict. */
  answer(heldError: Buffer): void;
  /** The connect failed: before it connected, or after (no answer, or closed before one). */
  dialFailed(code: string, connected: boolean): void;
  /** ReadyForQuery: the backend's own BackendKeyData body (pid, secret), if it sent one. */
  ready(backendKey: Buffer | undefined): void;
  ended(e: RelayEnd): void;
  /** A ParameterStatus from the backend (only when asked for). */
  parameter(msg: Buffer): void;
  /**
   * Both sockets are closed: the session is over. A connected client's own end is not told: the
   * relay ends the backend itself, as the session would (and the backend's end that follows a
   * Terminate or the client's end, and ends the client). answered: a replica's first answer went on
   * (the session was connected, whether or not it was told so before).
   */
  closed(answered: boolean): void;
  /**
   * The relay failed on the session (never a silent drop): its backend is closed, its client waits
   * for one last command (C_END with a FATAL); what is commanded after that is ignored, and the
   * relay closes the client within its linger either way. `closed` follows.
   */
  failed(f: RelayFault): void;
}

/** One client of the front door, as its session drives it. */
export interface FrontPair {
  readonly id: number;
  /**
   * Connect to a replica and send the startup packet; `key` is the proxy's cancel key for the
   * client; `keepalive`: the replica connection's (server-keepalive.ts), set before its connect.
   */
  dial(
    host: string,
    port: number,
    timeoutMs: number,
    key: { pid: number; secret: Buffer },
    watch: boolean,
    keepalive?: ServerKeepalive,
  ): void;
  /** The held first answer: on to the client, or the connection dropped (to try another replica). */
  verdict(forward: boolean): void;
  command(flags: number, last?: Buffer): void;
}

/**
 * A new client's first packet (startup, cancel, or one to refuse), or its startup timeout (packet
 * undefined); clientHost: its host (an IPv4 address, or `v6:` and a hash of an IPv6 one).
 */
export type FrontArrival = (
  pair: FrontPair,
  cls: ServiceClass,
  packet: Buffer | undefined,
  clientHost: string,
) => FrontListener;

export interface FrontOptions {
  /**
   * Clients at once per listener class (any phase); beyond it `refusal` (53300) at the client's
   * first packet (an SSLRequest answered 'N' first), never a session.
   */
  max: Record<ServiceClass, number>;
  refusal: Buffer;
  startupTimeoutMs: number;
}

/** The mailbox's size: a startup packet, an error, a parameter fit. */
const MAILBOX_BYTES = 64 * 1024;

let shared: NativeRelay | string | undefined;

export class NativeRelay {
  private readonly live = new Map<number, FrontListener>();
  private readonly fronts = new Map<number, FrontArrival>();
  /** Where the relay copies an event's bytes: valid only during the call that reads them. */
  private readonly mailbox = Buffer.alloc(MAILBOX_BYTES);

  /** Front doors it can still open (set at start: one a proxy, never freed). */
  private room = 0;

  private constructor(
    private readonly addon: Addon,
    /** Relay threads (the first load decides: one relay a process). */
    readonly threads: number,
  ) {}

  /** The process's relay (started with `threads` threads by the first call), or why there is none. */
  static load(threads: number): NativeRelay | string {
    return (shared ??= NativeRelay.start(threads));
  }

  private static start(threads: number): NativeRelay | string {
    const addon = loadAddon();
    if (typeof addon === 'string') return addon;
    const relay = new NativeRelay(addon, threads);
    try {
      relay.room = addon.start((...a) => relay.dispatch(...a), threads, relay.mailbox);
    } catch (err) {
      return err instanceof Error ? err.message : String(err); // no thread: Node's sockets
    }
    return relay;
  }

  /** Sessions the relay serves now (known to JavaScript: past their first packet). */
  get size(): number {
    return this.live.size;
  }

  /**
   * Failures with no session to tell (a client the relay could not take on, a listener it could
   * not stop polling): a process warning, so they are never silent.
   */
  warn: (message: string) => void = (message) => process.emitWarning(message, { code: 'PLB_NATIVE_RELAY' });

  /** The relay fails on a session as on an allocation or an epoll_ctl (the tests'). */
  injectFault(id: number, what: 'memory' | 'epoll', errno = 0): void {
    this.addon.fault(id, what === 'memory' ? 2 : 1, errno);
  }

  /** Whether another proxy's front door can be opened in this process. */
  hasRoom(): boolean {
    return this.fronts.size < this.room;
  }

  /** A proxy's front door: its listeners' clients come to `arrival` (hasRoom() first). */
  openFront(o: FrontOptions, arrival: FrontArrival): NativeFront {
    const index = this.addon.front(o.max.premium, o.max.freemium, o.refusal, o.startupTimeoutMs);
    this.fronts.set(index, arrival);
    return new NativeFront(this.addon, index);
  }

  private dispatch(
    id: number,
    kind: number,
    side: number,
    err: number,
    flags: number,
    lastType: number,
    inBox: EventBytes,
    front: number,
  ): void {
    // A view of the mailbox: every listener reads it before it returns (copies what it keeps).
    const bytes = typeof inBox === 'number' ? this.mailbox.subarray(0, inBox) : inBox;
    const l = this.live.get(id);
    if (kind === EV_FAULT && !l) {
      // id 0: counted failures of clients JavaScript never knew (lastType: how many).
      const times = id === 0 && lastType > 1 ? ` (${lastType} times)` : '';
      return this.warn(`${relayFault(side, err).message}${times}`);
    }
    if (!l) {
      const arrival = this.fronts.get(front);
      if (!arrival || (kind !== EV_PACKET && kind !== EV_TIMEOUT)) return;
      const host = kind === EV_PACKET ? peerKey(err, flags) : '';
      this.live.set(id, arrival(new RelayPair(this.addon, id), CLASSES[side] as ServiceClass, bytes, host));
      if (this.live.size === 1) this.addon.ref(true);
      return;
    }
    switch (kind) {
      case EV_ANSWER:
        return l.answer(bytes as Buffer);
      case EV_DIAL_FAILED:
        return l.dialFailed(errnoName(err), side === 1);
      case EV_READY:
        return l.ready(bytes);
      case EV_PARAM:
        return l.parameter(bytes as Buffer);
      case EV_FAULT:
        return l.failed(relayFault(side, err));
      case EV_CLOSED:
        this.live.delete(id);
        if (this.live.size === 0) this.addon.ref(false);
        return l.closed(side === 1);
      case EV_END:
        return l.ended({
          side: side === 0 ? 'client' : 'backend',
          code: err === 0 ? undefined : errnoName(err),
          atBoundary: (flags & 1) !== 0,
          lastType,
          terminated: (flags & 2) !== 0,
          lastError: bytes,
        });
    }
  }
}

/** One client of the front door, as its session drives it. */
class RelayPair implements FrontPair {
  constructor(
    private readonly addon: Addon,
    readonly id: number,
  ) {}

  dial(
    host: string,
    port: number,
    ms: number,
    key: { pid: number; secret: Buffer },
    watch: boolean,
    k?: ServerKeepalive,
  ): void {
    const { addon, id } = this;
    if (!k) return addon.dial(id, host, port, ms, key.pid, key.secret, watch, 0, 0, 0, 0);
    addon.dial(
      id,
      host,
      port,
      ms,
      key.pid,
      key.secret,
      watch,
      k.userTimeoutMs,
      k.idleS,
      k.intervalS,
      k.count,
    );
  }

  verdict(forward: boolean): void {
    this.addon.verdict(this.id, forward);
  }

  command(flags: number, last?: Buffer): void {
    this.addon.command(this.id, flags, last);
  }
}

/** One proxy's listeners on the relay threads. */
export class NativeFront {
  private readonly listeners: number[] = [];

  constructor(
    private readonly addon: Addon,
    private readonly index: number,
  ) {}

  /** Listens for clients of cls; the port bound. Throws an Error with the errno's code (EADDRINUSE). */
  listen(cls: ServiceClass, host: string, port: number, backlog: number): number {
    const [listener, bound] = this.addon.listen(this.index, CLASSES.indexOf(cls), host, port, backlog);
    this.listeners.push(listener);
    return bound;
  }

  /** Accepts no more; clients still before their first packet are told `message` and closed. */
  stop(message: Buffer): void {
    for (const l of this.listeners.splice(0)) this.addon.stop(l, message);
  }

  /** Clients open in any phase, and those refused over the limit so far. */
  counts(): { open: number; overLimit: number } {
    const [open, overLimit] = this.addon.counts(this.index);
    return { open, overLimit };
  }
}

function relayFault(what: number, err: number): RelayFault {
  const f = FAULTS[what] ?? { what: `failure ${what}`, sqlstate: 'XX000' };
  const code = errnoName(err);
  return { message: `plb proxy: native relay failure: ${f.what} (${code})`, code, sqlstate: f.sqlstate };
}

/** EV_PACKET's client host (native/relay.h peer): IPv4 dotted, else (flags & 4) an IPv6 address's hash. */
function peerKey(peer: number, flags: number): string {
  const u = peer >>> 0;
  if ((flags & 4) !== 0) return `v6:${u.toString(16)}`;
  return `${u >>> 24}.${(u >>> 16) & 255}.${(u >>> 8) & 255}.${u & 255}`;
}

function errnoName(err: number): string {
  try {
    return getSystemErrorName(-err);
  } catch {
    return `errno ${err}`;
  }
}
