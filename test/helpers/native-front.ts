// The native front door (native/*.c) on loopback with a fake server: a front door listening on a
// free port, a recording listener per client (what the relay told it), and a relayed session (a
// client's startup answered by the fake server, ReadyForQuery passed, the session copied).
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import {
  NativeRelay,
  type FrontListener,
  type FrontOptions,
  type FrontPair,
  type NativeFront,
  type RelayEnd,
  type RelayFault,
} from '../../src/proxy/native/native-relay.js';
import type { ServiceClass } from '../../src/core/service-class.js';
import { errorResponse } from '../../src/proxy/protocol/wire.js';
import { startupPacket } from './startup-packet.js';

const loaded = NativeRelay.load(2);
export const relay = typeof loaded === 'string' ? undefined : loaded;
export const relayMissing = typeof loaded === 'string' ? loaded : undefined;

export const msg = (type: string, body: Buffer | string): Buffer => {
  const b = typeof body === 'string' ? Buffer.from(body) : body;
  const out = Buffer.alloc(5 + b.length);
  out.write(type, 0, 'latin1');
  out.writeInt32BE(4 + b.length, 1);
  b.copy(out, 5);
  return out;
};
export const READY = msg('Z', 'I');
export const TERMINATE = msg('X', '');
export const AUTH_OK = msg('R', Buffer.alloc(4));
/** The fake server's own cancel key, and the proxy's the tests give the relay. */
export const BACKEND_KEY = { pid: 4242, secret: Buffer.from([0xde, 0xad, 0xbe, 0xef]) };
export const PROXY_KEY = { pid: 777, secret: Buffer.from([1, 2, 3, 4]) };

const keyMessage = (k: { pid: number; secret: Buffer }): Buffer => {
  const body = Buffer.alloc(8);
  body.writeInt32BE(k.pid, 0);
  k.secret.copy(body, 4);
  return msg('K', body);
};
export const BACKEND_KEY_MSG = keyMessage(BACKEND_KEY);
export const PROXY_KEY_MSG = keyMessage(PROXY_KEY);

export { startupPacket };

export const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

export const until = async (what: () => boolean, ms = 5000): Promise<void> => {
  const t0 = Date.now();
  while (!what()) {
    if (Date.now() - t0 > ms) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
};

/** What the relay told one client (buffers copied: the relay's are views of its mailbox). */
export class Told {
  readonly answers: Buffer[] = [];
  readonly fails: { code: string; connected: boolean }[] = [];
  readonly readies: (Buffer | undefined)[] = [];
  readonly ends: RelayEnd[] = [];
  readonly params: Buffer[] = [];
  readonly faults: RelayFault[] = [];
  isClosed = false;
  answeredAtClose: boolean | undefined;
  /** Resolves when the relay reports the close. */
  readonly done: Promise<void>;
  private closedNow: () => void = () => undefined;
  private readonly waiters: ((e: RelayEnd) => void)[] = [];
  private seen = 0;

  constructor(
    readonly pair: FrontPair,
    readonly cls: ServiceClass,
    readonly packet: Buffer | undefined,
    /** The client's host as the relay told it. */
    readonly clientHost = '',
  ) {
    this.done = new Promise((r) => (this.closedNow = r));
  }

  answer(b: Buffer): void {
    this.answers.push(Buffer.from(b));
  }
  dialFailed(code: string, connected: boolean): void {
    this.fails.push({ code, connected });
  }
  ready(key: Buffer | undefined): void {
    this.readies.push(key && Buffer.from(key));
  }
  ended(e: RelayEnd): void {
    const copy = { ...e, lastError: e.lastError && Buffer.from(e.lastError) };
    this.ends.push(copy);
    this.waiters.shift()?.(copy);
  }
  parameter(m: Buffer): void {
    this.params.push(Buffer.from(m));
  }
  failed(f: RelayFault): void {
    this.faults.push(f);
  }
  closed(answered: boolean): void {
    this.answeredAtClose = answered;
    this.isClosed = true;
    this.closedNow();
  }

  nextEnd(): Promise<RelayEnd> {
    return this.seen < this.ends.length
      ? Promise.resolve(this.ends[this.seen++]!)
      : new Promise((r) => this.waiters.push((e) => (this.seen++, r(e))));
  }
}

export interface Rig {
  front: NativeFront;
  port: number;
  told: Told[];
  /** The next client the relay hands over (its first packet, or its startup timeout). */
  arrival(): Promise<Told>;
}

/** A front door on a free port; `onArrival` plays the proxy's part (dial, refuse, ...). */
export function openFront(
  o: Partial<FrontOptions> = {},
  onArrival: (t: Told) => void = () => undefined,
): Rig {
  const told: Told[] = [];
  const waiters: ((t: Told) => void)[] = [];
  let taken = 0;
  const front = relay!.openFront(
    {
      max: { premium: 1000, freemium: 1000 },
      refusal: errorResponse('FATAL', '53300', 'sorry, too many clients already'),
      startupTimeoutMs: 10_000,
      ...o,
    },
    (pair, cls, packet, clientHost) => {
      const t = new Told(pair, cls, packet && Buffer.from(packet), clientHost);
      told.push(t);
      waiters.shift()?.(t);
      onArrival(t);
      return t satisfies FrontListener;
    },
  );
  const port = front.listen('premium', '127.0.0.1', 0, 511);
  return {
    front,
    port,
    told,
    arrival: () =>
      taken < told.length
        ? Promise.resolve(told[taken++]!)
        : new Promise((r) => waiters.push((t) => (taken++, r(t)))),
  };
}

/** A fake server: `onStartup` gets each connection once its startup packet is in. */
export async function fakeServer(
  onStartup: (s: Socket, packet: Buffer) => void,
): Promise<{ server: Server; port: number }> {
  const server = createServer((s) => {
    let buf = Buffer.alloc(0);
    let started = false;
    s.on('error', () => undefined);
    s.on('data', (d: Buffer) => {
      if (started) return;
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 4 && buf.length >= buf.readInt32BE(0)) {
        started = true;
        onStartup(s, buf.subarray(0, buf.readInt32BE(0)));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

/** A client of the front door (its received bytes collected). */
export async function client(
  port: number,
  localAddress?: string,
): Promise<{ socket: Socket; got: () => Buffer }> {
  const socket = connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) });
  socket.on('error', () => undefined);
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  await new Promise<void>((r, j) => {
    socket.once('connect', () => r());
    socket.once('error', j);
  });
  return { socket, got: () => Buffer.concat(chunks) };
}

/** An established session through the front door: its client, the server's end of it, what was told. */
export interface Relayed {
  client: Socket;
  backend: Socket;
  /** What the client received after the startup answer. */
  got: () => Buffer;
  told: Told;
}

const opened: Socket[] = [];
const servers: Server[] = [];

/** Closes every socket and server the helpers made. */
export function closeAll(): void {
  for (const s of opened.splice(0)) s.destroy();
  for (const s of servers.splice(0)) s.close();
}

/** A rig whose clients are dialled at once to a fake server that answers their startup. */
export async function relayRig(watch = false): Promise<Rig & { relayed(): Promise<Relayed> }> {
  const backends: Socket[] = [];
  const backendWaiters: ((s: Socket) => void)[] = [];
  const { server, port: serverPort } = await fakeServer((s) => {
    opened.push(s);
    s.write(Buffer.concat([AUTH_OK, BACKEND_KEY_MSG, READY]));
    const waiter = backendWaiters.shift();
    if (waiter) waiter(s);
    else backends.push(s);
  });
  servers.push(server);
  const rig = openFront({}, (t) => t.pair.dial('127.0.0.1', serverPort, 5000, PROXY_KEY, watch));
  const startAnswer = Buffer.concat([AUTH_OK, PROXY_KEY_MSG, READY]);
  return {
    ...rig,
    async relayed() {
      const c = await client(rig.port);
      opened.push(c.socket);
      const backend = new Promise<Socket>((r) =>
        backends.length > 0 ? r(backends.shift()!) : backendWaiters.push(r),
      );
      c.socket.write(startupPacket());
      const told = await rig.arrival();
      const b = await backend;
      await until(() => c.got().length >= startAnswer.length && told.readies.length === 1);
      return { client: c.socket, backend: b, got: () => c.got().subarray(startAnswer.length), told };
    },
  };
}
