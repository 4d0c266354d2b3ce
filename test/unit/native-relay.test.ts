/**
 * The native relay (native/relay.c) copying an established session through the front door, on
 * loopback with a fake server: bytes both ways, only whole backend messages forwarded (an
 * unfinished one held, an oversize one passed through), each side's end reported with the stream's
 * state (a client's ordinary end handled by the relay itself), the commands carried out, the close
 * reported; Terminate read from the client's framed messages; the relay's own failures (faults)
 * told, never dropped. It must be built (npm run build): without it the test is skipped, and fails
 * with CI=true.
 */
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { constants } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { B_DESTROY, B_END, C_AT_BOUNDARY, C_DESTROY, C_END } from '../../src/proxy/native/native-relay.js';
import { errorResponse } from '../../src/proxy/protocol/wire.js';
import { failInCiWithout } from '../helpers/proxy-setup.js';
import {
  BACKEND_KEY,
  closeAll,
  msg,
  READY,
  relay,
  relayMissing,
  relayRig,
  TERMINATE,
  until,
  type Relayed,
} from '../helpers/native-front.js';

failInCiWithout(relay !== undefined, `the native relay (${String(relayMissing)})`);

describe.skipIf(relay === undefined)('native relay', () => {
  let rig: Awaited<ReturnType<typeof relayRig>>;
  let watching: Awaited<ReturnType<typeof relayRig>>;
  beforeAll(async () => {
    rig = await relayRig();
    watching = await relayRig(true);
  });
  afterAll(() => closeAll());

  it('the startup answer passes with the proxy key in place of the server one; ready reports the server key', async () => {
    const r = await rig.relayed();
    const key = r.told.readies[0]!;
    expect([key.readInt32BE(0), key.subarray(4)]).toEqual([BACKEND_KEY.pid, BACKEND_KEY.secret]);
    // got() starts after the answer with the proxy key: nothing else came.
    expect(r.got().length).toBe(0);
  });

  it('copies both ways; an unfinished backend message is held until whole; ParameterStatus reported when watched', async () => {
    const r = await watching.relayed();
    r.told.params.length = 0;
    const fromClient: Buffer[] = [];
    r.backend.on('data', (d: Buffer) => fromClient.push(d));
    r.client.write(msg('Q', 'select 1\0'));
    await until(() => Buffer.concat(fromClient).length === 14);
    const row = msg('D', Buffer.alloc(3000, 7));
    r.backend.write(row.subarray(0, 1000));
    await new Promise((res) => setTimeout(res, 100));
    expect(r.got().length).toBe(0);
    const status = msg('S', 'application_name\0freemium\0');
    r.backend.write(Buffer.concat([row.subarray(1000), status, READY]));
    await until(() => r.got().length === row.length + status.length + READY.length);
    expect(r.got().equals(Buffer.concat([row, status, READY]))).toBe(true);
    expect(r.told.params.map((p) => p.equals(status))).toEqual([true]);
  });

  it('the backend ends: reported at a boundary with its last error; the client told, then closed', async () => {
    const r = await rig.relayed();
    const fatal = errorResponse('FATAL', '57P01', 'terminating connection due to administrator command');
    r.backend.end(fatal);
    const e = await r.told.nextEnd();
    expect(e).toMatchObject({ side: 'backend', code: undefined, atBoundary: true, lastType: 0x45 });
    expect(e.lastError?.equals(fatal)).toBe(true);
    const bye = errorResponse('FATAL', '08006', 'replica r1 went away');
    r.told.pair.command(C_END, bye);
    await until(() => r.got().length === fatal.length + bye.length);
    expect(r.got().subarray(fatal.length).equals(bye)).toBe(true);
    r.client.end();
    await r.told.done;
  });

  it('the client ends (Terminate last): not reported, the relay ends the backend itself; closed', async () => {
    const r = await rig.relayed();
    let backendEof = false;
    r.backend.on('data', () => undefined).on('end', () => (backendEof = true));
    r.client.end(TERMINATE);
    await until(() => backendEof);
    r.backend.end();
    await r.told.done;
    expect(r.told.ends).toEqual([]);
  });

  it('the client drops: the backend sees its end; closed, with no end reported', async () => {
    const r = await rig.relayed();
    let backendEof = false;
    r.backend.on('data', () => undefined).on('end', () => (backendEof = true));
    r.client.destroy();
    await until(() => backendEof);
    r.backend.end();
    await r.told.done;
    expect(r.told.ends).toEqual([]);
  });

  it("the client drops while the backend streams: the backend gets the client's bytes, then its connection ends at its next bytes; closed, no end reported", async () => {
    const r = await rig.relayed();
    // As PostgreSQL in a COPY out: the end read or not, it goes on sending.
    r.backend.allowHalfOpen = true;
    const query = msg('Q', 'copy big to stdout\0');
    let got = Buffer.alloc(0);
    let gone = false;
    r.backend.on('data', (d: Buffer) => (got = Buffer.concat([got, d]))).on('close', () => (gone = true));
    const row = msg('d', Buffer.alloc(8192, 'z'));
    const pump = (): void => {
      while (!r.backend.destroyed && r.backend.write(row));
    };
    r.backend.on('drain', pump);
    r.client.write(query);
    await until(() => got.length >= query.length);
    pump();
    await until(() => r.got().length > 0);
    r.client.destroy();
    // The relay's FIN first, then its close at the backend's next bytes: the writes after it fail
    // (seen as the end, or as a reset where a write came before the end was read), not the linger.
    await until(() => gone);
    await r.told.done;
    expect(r.told.ends).toEqual([]);
    expect(got).toEqual(query);
  });

  it('an oversize message passes through as it comes; cut inside it, the end is not at a boundary and no error is said', async () => {
    const r = await rig.relayed();
    const big = msg('D', Buffer.alloc(3 << 20, 1));
    r.backend.write(big.subarray(0, 2 << 20));
    await until(() => r.got().length === 2 << 20);
    r.backend.destroy();
    const e = await r.told.nextEnd();
    expect(e).toMatchObject({ side: 'backend', atBoundary: false, lastType: 0x44 });
    r.told.pair.command(C_AT_BOUNDARY, errorResponse('FATAL', '08006', 'gone'));
    const clientClosed = new Promise((res) => r.client.on('close', res));
    await r.told.done;
    await clientClosed;
    expect(r.got().length).toBe(2 << 20);
  });

  it('a client that stops reading holds the backend back; 64 MiB arrive whole once it reads', async () => {
    const r = await rig.relayed();
    r.client.pause();
    const rows: Buffer[] = [];
    for (let i = 0; i < 1024; i++) rows.push(msg('D', Buffer.alloc(65536 - 5, i & 0xff)));
    const all = Buffer.concat([...rows, READY]);
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

  it('50 sessions ended by their clients: every descriptor is closed again', async () => {
    const fds = (): number => readdirSync('/proc/self/fd').length;
    await rig.relayed(); // the server's listener and the like are open before counting
    const before = fds();
    const all: Relayed[] = await Promise.all(Array.from({ length: 50 }, () => rig.relayed()));
    for (const r of all) {
      r.backend.on('end', () => r.backend.end());
      r.client.end(TERMINATE);
    }
    await Promise.all(all.map((r) => r.told.done));
    for (const r of all) for (const sock of [r.client, r.backend]) sock.destroy();
    await until(() => fds() <= before);
    expect(fds()).toBeLessThanOrEqual(before);
  });

  it('the backend is told to end (B_END): it sees EOF; its end then is reported', async () => {
    const r = await rig.relayed();
    let backendEof = false;
    r.backend.on('data', () => undefined).on('end', () => (backendEof = true));
    r.told.pair.command(B_END);
    await until(() => backendEof);
    r.backend.end();
    expect(await r.told.nextEnd()).toMatchObject({ side: 'backend', code: undefined });
    r.told.pair.command(C_END);
    r.client.end();
    await r.told.done;
  });

  it('not PostgreSQL on the backend (a length below 4): both sides closed, reported as EPROTO', async () => {
    const r = await rig.relayed();
    r.backend.write(Buffer.from([0x44, 0, 0, 0, 1]));
    const e = await r.told.nextEnd();
    expect(e).toMatchObject({ side: 'backend', code: 'EPROTO' });
    await r.told.done;
  });

  it('Terminate is read from whole client messages: bytes inside a query that look like one are not', async () => {
    const r = await rig.relayed();
    r.backend.on('data', () => undefined);
    // A query whose last five bytes are those of a Terminate: the backend's end is a failure.
    r.client.write(msg('Q', Buffer.concat([Buffer.from('select '), TERMINATE])));
    await new Promise((res) => setTimeout(res, 50));
    r.backend.destroy();
    expect(await r.told.nextEnd()).toMatchObject({ side: 'backend', terminated: false });
    r.told.pair.command(C_END);
    r.client.end();
    await r.told.done;
  });

  it('a Terminate split over two reads is still one: the backend end that follows is expected', async () => {
    const r = await rig.relayed();
    let backendEof = false;
    const fromClient: Buffer[] = [];
    r.backend.on('data', (d: Buffer) => fromClient.push(d)).on('end', () => (backendEof = true));
    r.client.write(TERMINATE.subarray(0, 2));
    await until(() => Buffer.concat(fromClient).length === 2);
    r.client.write(TERMINATE.subarray(2));
    await until(() => Buffer.concat(fromClient).length === 5);
    r.backend.destroy();
    await r.told.done;
    expect(r.told.ends).toEqual([]);
    expect(backendEof).toBe(false);
  });

  it('epoll_ctl failing on a session: told as a fault (never dropped); the backend closed; the last word said, later commands ignored', async () => {
    const r = await rig.relayed();
    let backendEof = false;
    r.backend.on('data', () => undefined).on('end', () => (backendEof = true));
    relay!.injectFault(r.told.pair.id, 'epoll', constants.errno.ENOSPC);
    await until(() => r.told.faults.length === 1);
    expect(r.told.faults[0]).toEqual({
      message: 'plb proxy: native relay failure: epoll_ctl failed (ENOSPC)',
      code: 'ENOSPC',
      sqlstate: '58000',
    });
    await until(() => backendEof);
    const fatal = errorResponse('FATAL', '58000', r.told.faults[0]!.message);
    r.told.pair.command(C_END, fatal);
    r.told.pair.command(C_DESTROY | B_DESTROY); // after the last word: ignored
    const clientEnded = new Promise((res) => r.client.on('end', res));
    await until(() => r.got().length === fatal.length);
    expect(r.got().equals(fatal)).toBe(true);
    await clientEnded;
    r.client.end();
    await r.told.done;
    expect(r.told.ends).toEqual([]); // the backend's close is the fault's, not reported as its end
  });

  it("an event that cannot be allocated: the session's fault is told in its place (from the event set aside)", async () => {
    const r = await rig.relayed();
    relay!.injectFault(r.told.pair.id, 'memory');
    await new Promise((res) => setTimeout(res, 50));
    // The backend's end is the event that cannot be allocated.
    r.backend.end(errorResponse('FATAL', '57P01', 'terminating connection'));
    await until(() => r.told.faults.length === 1);
    expect(r.told.faults[0]).toMatchObject({ code: 'ENOMEM', sqlstate: '53200' });
    expect(r.told.ends).toEqual([]);
    r.told.pair.command(C_END, errorResponse('FATAL', '53200', r.told.faults[0]!.message));
    r.client.end();
    await r.told.done;
  });
});
