/**
 * The proxy's failure paths against fake backends on loopback (no PostgreSQL needed), where a
 * real server cannot be made to misbehave on cue: a reset connection and a dying server's FATAL
 * before the first byte reached the client (retried on another replica), a silent server (08006
 * after the connect timeout, no hang), a server gone mid-session (FATAL 08006 at a message
 * boundary) or cut inside a message (the client's connection is closed, no hang), and the cancel
 * key mapping; a replica connection opened early, at the client's SSLRequest (used, dropped
 * unused, failed, bounded). Ephemeral ports; rr routing so the order of replicas is known.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Connector } from '../../src/cluster/connector.js';
import type { Endpoint } from '../../src/core/endpoint.js';
import type { ProxyHandle, ProxyOptions } from '../../src/proxy/proxy-server.js';
import { EARLY_HOLD_MS, EARLY_MAX } from '../../src/proxy/early-connect.js';
import { sleep, startTestProxy } from '../helpers/proxy-setup.js';
import { readStartupPacket } from '../../src/proxy/startup-packet.js';
import { backendKeyData, errorResponse } from '../../src/proxy/wire.js';

type Behaviour = 'reset' | 'dying' | 'silent' | 'good';

interface Fake {
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
}

const SECRET = 0x1234abcd;
const BACKEND_PID = 4242;
const msg = (type: string, body: Buffer): Buffer => {
  const b = Buffer.alloc(5 + body.length);
  b.write(type, 0, 'latin1');
  b.writeInt32BE(4 + body.length, 1);
  body.copy(b, 5);
  return b;
};
const authOk = msg('R', Buffer.from([0, 0, 0, 0]));
const readyIdle = msg('Z', Buffer.from('I'));

async function fake(behaviour: Behaviour): Promise<Fake> {
  const f: Fake = {
    server: createServer(),
    port: 0,
    sockets: new Set(),
    accepted: 0,
    received: 0,
    cancels: [],
    onQuery: 'answer',
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
        if (behaviour === 'silent') return;
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
  await new Promise<void>((r) => f.server.listen({ host: '127.0.0.1', port: 0 }, r));
  const addr = f.server.address();
  f.port = typeof addr === 'object' && addr ? addr.port : 0;
  return f;
}

/** Health checks that always pass: the failures under test come from sessions only. */
const alwaysUp: Connector = { open: async () => ({ query: async () => 1, end: async () => undefined }) };

describe('plb proxy failure paths (fake backends)', () => {
  let proxy: ProxyHandle | undefined;
  const fakes: Fake[] = [];
  const clients: pg.Client[] = [];
  const logs: string[] = [];

  afterEach(async () => {
    for (const c of clients.splice(0)) await c.end().catch(() => undefined);
    await proxy?.stop(100);
    proxy = undefined;
    for (const f of fakes.splice(0)) {
      for (const s of f.sockets) s.destroy();
      await new Promise<void>((r) => f.server.close(() => r()));
    }
  });

  async function setup(
    behaviours: Behaviour[],
    connectTimeoutMs = 2000,
    over: Partial<ProxyOptions> = {},
  ): Promise<Fake[]> {
    const fs = await Promise.all(behaviours.map(fake));
    fakes.push(...fs);
    const replicas: Endpoint[] = fs.map((f, i) => ({
      id: `r${i + 1}`,
      kind: 'replica',
      host: '127.0.0.1',
      port: f.port,
    }));
    proxy = await startTestProxy({
      replicas,
      connector: alwaysUp,
      ports: { premium: 0, freemium: 0 },
      strategy: 'rr',
      health: { intervalMs: 60_000, timeoutMs: 60_000, fall: 5, rise: 1, hangMs: 60_000 },
      connectTimeoutMs,
      log: (l) => logs.push(l),
      ...over,
    });
    return fs;
  }

  /** A raw client that has sent an SSLRequest and read the proxy's 'N'. */
  async function sslRequested(): Promise<Socket> {
    const s = createConnection({ host: '127.0.0.1', port: proxy!.ports.premium! });
    s.on('error', () => undefined);
    await new Promise<void>((r) => s.once('connect', () => r()));
    s.write(serialize.requestSsl());
    expect((await new Promise<Buffer>((r) => s.once('data', r))).toString()).toBe('N');
    return s;
  }

  /** Its startup packet sent: what the proxy relays until ReadyForQuery. */
  async function startup(s: Socket): Promise<Buffer> {
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

  const sessions = (): number[] => proxy!.router.snapshot().map((r) => r.sessions.premium);

  async function connect(): Promise<pg.Client> {
    const c = new pg.Client({
      host: '127.0.0.1',
      port: proxy!.ports.premium!,
      user: 'u',
      database: 'd',
      connectionTimeoutMillis: 10_000,
    });
    c.on('error', () => undefined);
    clients.push(c);
    await c.connect();
    return c;
  }

  it('a reset connection and a dying server before the first byte: the session goes on to another replica', async () => {
    await setup(['reset', 'dying', 'good']);
    const c = await connect();
    expect((await c.query('select 1')).rows).toEqual([{ x: 1 }]);
    const stats = proxy!.stats;
    expect(stats.classes.premium).toMatchObject({ opened: 1, ready: 1, startupFailed: 0 });
    expect(stats.replica('r3').opened).toBe(1);
    expect(stats.replica('r1').opened + stats.replica('r2').opened).toBe(0);
    // The failed attempts released their slots: only the live session counts.
    expect(proxy!.router.snapshot().map((r) => r.sessions.premium)).toEqual([0, 0, 1]);
  });

  it('every attempt fails: FATAL 08006 naming the last cause', async () => {
    await setup(['reset', 'reset', 'reset']);
    await expect(connect()).rejects.toMatchObject({
      code: '08006',
      message: /could not connect to a replica for class premium/,
    });
    expect(proxy!.stats.classes.premium.startupFailed).toBe(1);
    expect(proxy!.router.snapshot().every((r) => r.sessions.premium === 0)).toBe(true);
  });

  it('a silent server: FATAL 08006 after the connect timeout, not a hang', async () => {
    await setup(['silent'], 300);
    const t0 = Date.now();
    await expect(connect()).rejects.toMatchObject({
      code: '08006',
      message: /no answer to the startup packet within 300 ms/,
    });
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('a server gone between messages: FATAL 08006 "replica r1 went away"', async () => {
    const [f] = await setup(['good']);
    const c = await connect();
    f!.onQuery = 'close';
    await expect(c.query('select 1')).rejects.toMatchObject({
      code: '08006',
      message: /replica r1 went away/,
    });
    expect(proxy!.stats.replica('r1').lost).toBe(1);
    expect(proxy!.router.snapshot()[0]!.sessions.premium).toBe(0);
  });

  it('a server gone inside a message: the client connection is closed, not left hanging', async () => {
    const [f] = await setup(['good']);
    const c = await connect();
    f!.onQuery = 'cut';
    const t0 = Date.now();
    await expect(c.query('select 1')).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(proxy!.stats.replica('r1').lost).toBe(1);
  });

  it("the client sees the proxy's cancel key; a cancel reaches the backend with the backend's key", async () => {
    const [f] = await setup(['good']);
    const c = await connect();
    const { processID, secretKey } = c as unknown as { processID: number; secretKey: number };
    expect(processID === BACKEND_PID && secretKey === SECRET).toBe(false);
    const s = createConnection({ host: '127.0.0.1', port: proxy!.ports.freemium! });
    s.on('error', () => undefined);
    await new Promise<void>((r) =>
      s.on('connect', () => s.end(serialize.cancel(processID, secretKey))).on('close', () => r()),
    );
    expect(f!.cancels).toEqual([[BACKEND_PID, SECRET]]);
    expect(proxy!.stats.cancels).toBe(1);
  });

  it('an SSLRequest opens the replica connection before the startup packet; the session uses it', async () => {
    const [f] = await setup(['good']);
    const s = await sslRequested();
    // Connected, nothing sent: the server has not seen a byte of the session yet.
    await vi.waitFor(() => expect(f!.accepted).toBe(1));
    expect(f!.received).toBe(0);
    expect(sessions()).toEqual([1]);
    expect((await startup(s)).includes(authOk)).toBe(true);
    expect(f!.accepted).toBe(1);
    expect(proxy!.stats).toMatchObject({ earlyConnects: 1, earlyUnused: 0 });
    s.destroy();
    await vi.waitFor(() => expect(sessions()).toEqual([0]));
  });

  it('a client gone after its SSLRequest: the early connection closed unused, its slot given back', async () => {
    const [f] = await setup(['good']);
    const s = await sslRequested();
    await vi.waitFor(() => expect(f!.accepted).toBe(1));
    s.destroy();
    await vi.waitFor(() => expect(f!.sockets.size).toBe(0));
    expect(f!.received).toBe(0);
    expect(sessions()).toEqual([0]);
    expect(proxy!.stats).toMatchObject({ earlyConnects: 1, earlyUnused: 1 });
  });

  it('an early connection reset before the startup packet: reported, the session goes on to the next replica', async () => {
    const [, good] = await setup(['reset', 'good']);
    const s = await sslRequested();
    await sleep(50); // the reset arrives before the startup packet
    expect((await startup(s)).includes(authOk)).toBe(true);
    expect(good!.accepted).toBe(1);
    expect(proxy!.stats.replica('r2').opened).toBe(1);
    expect(sessions()).toEqual([0, 1]);
    s.destroy();
  });

  it(`no startup packet within ${EARLY_HOLD_MS} ms: the early connection dropped, the session connects as usual later`, async () => {
    const [f] = await setup(['good']);
    const s = await sslRequested();
    await vi.waitFor(() => expect(f!.accepted).toBe(1));
    await vi.waitFor(() => expect(f!.sockets.size).toBe(0), { timeout: EARLY_HOLD_MS + 1000 });
    expect(sessions()).toEqual([0]);
    expect((await startup(s)).includes(authOk)).toBe(true);
    expect(f!.accepted).toBe(2);
    expect(proxy!.stats).toMatchObject({ earlyConnects: 1, earlyUnused: 1 });
    s.destroy();
  });

  it(`at most ${EARLY_MAX} early connections at once; all given back when their clients leave`, async () => {
    const [f] = await setup(['good']);
    const held = await Promise.all(Array.from({ length: EARLY_MAX + 8 }, () => sslRequested()));
    await vi.waitFor(() => expect(f!.accepted).toBe(EARLY_MAX));
    await sleep(100);
    expect(f!.accepted).toBe(EARLY_MAX);
    // The rest connect after their startup packet, as without early connects.
    expect((await startup(held.at(-1)!)).includes(authOk)).toBe(true);
    for (const s of held) s.destroy();
    await vi.waitFor(() => expect(f!.sockets.size).toBe(0));
    expect(sessions()).toEqual([0]);
  });

  it('SSLRequests followed by anything (garbage, a cancel, half a packet, a reset, a session): no slot leaks', async () => {
    const [f] = await setup(['good', 'good']);
    const actions: ((s: Socket) => void)[] = [
      (s) => s.end(Buffer.from('garbage, not a startup packet')),
      (s) => s.end(serialize.cancel(1, 2)),
      (s) => s.end(serialize.startup({ user: 'u', database: 'd' }).subarray(0, 7)),
      (s) => s.resetAndDestroy(),
      (s) => s.end(),
      (s) => void startup(s).then(() => s.end()),
    ];
    const clients = await Promise.all(Array.from({ length: 120 }, () => sslRequested()));
    clients.forEach((s, i) => actions[i % actions.length]!(s));
    await vi.waitFor(() => expect(sessions()).toEqual([0, 0]), { timeout: 5000 });
    await vi.waitFor(() => expect(f!.sockets.size + fakes[1]!.sockets.size).toBe(0), { timeout: 5000 });
    expect(proxy!.stats.classes.premium.ready).toBe(20);
    expect(proxy!.stats.earlyConnects).toBeGreaterThan(0);
    // And it keeps serving.
    expect((await startup(await sslRequested())).includes(authOk)).toBe(true);
  });

  it('--class-from option (the packet may name another class) and --early-connect off: no early connection', async () => {
    for (const over of [{ classFrom: 'option' as const }, { earlyConnect: false }]) {
      const [f] = await setup(['good'], 2000, over);
      const s = await sslRequested();
      await sleep(100);
      expect(f!.accepted).toBe(0);
      expect((await startup(s)).includes(authOk)).toBe(true);
      s.destroy();
      await proxy!.stop(100);
    }
  });
});
