/**
 * A session and startup pacing (node-session.ts with a stand-in host, loopback sockets): a freemium
 * startup waits for its turn and a premium one never does; a held one whose client left ends when
 * its turn comes; one held too long is told 53300 as an ErrorResponse. Nothing is timed.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PlbError } from '../../src/core/errors.js';
import type { ServiceClass } from '../../src/core/service-class.js';
import { CancelKeys } from '../../src/proxy/protocol/cancel-keys.js';
import type { PacedStartup } from '../../src/proxy/admission/paced-intake.js';
import type { ClientSession } from '../../src/proxy/session/session-host.js';
import type { SessionHost } from '../../src/proxy/session/session-host.js';
import { ProxySession } from '../../src/proxy/node/node-session.js';
import { ProxyStats } from '../../src/proxy/stats.js';
import { startupPacket } from '../helpers/startup-packet.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A host whose acquire finds no replica (57P03) and whose pace holds every startup. */
function host(held: PacedStartup[], acquired: ServiceClass[]): SessionHost {
  return {
    classFrom: 'off',
    startupTimeoutMs: 10_000,
    connectTimeoutMs: 1000,
    connectAttempts: 1,
    cancelKeys: new CancelKeys(),
    stats: new ProxyStats(['r1']),
    serverTls: 'disable',
    acquire: (cls) => {
      acquired.push(cls);
      throw new PlbError('NO_REPLICA', 'none');
    },
    cancelWait: () => undefined,
    release: () => undefined,
    reportFailure: () => undefined,
    log: () => undefined,
    pace: (s) => void held.push(s),
  };
}

/** A listener of class cls whose connections become sessions; resolves with its port. */
async function listen(
  cls: ServiceClass,
  h: SessionHost,
  ended: ClientSession[],
  sockets: Socket[] = [],
): Promise<number> {
  const srv = createServer((s: Socket) => {
    sockets.push(s);
    new ProxySession(s, cls, h, (x) => ended.push(x));
  });
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return (srv.address() as { port: number }).port;
}

/** A client that sends its startup packet; `got` is what it has read, `closed` when it is closed. */
function client(port: number) {
  const c = connect({ host: '127.0.0.1', port });
  const state = { got: '', closed: false };
  c.on('connect', () => c.write(startupPacket({ user: 'plb', database: 'plb' })));
  c.on('data', (d: Buffer) => (state.got += d.toString('latin1')));
  c.on('error', () => undefined);
  c.on('close', () => (state.closed = true));
  return { socket: c, state };
}

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
}

describe('a session under startup pacing', () => {
  it('a freemium startup waits for its turn; a premium one is routed at once', async () => {
    const held: PacedStartup[] = [];
    const acquired: ServiceClass[] = [];
    const h = host(held, acquired);
    const fport = await listen('freemium', h, []);
    const pport = await listen('premium', h, []);
    const f = client(fport);
    const p = client(pport);
    await until(() => held.length === 1 && p.state.closed);
    expect(acquired).toEqual(['premium']);
    expect(p.state.got).toContain('57P03');
    expect(f.state.got).toBe('');
    held[0]?.run();
    await until(() => f.state.closed);
    expect(acquired).toEqual(['premium', 'freemium']);
    expect(f.state.got).toContain('57P03');
  });

  it('one held too long gets FATAL 53300 as an ErrorResponse and the session ends', async () => {
    const held: PacedStartup[] = [];
    const ended: ClientSession[] = [];
    const port = await listen('freemium', host(held, []), ended);
    const c = client(port);
    await until(() => held.length === 1);
    held[0]?.expire();
    await until(() => c.state.closed && ended.length === 1);
    expect(c.state.got.charCodeAt(0)).toBe(0x45);
    expect(c.state.got).toContain('C53300');
    // Its turn coming after all does nothing more.
    held[0]?.run();
    expect(ended).toHaveLength(1);
  });

  it('one whose client left while held ends when its turn comes, without being routed', async () => {
    const held: PacedStartup[] = [];
    const acquired: ServiceClass[] = [];
    const ended: ClientSession[] = [];
    const sockets: Socket[] = [];
    const port = await listen('freemium', host(held, acquired), ended, sockets);
    const c = client(port);
    await until(() => held.length === 1);
    c.socket.destroy();
    await until(() => sockets[0]?.closed === true); // the proxy's side saw it go
    held[0]?.run();
    await until(() => ended.length === 1);
    expect(acquired).toEqual([]);
  });
});
