// Fake replicas on loopback for the proxy's failure paths (test/integration/proxy-faults.test.ts,
// proxy-early.test.ts): servers that reset, die, stay silent or answer, on cue; and a proxy in
// front of them with raw and node-postgres clients.
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { expect } from 'vitest';
import type { Connector } from '../../src/cluster/connector.js';
import type { Endpoint } from '../../src/core/endpoint.js';
import type { ProxyHandle, ProxyOptions } from '../../src/proxy/proxy-server.js';
import { readStartupPacket } from '../../src/proxy/protocol/startup-packet.js';
import { backendKeyData, errorResponse } from '../../src/proxy/protocol/wire.js';
import { startTestProxy } from './proxy-setup.js';

/** auth: asks for a SCRAM exchange and says nothing more (a client in authentication). */
export type Behaviour = 'reset' | 'dying' | 'silent' | 'auth' | 'good';

export interface Fake {
  server: Server;
  port: number;
  sockets: Set<Socket>;
  /** Connections accepted, and bytes received on them, since the start. */
  accepted: number;
  received: number;
  /** CancelRequests received: [pid, secret]. */
  cancels: [number, number][];
  /** What the session does on its first Query: answer, close at a boundary, or cut a message. */
  onQuery: 'answer' | 'close' | 'cut';
  /** The startup parameters of every session, in order. */
  startups: Record<string, string>[];
}

export const SECRET = 0x1234abcd;
export const BACKEND_PID = 4242;
const msg = (type: string, body: Buffer): Buffer => {
  const b = Buffer.alloc(5 + body.length);
  b.write(type, 0, 'latin1');
  b.writeInt32BE(4 + body.length, 1);
  body.copy(b, 5);
  return b;
};
export const authOk = msg('R', Buffer.from([0, 0, 0, 0]));
const authSasl = msg('R', Buffer.concat([Buffer.from([0, 0, 0, 10]), Buffer.from('SCRAM-SHA-256\0\0')]));
export const readyIdle = msg('Z', Buffer.from('I'));

/** A fake server; `port` 0: any free one. */
export async function fake(behaviour: Behaviour, port = 0): Promise<Fake> {
  const f: Fake = {
    server: createServer(),
    port: 0,
    sockets: new Set(),
    accepted: 0,
    received: 0,
    cancels: [],
    onQuery: 'answer',
    startups: [],
  };
  f.server.on('connection', (s) => {
    f.sockets.add(s);
    f.accepted += 1;
    s.on('close', () => f.sockets.delete(s));
    s.on('error', () => undefined);
    if (behaviour === 'reset') return void s.resetAndDestroy();
    let buf = Buffer.alloc(0);
    let started = false;
    s.on('data', (d: Buffer) => {
      f.received += d.length;
      buf = Buffer.concat([buf, d]);
      if (!started) {
        const p = readStartupPacket(buf);
        if (p.kind === 'incomplete') return;
        buf = buf.subarray('length' in p ? p.length : buf.length);
        if (p.kind === 'cancel') {
          f.cancels.push([p.pid, p.secret.readInt32BE(0)]);
          return void s.end();
        }
        started = true;
        if (p.kind === 'startup') f.startups.push(p.params);
        if (behaviour === 'silent') return;
        if (behaviour === 'auth') return void s.write(authSasl);
        if (behaviour === 'dying')
          return void s.end(
            errorResponse('FATAL', '57P01', 'terminating connection due to administrator command'),
          );
        const secret = Buffer.alloc(4);
        secret.writeInt32BE(SECRET, 0);
        s.write(Buffer.concat([authOk, backendKeyData(BACKEND_PID, secret), readyIdle]));
        return;
      }
      // A simple Query ('Q'): one row, or a failure on cue.
      if (buf[0] === 0x51 && buf.length >= 5 && buf.length >= 1 + buf.readInt32BE(1)) {
        buf = buf.subarray(1 + buf.readInt32BE(1));
        const rowDesc = msg(
          'T',
          Buffer.from([
            0,
            1,
            ...Buffer.from('x\0'),
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            23,
            0,
            4,
            255,
            255,
            255,
            255,
            0,
            0,
          ]),
        );
        const row = msg('D', Buffer.from([0, 1, 0, 0, 0, 1, 0x31]));
        if (f.onQuery === 'close') return void s.destroy();
        if (f.onQuery === 'cut') {
          s.write(Buffer.concat([rowDesc, row.subarray(0, 4)]));
          return void setTimeout(() => s.destroy(), 50);
        }
        s.write(Buffer.concat([rowDesc, row, msg('C', Buffer.from('SELECT 1\0')), readyIdle]));
      }
    });
  });
  await new Promise<void>((r) => f.server.listen({ host: '127.0.0.1', port }, r));
  const addr = f.server.address();
  f.port = typeof addr === 'object' && addr ? addr.port : 0;
  return f;
}

/** Health checks that always pass: the failures under test come from sessions only. */
export const alwaysUp: Connector = {
  open: async () => ({ query: async () => 1, end: async () => undefined }),
};

/** A proxy (rr, so the order of replicas is known) over fake replicas, and its clients. */
export class FakeRig {
  proxy: ProxyHandle | undefined;
  readonly fakes: Fake[] = [];
  readonly clients: pg.Client[] = [];
  readonly logs: string[] = [];

  constructor(private readonly base: Partial<ProxyOptions> = {}) {}

  async stop(): Promise<void> {
    for (const c of this.clients.splice(0)) await c.end().catch(() => undefined);
    await this.proxy?.stop(100);
    this.proxy = undefined;
    for (const f of this.fakes.splice(0)) {
      for (const s of f.sockets) s.destroy();
      await new Promise<void>((r) => f.server.close(() => r()));
    }
  }

  async setup(
    behaviours: Behaviour[],
    connectTimeoutMs = 2000,
    over: Partial<ProxyOptions> = {},
  ): Promise<Fake[]> {
    const fs = await Promise.all(behaviours.map((b) => fake(b)));
    this.fakes.push(...fs);
    const replicas: Endpoint[] = fs.map((f, i) => ({
      id: `r${i + 1}`,
      kind: 'replica',
      host: '127.0.0.1',
      port: f.port,
    }));
    this.proxy = await startTestProxy({
      replicas,
      connector: alwaysUp,
      ports: { premium: 0, freemium: 0 },
      strategy: 'rr',
      health: { intervalMs: 60_000, timeoutMs: 60_000, fall: 5, rise: 1, hangMs: 60_000 },
      connectTimeoutMs,
      log: (l) => this.logs.push(l),
      ...this.base,
      ...over,
    });
    return fs;
  }

  /** A raw client that has sent an SSLRequest and read the proxy's 'N'. */
  async sslRequested(): Promise<Socket> {
    const s = createConnection({ host: '127.0.0.1', port: this.proxy!.ports.premium! });
    s.on('error', () => undefined);
    await new Promise<void>((r) => s.once('connect', () => r()));
    s.write(serialize.requestSsl());
    expect((await new Promise<Buffer>((r) => s.once('data', r))).toString()).toBe('N');
    return s;
  }

  /** Its startup packet sent: what the proxy relays until ReadyForQuery. */
  async startup(s: Socket): Promise<Buffer> {
    s.write(serialize.startup({ user: 'u', database: 'd' }));
    let got = Buffer.alloc(0);
    await new Promise<void>((r) =>
      s.on('data', (d: Buffer) => {
        got = Buffer.concat([got, d]);
        if (got.includes(readyIdle)) r();
      }),
    );
    return got;
  }

  /** Premium sessions per replica now. */
  sessions(): number[] {
    return this.proxy!.router.snapshot().map((r) => r.sessions.premium);
  }

  async connect(): Promise<pg.Client> {
    const c = new pg.Client({
      host: '127.0.0.1',
      port: this.proxy!.ports.premium!,
      user: 'u',
      database: 'd',
      connectionTimeoutMillis: 10_000,
    });
    c.on('error', () => undefined);
    this.clients.push(c);
    await c.connect();
    return c;
  }
}
