/**
 * The native front door (native/front.c) on loopback with a fake server: encryption requests
 * answered 'N' by the relay, a client's first packet handed over whole (and what follows it kept
 * for the server), the connect and its failures, a first answer that is an error held for the
 * verdict, the startup timeout, the client limit, a client gone while it is routed, and a stop; a
 * fault of the relay's own ending a session (native-session.ts) with its FATAL. It must be built
 * (npm run build): without it the test is skipped, and fails with CI=true.
 */
import { createServer, type AddressInfo } from 'node:net';
import { constants } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { B_DESTROY, C_DESTROY, C_END, type FrontPair } from '../../src/proxy/native/native-relay.js';
import { errorResponse } from '../../src/proxy/protocol/wire.js';
import { CancelKeys } from '../../src/proxy/protocol/cancel-keys.js';
import { NativeSession } from '../../src/proxy/native/native-session.js';
import { decodeServerError } from '../../src/proxy/protocol/server-messages.js';
import type { SessionHost } from '../../src/proxy/session/session-host.js';
import { ProxyStats } from '../../src/proxy/stats.js';
import { failInCiWithout } from '../helpers/proxy-setup.js';
import {
  AUTH_OK,
  BACKEND_KEY_MSG,
  client,
  closeAll,
  fakeServer,
  msg,
  openFront,
  PROXY_KEY,
  PROXY_KEY_MSG,
  READY,
  relay,
  relayMissing,
  SSL_REQUEST,
  startupPacket,
  TERMINATE,
  until,
} from '../helpers/native-front.js';

failInCiWithout(relay !== undefined, `the native front door (${String(relayMissing)})`);

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe.skipIf(relay === undefined)('native front door', () => {
  afterAll(() => closeAll());

  it("answers an SSLRequest 'N' itself; hands the startup packet over whole; what follows it reaches the server after it", async () => {
    const got: Buffer[] = [];
    const { server, port } = await fakeServer((s, packet) => {
      got.push(Buffer.from(packet));
      s.on('data', (d: Buffer) => got.push(Buffer.from(d)));
      s.write(Buffer.concat([AUTH_OK, BACKEND_KEY_MSG, READY]));
    });
    const rig = openFront({}, (t) => t.pair.dial('127.0.0.1', port, 5000, PROXY_KEY, false));
    const c = await client(rig.port);
    c.socket.write(SSL_REQUEST);
    await until(() => c.got().length === 1);
    expect(c.got().toString()).toBe('N');
    const packet = startupPacket({ user: 'alice', database: 'db', application_name: 'x' });
    const early = msg('Q', 'select 1\0');
    c.socket.write(Buffer.concat([packet, early]));
    const t = await rig.arrival();
    expect(t.packet?.equals(packet)).toBe(true);
    expect(t.cls).toBe('premium');
    await until(() => Buffer.concat(got).length === packet.length + early.length);
    expect(Buffer.concat(got).equals(Buffer.concat([packet, early]))).toBe(true);
    await until(() => t.readies.length === 1);
    expect(
      c
        .got()
        .subarray(1)
        .equals(Buffer.concat([AUTH_OK, PROXY_KEY_MSG, READY])),
    ).toBe(true);
    c.socket.destroy();
    server.close();
    await t.done;
    expect(t.answeredAtClose).toBe(true);
  });

  it('a refused connect is reported (not connected); a second dial to a live server goes on', async () => {
    const dead = await closedPort();
    const { server, port } = await fakeServer((s) => s.write(Buffer.concat([AUTH_OK, READY])));
    const rig = openFront({}, (t) => t.pair.dial('127.0.0.1', dead, 5000, PROXY_KEY, false));
    const c = await client(rig.port);
    c.socket.write(startupPacket());
    const t = await rig.arrival();
    await until(() => t.fails.length === 1);
    expect(t.fails[0]).toEqual({ code: 'ECONNREFUSED', connected: false });
    t.pair.dial('127.0.0.1', port, 5000, PROXY_KEY, false);
    await until(() => t.readies.length === 1);
    expect(t.readies[0]).toBeUndefined(); // no BackendKeyData from this server
    expect(c.got().equals(Buffer.concat([AUTH_OK, READY]))).toBe(true);
    c.socket.destroy();
    server.close();
    await t.done;
  });

  it('a server that closes before answering, and one that never answers: reported as connected', async () => {
    const { server: closing, port: p1 } = await fakeServer((s) => s.destroy());
    const { server: silent, port: p2 } = await fakeServer(() => undefined);
    const rig = openFront({}, (t) => t.pair.dial('127.0.0.1', p1, 300, PROXY_KEY, false));
    const c = await client(rig.port);
    c.socket.write(startupPacket());
    const t = await rig.arrival();
    await until(() => t.fails.length === 1);
    expect(t.fails[0]).toMatchObject({ connected: true });
    t.pair.dial('127.0.0.1', p2, 300, PROXY_KEY, false);
    await until(() => t.fails.length === 2, 3000);
    expect(t.fails[1]).toEqual({ code: 'ETIMEDOUT', connected: true });
    const refusal = errorResponse('FATAL', '08006', 'could not connect');
    t.pair.command(C_END, refusal);
    await until(() => c.got().length === refusal.length);
    expect(c.got().equals(refusal)).toBe(true);
    c.socket.end();
    await t.done;
    closing.close();
    silent.close();
  });

  it('a first answer that is an error is held: dropped on one verdict, passed on by the other', async () => {
    const dying = errorResponse('FATAL', '57P01', 'terminating connection due to administrator command');
    const full = errorResponse('FATAL', '53300', 'sorry, too many clients already');
    const { server: s1, port: p1 } = await fakeServer((s) => s.end(dying));
    const { server: s2, port: p2 } = await fakeServer((s) => s.end(full));
    const rig = openFront({}, (t) => t.pair.dial('127.0.0.1', p1, 5000, PROXY_KEY, false));
    const c = await client(rig.port);
    c.socket.write(startupPacket());
    const t = await rig.arrival();
    await until(() => t.answers.length === 1);
    expect(t.answers[0]!.equals(dying)).toBe(true);
    t.pair.verdict(false);
    t.pair.dial('127.0.0.1', p2, 5000, PROXY_KEY, false);
    await until(() => t.answers.length === 2);
    t.pair.verdict(true);
    await until(() => c.got().length === full.length);
    expect(c.got().equals(full)).toBe(true); // the first server's error never reached the client
    expect(await t.nextEnd()).toMatchObject({ side: 'backend', lastType: 0x45 });
    t.pair.command(C_END);
    c.socket.end();
    await t.done;
    s1.close();
    s2.close();
  });

  it('no first packet within the startup timeout: handed over without one; a client gone before its packet is never seen', async () => {
    const rig = openFront({ startupTimeoutMs: 200 });
    const quiet = await client(rig.port);
    const gone = await client(rig.port);
    gone.socket.write(Buffer.from([0, 0]));
    gone.socket.destroy();
    const t = await rig.arrival();
    expect(t.packet).toBeUndefined();
    const refusal = errorResponse('FATAL', '08P01', 'timeout waiting for the startup packet');
    t.pair.command(C_END, refusal);
    await until(() => quiet.got().length === refusal.length);
    quiet.socket.end();
    await t.done;
    await new Promise((r) => setTimeout(r, 100));
    expect(rig.told.length).toBe(1);
  });

  it("over the client limit: an SSLRequest answered 'N', then the refusal at its startup packet; never handed over; counted", async () => {
    const refusal = errorResponse('FATAL', '53300', 'sorry, too many clients already (test)');
    const rig = openFront({ max: { premium: 2, freemium: 2 }, refusal });
    const held = [await client(rig.port), await client(rig.port)];
    await until(() => rig.front.counts().open === 2);
    const over = await client(rig.port);
    over.socket.write(SSL_REQUEST);
    await until(() => over.got().length === 1);
    expect(over.got().toString()).toBe('N');
    over.socket.write(startupPacket()); // read as far as its code, the rest dropped
    await until(() => over.got().length === 1 + refusal.length);
    expect(over.got().subarray(1).equals(refusal)).toBe(true);
    // Without an SSLRequest: the refusal at once; one that sends nothing: at the startup timeout.
    const plain = await client(rig.port);
    plain.socket.write(startupPacket());
    await until(() => plain.got().length === refusal.length);
    expect(plain.got().equals(refusal)).toBe(true);
    for (const c of [over, plain]) c.socket.end();
    expect(rig.front.counts()).toEqual({ open: 2, overLimit: 2 });
    for (const h of held) h.socket.destroy();
    await until(() => rig.front.counts().open === 0);
    expect(rig.told.length).toBe(0);
  });

  it('a Terminate (or any length no packet has) instead of a startup packet: closed without a word, never handed over', async () => {
    const rig = openFront();
    for (const first of [TERMINATE, Buffer.concat([SSL_REQUEST, TERMINATE])]) {
      const c = await client(rig.port);
      let closed = false;
      c.socket.on('end', () => (closed = true));
      c.socket.write(first);
      await until(() => closed);
      expect(c.got().toString()).toBe(first.length > 8 ? 'N' : '');
      c.socket.destroy();
    }
    await until(() => rig.front.counts().open === 0);
    expect(rig.told.length).toBe(0);
  });

  it('a client gone while it is routed: its end is reported; closed once told to drop the rest', async () => {
    const rig = openFront();
    const c = await client(rig.port);
    c.socket.write(startupPacket());
    const t = await rig.arrival();
    c.socket.destroy();
    expect(await t.nextEnd()).toMatchObject({ side: 'client' });
    expect(t.isClosed).toBe(false);
    t.pair.command(C_DESTROY | B_DESTROY);
    await t.done;
    expect(t.answeredAtClose).toBe(false);
    expect(rig.front.counts().open).toBe(0);
  });

  it('stop: no more clients accepted; a client still before its packet is told and closed', async () => {
    const rig = openFront();
    const waiting = await client(rig.port);
    await until(() => rig.front.counts().open === 1);
    const bye = errorResponse('FATAL', '57P01', 'plb proxy is shutting down');
    rig.front.stop(bye);
    await until(() => waiting.got().length === bye.length);
    expect(waiting.got().equals(bye)).toBe(true);
    const refused = await client(rig.port).then(
      () => false,
      (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED',
    );
    expect(refused).toBe(true);
    waiting.socket.end();
    await until(() => rig.front.counts().open === 0);
  });

  it('a fault while routed: told; a dial after it is ignored; the last word reaches the client', async () => {
    const { server, port } = await fakeServer((s) => s.write(Buffer.concat([AUTH_OK, READY])));
    const rig = openFront();
    const c = await client(rig.port);
    c.socket.write(startupPacket());
    const t = await rig.arrival();
    relay!.injectFault(t.pair.id, 'epoll', constants.errno.ENOMEM);
    await until(() => t.faults.length === 1);
    expect(t.faults[0]).toMatchObject({ code: 'ENOMEM', sqlstate: '58000' });
    t.pair.dial('127.0.0.1', port, 5000, PROXY_KEY, false);
    const fatal = errorResponse('FATAL', '58000', t.faults[0]!.message);
    t.pair.command(C_END, fatal);
    await until(() => c.got().length === fatal.length);
    expect(c.got().equals(fatal)).toBe(true);
    c.socket.end();
    await t.done;
    expect([t.fails, t.readies]).toEqual([[], []]);
    server.close();
  });

  it("a session's fault ends it with the relay's FATAL (native-session.ts): logged, its slot released, no replica blamed", async () => {
    const { server, port } = await fakeServer((s) => {
      s.on('data', () => undefined);
      s.write(Buffer.concat([AUTH_OK, BACKEND_KEY_MSG, READY]));
    });
    const logs: string[] = [];
    const failures: unknown[] = [];
    let held = 0;
    const host: SessionHost = {
      classFrom: 'off',
      startupTimeoutMs: 10_000,
      connectTimeoutMs: 5000,
      connectAttempts: 2,
      cancelKeys: new CancelKeys(),
      stats: new ProxyStats(['r1']),
      serverTls: 'disable',
      acquire: () => (held++, { replica: 'r1', host: '127.0.0.1', port }),
      cancelWait: () => undefined,
      release: () => void held--,
      reportFailure: (_replica, err) => void failures.push(err),
      log: (line) => void logs.push(line),
    };
    const sessions: NativeSession[] = [];
    const pairs: FrontPair[] = [];
    const front = relay!.openFront(
      { max: { premium: 10, freemium: 10 }, refusal: Buffer.alloc(0), startupTimeoutMs: 10_000 },
      (pair, cls, packet) => {
        const s = new NativeSession(pair, cls, host, () => undefined, packet);
        sessions.push(s);
        pairs.push(pair);
        return s;
      },
    );
    const c = await client(front.listen('premium', '127.0.0.1', 0, 16));
    const closed = new Promise((r) => c.socket.on('close', r));
    c.socket.write(startupPacket());
    await until(() => sessions[0]?.core.phase === 'ready');
    const session = sessions[0]!;
    relay!.injectFault(pairs[0]!.id, 'epoll', constants.errno.ENOSPC);
    await session.core.done;
    await closed;
    const said = c.got().subarray(Buffer.concat([AUTH_OK, PROXY_KEY_MSG, READY]).length);
    const message = 'plb proxy: native relay failure: epoll_ctl failed (ENOSPC)';
    expect(decodeServerError(said)).toMatchObject({ severity: 'FATAL', code: '58000', message });
    expect(logs).toEqual([`session on r1: ${message}`]);
    expect([held, failures]).toEqual([0, []]);
    front.stop(Buffer.alloc(0));
    server.close();
  });
});
