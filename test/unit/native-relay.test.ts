/**
 * The native relay (native/relay.c) on loopback sockets, with a fake server: bytes both ways, only
 * whole backend messages forwarded (an unfinished one held, an oversize one passed through), each
 * side's end reported with the stream's state, the commands carried out, the close reported. It
 * must be built (npm run build): without it the test is skipped, and fails with CI=true.
 */
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import {
  B_END,
  C_AT_BOUNDARY,
  C_END,
  NativeRelay,
  type RelayEnd,
  type RelayListener,
} from '../../src/proxy/native-relay.js';
import { errorResponse } from '../../src/proxy/wire.js';
import { failInCiWithout } from '../helpers/proxy-setup.js';

const loaded = NativeRelay.load(2);
const relay = typeof loaded === 'string' ? undefined : loaded;
failInCiWithout(relay !== undefined, `the native relay (${String(loaded)})`);

/** Two connected loopback sockets: [the outside end, the end the relay takes]. */
async function socketPair(): Promise<[Socket, Socket]> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const outer = connect((server.address() as AddressInfo).port, '127.0.0.1');
  const inner = await accepted;
  await new Promise<void>((r) => (outer.connecting ? outer.once('connect', () => r()) : r()));
  server.close();
  return [outer, inner];
}

const msg = (type: string, body: Buffer | string): Buffer => {
  const b = typeof body === 'string' ? Buffer.from(body) : body;
  const out = Buffer.alloc(5 + b.length);
  out.write(type, 0, 'latin1');
  out.writeInt32BE(4 + b.length, 1);
  b.copy(out, 5);
  return out;
};
const ready = msg('Z', 'I');
const TERMINATE = msg('X', '');

interface Relayed {
  client: Socket;
  backend: Socket;
  got: () => Buffer;
  ends: RelayEnd[];
  params: Buffer[];
  closed: Promise<void>;
  command: (flags: number, last?: Buffer) => void;
  nextEnd: () => Promise<RelayEnd>;
}

const opened: Socket[] = [];

async function relayed(watchParams = false): Promise<Relayed> {
  const [client, clientLeg] = await socketPair();
  const [backendLeg, backend] = await socketPair();
  opened.push(client, backend);
  const chunks: Buffer[] = [];
  client.on('data', (d: Buffer) => chunks.push(d));
  const ends: RelayEnd[] = [];
  const params: Buffer[] = [];
  const waiters: ((e: RelayEnd) => void)[] = [];
  let closedNow: () => void = () => undefined;
  const closed = new Promise<void>((r) => (closedNow = r));
  const listener: RelayListener = {
    ended: (e) => {
      ends.push(e);
      waiters.shift()?.(e);
    },
    parameter: (m) => params.push(m),
    closed: () => closedNow(),
  };
  const pair = relay!.adopt(clientLeg, backendLeg, watchParams, listener);
  expect(pair).toBeDefined();
  let seen = 0;
  return {
    client,
    backend,
    got: () => Buffer.concat(chunks),
    ends,
    params,
    closed,
    command: (f, last) => pair!.command(f, last),
    nextEnd: () =>
      seen < ends.length
        ? Promise.resolve(ends[seen++]!)
        : new Promise((r) => waiters.push((e) => (seen++, r(e)))),
  };
}

const until = async (what: () => boolean, ms = 5000): Promise<void> => {
  const t0 = Date.now();
  while (!what()) {
    if (Date.now() - t0 > ms) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
};

afterAll(() => {
  for (const s of opened) s.destroy();
});

describe.skipIf(relay === undefined)('native relay', () => {
  it('copies both ways; an unfinished backend message is held until whole; ParameterStatus reported when watched', async () => {
    const r = await relayed(true);
    const fromClient: Buffer[] = [];
    r.backend.on('data', (d: Buffer) => fromClient.push(d));
    r.client.write(msg('Q', 'select 1\0'));
    await until(() => Buffer.concat(fromClient).length === 14);
    const row = msg('D', Buffer.alloc(3000, 7));
    r.backend.write(row.subarray(0, 1000));
    await new Promise((res) => setTimeout(res, 100));
    expect(r.got().length).toBe(0);
    const status = msg('S', 'application_name\0freemium\0');
    r.backend.write(Buffer.concat([row.subarray(1000), status, ready]));
    await until(() => r.got().length === row.length + status.length + ready.length);
    expect(r.got().equals(Buffer.concat([row, status, ready]))).toBe(true);
    expect(r.params.map((p) => p.equals(status))).toEqual([true]);
  });

  it('the backend ends: reported at a boundary with its last error; the client told, then closed', async () => {
    const r = await relayed();
    const fatal = errorResponse('FATAL', '57P01', 'terminating connection due to administrator command');
    r.backend.end(fatal);
    const e = await r.nextEnd();
    expect(e).toMatchObject({ side: 'backend', code: undefined, atBoundary: true, lastType: 0x45 });
    expect(e.lastError?.equals(fatal)).toBe(true);
    const bye = errorResponse('FATAL', '08006', 'replica r1 went away');
    r.command(C_END, bye);
    await until(() => r.got().length === fatal.length + bye.length);
    expect(r.got().subarray(fatal.length).equals(bye)).toBe(true);
    r.client.end();
    await r.closed;
  });

  it('the client ends (Terminate last): reported; the backend ended on command; closed', async () => {
    const r = await relayed();
    let backendEof = false;
    r.backend.on('data', () => undefined).on('end', () => (backendEof = true));
    r.client.end(TERMINATE);
    const e = await r.nextEnd();
    expect(e).toMatchObject({ side: 'client', terminated: true });
    r.command(B_END);
    await until(() => backendEof);
    r.backend.end();
    await r.closed;
  });

  it('an oversize message passes through as it comes; cut inside it, the end is not at a boundary and no error is said', async () => {
    const r = await relayed();
    const big = msg('D', Buffer.alloc(3 << 20, 1));
    r.backend.write(big.subarray(0, 2 << 20));
    await until(() => r.got().length === 2 << 20);
    r.backend.destroy();
    const e = await r.nextEnd();
    expect(e).toMatchObject({ side: 'backend', atBoundary: false, lastType: 0x44 });
    r.command(C_AT_BOUNDARY, errorResponse('FATAL', '08006', 'gone'));
    const clientClosed = new Promise((res) => r.client.on('close', res));
    r.client.on('error', () => undefined);
    await r.closed;
    await clientClosed;
    expect(r.got().length).toBe(2 << 20);
  });

  it('a client that stops reading holds the backend back; 64 MiB arrive whole once it reads', async () => {
    const r = await relayed();
    r.client.pause();
    const rows: Buffer[] = [];
    for (let i = 0; i < 1024; i++) rows.push(msg('D', Buffer.alloc(65536 - 5, i & 0xff)));
    const all = Buffer.concat([...rows, ready]);
    let written = false;
    r.backend.write(all, () => (written = true));
    await new Promise((res) => setTimeout(res, 300));
    // Bounded: the kernel's buffers and the relay's own, nowhere near all of it.
    expect(written).toBe(false);
    r.client.resume();
    await until(() => r.got().length === all.length, 20_000);
    const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
    expect(sha(r.got())).toBe(sha(all));
  });

  it('50 sessions ended by their clients: every descriptor the relay took is closed again', async () => {
    const fds = (): number => readdirSync('/proc/self/fd').length;
    const before = fds();
    const all = await Promise.all(Array.from({ length: 50 }, () => relayed()));
    for (const r of all) {
      r.backend.on('end', () => r.backend.end());
      r.client.end(TERMINATE);
    }
    for (const r of all) {
      await r.nextEnd();
      r.command(B_END);
    }
    await Promise.all(all.map((r) => r.closed));
    for (const r of all) for (const sock of [r.client, r.backend]) sock.destroy();
    await until(() => fds() <= before);
    expect(fds()).toBeLessThanOrEqual(before);
  });

  it('not PostgreSQL on the backend (a length below 4): both sides closed, reported as EPROTO', async () => {
    const r = await relayed();
    const bad = Buffer.from([0x44, 0, 0, 0, 1]);
    r.backend.on('error', () => undefined);
    r.client.on('error', () => undefined);
    r.backend.write(bad);
    const e = await r.nextEnd();
    expect(e).toMatchObject({ side: 'backend', code: 'EPROTO' });
    await r.closed;
  });
});
