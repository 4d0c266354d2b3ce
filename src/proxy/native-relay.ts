/**
 * The native relay (native/relay.c): an established session's two sockets are handed to relay
 * threads, which copy its bytes outside Node's event loop and report each side's end; the session
 * answers with what to do (relayed-legs.ts). Optional: absent (not built, not Linux), sessions are
 * relayed in JavaScript as before.
 */
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { availableParallelism } from 'node:os';
import { getSystemErrorName } from 'node:util';

/** Commands (as in relay.c): end a side (after what is pending, with a last message), or drop it. */
export const C_END = 1;
/** End the client with the last message if the backend stream is at a message boundary, else drop it. */
export const C_AT_BOUNDARY = 2;
export const C_DESTROY = 4;
export const B_END = 8;
export const B_DESTROY = 16;

/** Who copies an established session's bytes (--relay, --relay-threads). */
export type RelayChoice = { kind: 'native'; threads: number } | { kind: 'js' };

/** Relay threads by default: one per core, at most 2 (as many as HAProxy's threads on this host). */
export const DEFAULT_RELAY_THREADS = Math.min(2, availableParallelism());

const EV_END = 1;
const EV_PARAM = 2;
const EV_CLOSED = 3;

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

export interface RelayListener {
  ended(e: RelayEnd): void;
  /** A ParameterStatus from the backend (only when asked for). */
  parameter(msg: Buffer): void;
  /** Both sockets are closed: the session is over. */
  closed(): void;
}

/** One relayed session. */
export interface RelayedPair {
  command(flags: number, last?: Buffer): void;
}

interface Addon {
  start(
    onEvent: (...a: [number, number, number, number, number, number, Buffer?]) => void,
    threads: number,
  ): void;
  add(id: number, clientFd: number, backendFd: number, watchParams: boolean): void;
  command(id: number, flags: number, last?: Buffer): void;
  ref(on: boolean): void;
}

let shared: NativeRelay | string | undefined;

export class NativeRelay {
  private readonly live = new Map<number, RelayListener>();
  private nextId = 1;

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
    let addon: Addon;
    try {
      // native/build/relay.node from src/proxy/ or dist/proxy/ alike.
      addon = createRequire(import.meta.url)('../../native/build/relay.node') as Addon;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return code === 'MODULE_NOT_FOUND' ? 'not built (npm run build builds it)' : String(err);
    }
    const relay = new NativeRelay(addon, threads);
    try {
      addon.start((...a) => relay.dispatch(...a), threads);
    } catch (err) {
      return err instanceof Error ? err.message : String(err); // no thread: the JavaScript relay
    }
    return relay;
  }

  /** Sessions relayed now. */
  get size(): number {
    return this.live.size;
  }

  /**
   * Takes over an established session's sockets: their descriptors are duplicated into the relay
   * and the sockets themselves destroyed (quietly: their listeners are removed first). Undefined
   * (nothing taken) when a socket has no descriptor of its own (TLS, or already closed), or the
   * relay could not take them (out of descriptors or memory): the session goes on in JavaScript.
   */
  adopt(
    client: Socket,
    backend: Socket,
    watchParams: boolean,
    listener: RelayListener,
  ): RelayedPair | undefined {
    const cfd = fdOf(client);
    const bfd = fdOf(backend);
    if (cfd === undefined || bfd === undefined) return undefined;
    const id = this.nextId++;
    try {
      this.addon.add(id, cfd, bfd, watchParams);
    } catch {
      return undefined;
    }
    this.live.set(id, listener);
    if (this.live.size === 1) this.addon.ref(true);
    for (const s of [client, backend]) {
      s.removeAllListeners();
      s.on('error', () => undefined);
      s.destroy();
    }
    return { command: (flags, last) => this.addon.command(id, flags, last) };
  }

  private dispatch(
    id: number,
    kind: number,
    side: number,
    err: number,
    flags: number,
    lastType: number,
    bytes?: Buffer,
  ): void {
    const l = this.live.get(id);
    if (!l) return;
    if (kind === EV_PARAM) return l.parameter(bytes as Buffer);
    if (kind === EV_CLOSED) {
      this.live.delete(id);
      if (this.live.size === 0) this.addon.ref(false);
      return l.closed();
    }
    if (kind !== EV_END) return;
    l.ended({
      side: side === 0 ? 'client' : 'backend',
      code: err === 0 ? undefined : errnoName(err),
      atBoundary: (flags & 1) !== 0,
      lastType,
      terminated: (flags & 2) !== 0,
      lastError: bytes,
    });
  }
}

function fdOf(s: Socket): number | undefined {
  // A TLSSocket's handle is not the TCP one: its bytes are not the wire's.
  if ('encrypted' in s) return undefined;
  const fd = (s as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}

function errnoName(err: number): string {
  try {
    return getSystemErrorName(-err);
  } catch {
    return `errno ${err}`;
  }
}
