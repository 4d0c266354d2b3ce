/**
 * The per-connection steps of a proxied session taken apart: the gate admitting at once without a
 * promise, the connect and the server's first answer as one step, and the socket helpers.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/clock/virtual.js';
import { isPlbError } from '../../src/core/errors.js';
import type { AdmittingRouter } from '../../src/router/admission/admission.js';
import { createRouter } from '../../src/router/index.js';
import { AdmissionGate } from '../../src/proxy/admission/admission-gate.js';
import { dialTcp, firstAnswer, type FirstAnswer } from '../../src/proxy/node/backend-connect.js';
import { endOnce, writeAll } from '../../src/proxy/node/socket-io.js';
import { errorResponse } from '../../src/proxy/protocol/wire.js';

const NO_KEEPALIVE = { log: () => undefined };

describe('AdmissionGate.acquire', () => {
  function gate(limit: number, queue: number) {
    const router = createRouter({
      strategy: 'plb-admit',
      replicas: ['r1'],
      slowStartMs: 0,
      admission: { limits: { mode: 'fixed', limit }, queue: { capacity: queue, timeoutMs: 1000 } },
    }) as unknown as AdmittingRouter<object>;
    return new AdmissionGate(router, router, new VirtualClock());
  }

  it('a free slot: the replica itself, no promise; a queued session: a promise; queue full: a throw', async () => {
    const g = gate(1, 1);
    expect(g.acquire('premium', {})).toBe('r1');
    const waiting = g.acquire('premium', {});
    expect(waiting).toBeInstanceOf(Promise);
    let thrown: unknown;
    try {
      g.acquire('premium', {});
    } catch (err) {
      thrown = err;
    }
    expect(isPlbError(thrown, 'ADMISSION_FULL')).toBe(true);
    expect(g.counters.premium.queueFull).toBe(1);
    g.release('r1', 'premium');
    await expect(waiting).resolves.toBe('r1');
    g.close();
  });

  it('without a limit: the router asked directly, NO_REPLICA thrown at once', () => {
    const router = createRouter({ strategy: 'rr', replicas: ['r1'] });
    const g = new AdmissionGate(router, undefined, new VirtualClock());
    expect(g.acquire('freemium', {})).toBe('r1');
    router.markDown('r1', 0);
    expect(() => g.acquire('freemium', {})).toThrow();
  });
});

describe('firstAnswer on a socket still connecting (dialTcp)', () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  /** A server that calls onClient for each connection; its port. */
  async function listen(onClient: (s: Socket) => void): Promise<number> {
    const srv = createServer(onClient);
    server = srv;
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    return (srv.address() as AddressInfo).port;
  }

  /** Dials port, sends packet once connected, waits for the answer (reads into a buffer of its own). */
  function dial(port: number, packet: Buffer, ms: number): { socket: Socket; answer: Promise<FirstAnswer> } {
    let sink: (chunk: Buffer) => boolean = () => false;
    const buf = Buffer.alloc(1024);
    const socket = dialTcp(
      '127.0.0.1',
      port,
      {
        buffer: () => buf,
        callback: (n, b) => sink((b as Buffer).subarray(0, n)),
      },
      NO_KEEPALIVE,
    );
    const answer = firstAnswer(socket, packet, ms, (s) => (sink = s), { host: '127.0.0.1', port });
    return { socket, answer };
  }

  it('sends the packet once connected and returns a copy of the first read', async () => {
    const port = await listen((s) =>
      s.once('data', (d: Buffer) => s.write(Buffer.concat([Buffer.from('R'), d]))),
    );
    const { socket, answer } = dial(port, Buffer.from('hello'), 2000);
    const a = await answer;
    socket.destroy();
    expect(a.ok && a.chunk.toString()).toBe('Rhello');
  });

  it('refused: not ok, tried again elsewhere (retry), with the connect error', async () => {
    const port = await listen(() => undefined);
    await new Promise<void>((r) => (server as Server).close(() => r()));
    const { socket, answer } = dial(port, Buffer.from('x'), 2000);
    const a = await answer;
    socket.destroy();
    expect(a.ok).toBe(false);
    if (!a.ok) {
      expect(a.retry).toBe(true);
      expect((a.err as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    }
  });

  it('connected but no answer: the answer timeout (not retried: a slow server, not a dead one)', async () => {
    const held: Socket[] = [];
    const port = await listen((s) => held.push(s));
    const { socket, answer } = dial(port, Buffer.from('x'), 150);
    const a = await answer;
    socket.destroy();
    for (const s of held) s.destroy();
    expect(a.ok).toBe(false);
    if (!a.ok) {
      expect(a.retry).toBe(false);
      expect(String(a.err)).toMatch(/no answer to the startup packet within 150 ms/);
    }
  });

  it('the client left while the connect was under way: nothing sent, not ok, no error', async () => {
    let got = 0;
    const port = await listen((s) => s.on('data', (d: Buffer) => (got += d.length)));
    let sink: (chunk: Buffer) => boolean = () => false;
    const buf = Buffer.alloc(64);
    const socket = dialTcp(
      '127.0.0.1',
      port,
      {
        buffer: () => buf,
        callback: (n, b) => sink((b as Buffer).subarray(0, n)),
      },
      NO_KEEPALIVE,
    );
    const a = await firstAnswer(socket, Buffer.from('startup'), 2000, (s) => (sink = s), {
      host: '127.0.0.1',
      port,
      abandoned: () => true,
    });
    await new Promise((r) => setTimeout(r, 50));
    socket.destroy();
    expect(a).toEqual({ ok: false, err: undefined });
    expect(got).toBe(0);
  });

  it("a dying server's FATAL as the first answer: tried again elsewhere", async () => {
    const port = await listen((s) =>
      s.once('data', () =>
        s.end(errorResponse('FATAL', '57P01', 'terminating connection due to administrator command')),
      ),
    );
    const { socket, answer } = dial(port, Buffer.from('x'), 2000);
    const a = await answer;
    socket.destroy();
    expect(a.ok).toBe(false);
    if (!a.ok) expect(a.retry).toBe(true);
  });
});

describe('writeAll and endOnce', () => {
  /** A socket stand-in that records what it was asked to do. */
  function fake() {
    const calls: string[] = [];
    const s = {
      writableEnded: false,
      write: (b: Buffer) => (calls.push(`write ${b.toString()}`), true),
      cork: () => calls.push('cork'),
      uncork: () => calls.push('uncork'),
      end: (b?: Buffer) => {
        calls.push(b ? `end ${b.toString()}` : 'end');
        s.writableEnded = true;
      },
    };
    return { s: s as unknown as Socket, calls };
  }

  it('small pieces as one write, large ones corked, one piece as it is', () => {
    const a = fake();
    writeAll(a.s, [Buffer.from('ab'), Buffer.from('K'), Buffer.from('cd')]);
    expect(a.calls).toEqual(['write abKcd']);
    const b = fake();
    const big = Buffer.alloc(20_000, 0x61);
    writeAll(b.s, [big, Buffer.from('z')]);
    expect(b.calls).toEqual(['cork', `write ${big.toString()}`, 'write z', 'uncork']);
    const c = fake();
    writeAll(c.s, [Buffer.from('one')]);
    expect(c.calls).toEqual(['write one']);
  });

  it('ends a socket once: a second end (or one after the peer ended it) does nothing', () => {
    const a = fake();
    endOnce(a.s, Buffer.from('E'));
    endOnce(a.s);
    endOnce(a.s, Buffer.from('again'));
    expect(a.calls).toEqual(['end E']);
  });
});
