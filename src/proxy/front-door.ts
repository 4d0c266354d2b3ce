/**
 * Where the proxy's clients come in: the native front door (relay threads accept, read, connect and
 * copy; native-session.ts is their transport) where it is built and both legs are plain TCP to
 * numeric addresses, else Node's listeners and sockets (node-session.ts). Either way: the client limit
 * (--max-client-conn, client-limit.ts) at accept, and one session core (session-core.ts) per client
 * that got as far as a first packet.
 */
import { isIP, createServer, type Server, type Socket } from 'node:net';
import { PlbError } from '../core/errors.js';
import type { ServiceClass } from '../core/service-class.js';
import type { ClientLimiter } from './admission/client-limit.js';
import { refuseOverLimit } from './admission/client-limit.js';
import type { NativeRelay } from './native/native-relay.js';
import { NativeSession } from './native/native-session.js';
import { ProxySession } from './node/node-session.js';
import type { ClientSession, SessionHost } from './session/session-host.js';
import { errorResponse } from './protocol/wire.js';

export interface FrontDoor {
  /** Who serves the clients: "native, N thread(s)" or "js". */
  readonly relay: string;
  /** Listens for clients of cls; the port bound. A port that cannot be bound is a one-line PlbError. */
  listen(cls: ServiceClass, host: string, port: number): Promise<number>;
  /** Clients open in any phase. */
  clients(): number;
  /** Clients refused over the limit so far. */
  overLimit(): number;
  /** Accepts no more (clients not yet past their first packet are told 57P01 and closed). */
  stop(): Promise<void>;
}

export interface FrontDoorDeps {
  host: SessionHost;
  limiter: ClientLimiter;
  /** A session begins (it reports its own end with `ended`). */
  added: (s: ClientSession) => void;
  ended: (s: ClientSession) => void;
  /** The number of sessions the proxy holds (Node's listeners count their clients by it). */
  sessions: () => number;
  /** A client arrived (the peak of clients). */
  noteClients: (n: number) => void;
}

/** Why the native front door cannot serve these listeners (undefined: it can). */
export function nativeFrontBlocked(o: {
  tls: boolean;
  serverTls: string;
  listenHost: string;
  replicaHosts: readonly string[];
  /** The replica view marks the class in the startup packet (Node's sockets rewrite it). */
  marks?: boolean;
}): string | undefined {
  if (o.tls) return 'clients may ask for TLS (--tls-cert)';
  if (o.marks) return '--router-view replica marks the class in application_name';
  if (o.serverTls !== 'disable') return `--server-tls ${o.serverTls}`;
  const named = [o.listenHost, ...o.replicaHosts].find((h) => isIP(h) === 0);
  return named === undefined ? undefined : `${named} is not a numeric address`;
}

const STOPPING = errorResponse('FATAL', '57P01', 'plb proxy is shutting down');

/** The native front door where there is a relay for it (proxy-server.ts decides), else Node's. */
export function openFrontDoor(relay: NativeRelay | undefined, d: FrontDoorDeps): FrontDoor {
  return relay ? nativeFrontDoor(relay, d) : nodeFrontDoor(d);
}

function nativeFrontDoor(relay: NativeRelay, d: FrontDoorDeps): FrontDoor {
  const front = relay.openFront(
    { max: d.limiter.max, refusal: d.limiter.refusal, startupTimeoutMs: d.host.startupTimeoutMs },
    (pair, cls, packet, clientHost) => {
      const s = new NativeSession(pair, cls, d.host, d.ended, packet, clientHost);
      d.added(s.core);
      return s;
    },
  );
  return {
    relay: `native, ${relay.threads} thread(s)`,
    listen: (cls, host, port) => {
      try {
        return Promise.resolve(front.listen(cls, host, port, d.limiter.backlog));
      } catch (err) {
        return Promise.reject(listenError(cls, host, port, err));
      }
    },
    clients: () => front.counts().open,
    overLimit: () => front.counts().overLimit,
    stop: () => {
      front.stop(STOPPING);
      return Promise.resolve();
    },
  };
}

function nodeFrontDoor(d: FrontDoorDeps): FrontDoor {
  const servers: Server[] = [];
  let overLimit = 0;
  return {
    relay: 'js',
    listen: async (cls, host, port) => {
      const server = createServer({ noDelay: true }, (socket: Socket) => {
        // Over the limit: a prepared 53300 at its first packet (after 'N' or TLS), never a session.
        if (!d.limiter.admits(cls, d.sessions())) {
          overLimit += 1;
          return refuseOverLimit(socket, d.limiter.refusal, d.host.tls);
        }
        const s = new ProxySession(socket, cls, d.host, d.ended);
        d.noteClients(d.sessions() + 1);
        d.added(s.core);
      });
      servers.push(server);
      return listen(server, host, port, cls, d.limiter.backlog);
    },
    clients: d.sessions,
    overLimit: () => overLimit,
    stop: async () => {
      await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    },
  };
}

function listenError(cls: ServiceClass, host: string, port: number, err: unknown): PlbError {
  const e = err as NodeJS.ErrnoException;
  return new PlbError(
    'BAD_INPUT',
    `--${cls}-port ${port}: cannot listen on ${host}:${port} (${e.code ?? e.message})`,
    { cause: err },
  );
}

function listen(
  server: Server,
  host: string,
  port: number,
  cls: ServiceClass,
  backlog: number,
): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(listenError(cls, host, port, err)));
    server.listen({ host, port, backlog }, () => {
      server.removeAllListeners('error');
      // A listener error later (rare: the interface went away) is logged by the caller's process, not fatal.
      server.on('error', () => undefined);
      const addr = server.address();
      resolve(typeof addr === 'object' && addr !== null ? addr.port : port);
    });
  });
}
