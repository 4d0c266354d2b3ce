/**
 * The replica connections' keepalive and TCP_USER_TIMEOUT (--hang-timeout): the values worked
 * out of the hang, the kernel taking them (the addon's keepalive() reads them back), both front
 * doors' replica sockets carrying them (the kernel lists a keepalive timer), and a connection the kernel
 * ended for silence reported as a dead replica's, not a slow one's. The blackhole itself:
 * test/integration/proxy-hang.test.ts.
 */
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { classifyFailure } from '../../src/core/failure-cause.js';
import { loadAddon } from '../../src/proxy/native/addon.js';
import { dialTcp } from '../../src/proxy/node/backend-connect.js';
import { describeKeepalive, serverKeepalive } from '../../src/proxy/session/server-keepalive.js';
import { judgeBackendEnd } from '../../src/proxy/session/session-end.js';
import { MSG_READY } from '../../src/proxy/protocol/wire.js';
import {
  closeAll,
  openFront,
  PROXY_KEY,
  relay,
  startupPacket,
  client,
  until,
} from '../helpers/native-front.js';

const addon = loadAddon();

describe('serverKeepalive', () => {
  it('probes an idle connection before the hang is up; ended within a second of it', () => {
    expect(serverKeepalive(2000)).toEqual({ userTimeoutMs: 2000, idleS: 1, intervalS: 1, count: 1 });
    expect(serverKeepalive(5000)).toEqual({ userTimeoutMs: 5000, idleS: 2, intervalS: 1, count: 3 });
    expect(serverKeepalive(10_000)).toEqual({ userTimeoutMs: 10_000, idleS: 5, intervalS: 1, count: 5 });
    expect(serverKeepalive(60_000)).toMatchObject({ idleS: 5, count: 55 });
    expect(serverKeepalive(500)).toEqual({ userTimeoutMs: 500, idleS: 1, intervalS: 1, count: 1 });
    // Without TCP_USER_TIMEOUT the count gives the same bound: idle + count * interval >= the hang.
    for (const ms of [1000, 2500, 5000, 7000, 10_000, 30_000]) {
      const k = serverKeepalive(ms)!;
      expect(k.idleS + k.count * k.intervalS).toBeGreaterThanOrEqual(ms / 1000);
      expect(k.idleS + k.count * k.intervalS).toBeLessThanOrEqual(ms / 1000 + 1);
    }
  });

  it('0: none', () => {
    expect(serverKeepalive(0)).toBeUndefined();
    expect(describeKeepalive(undefined)).toMatch(/--hang-timeout 0/);
    expect(describeKeepalive(serverKeepalive(5000))).toBe(
      'TCP_USER_TIMEOUT 5000 ms, keepalive after 2 s, every 1 s',
    );
  });
});

describe('a replica connection the kernel ended for silence', () => {
  const timedOut = Object.assign(new Error('read ETIMEDOUT'), { code: 'ETIMEDOUT' });

  it('counts toward fall (unreachable), and the client is told 08006', () => {
    const v = judgeBackendEnd('r1', { lastType: MSG_READY, atBoundary: true }, undefined, timedOut);
    expect(classifyFailure(timedOut)).toBe('slow'); // as an error alone it would not
    expect(classifyFailure(v.failure)).toBe('unreachable');
    expect(v.failure?.message).toMatch(/nothing acknowledged within the hang timeout \(read ETIMEDOUT/);
    expect(v.last?.toString('latin1')).toMatch(/C08006\0Mreplica r1 went away: nothing acknowledged/);
  });

  it('other socket errors are reported as they are', () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const v = judgeBackendEnd('r1', { lastType: MSG_READY, atBoundary: true }, undefined, reset);
    expect(v.failure).toBe(reset);
  });
});

/**
 * The timer of each established connection to port, as the kernel lists it (/proc/net/tcp's
 * `tr`: 2 is keepalive's on an idle connection, 0 none).
 */
function timers(port: number): string[] {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[2]?.endsWith(`:${hex}`) && f[3] === '01')
    .map((f) => ((f[5] ?? '').split(':')[0] === '02' ? 'keepalive' : 'none'));
}

describe.skipIf(typeof addon === 'string')('the addon on a socket of Node', () => {
  let server: Server | undefined;
  const sockets: Socket[] = [];
  afterEach(() => {
    for (const s of sockets.splice(0)) s.destroy();
    server?.close();
    closeAll();
  });

  async function listen(): Promise<number> {
    const srv = createServer((s) => void sockets.push(s.on('error', () => undefined)));
    server = srv;
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    return (srv.address() as AddressInfo).port;
  }

  it('keepalive(): the kernel takes the values (read back)', async () => {
    const port = await listen();
    const s = dialTcp(
      '127.0.0.1',
      port,
      { buffer: Buffer.alloc(64), callback: () => true },
      { log: () => undefined },
    );
    sockets.push(s);
    await new Promise((r) => s.once('connect', r));
    const fd = (s as unknown as { _handle: { fd: number } })._handle.fd;
    if (typeof addon === 'string') throw new Error(addon);
    expect(addon.keepalive(fd, 5000, 2, 1, 3)).toEqual([5000, 2, 1, 3]);
    expect(() => addon.keepalive(-1, 5000, 2, 1, 3)).toThrow(/EINVAL|invalid/i);
  });

  it("Node's front door: a replica connection gets them once connected; none with --hang-timeout 0", async () => {
    const port = await listen();
    const log: string[] = [];
    const host = { serverKeepalive: serverKeepalive(5000), log: (l: string) => void log.push(l) };
    const s = dialTcp('127.0.0.1', port, { buffer: Buffer.alloc(64), callback: () => true }, host);
    sockets.push(s);
    await new Promise((r) => s.once('connect', r));
    await until(() => timers(port).includes('keepalive'));
    s.destroy();
    const off = dialTcp(
      '127.0.0.1',
      port,
      { buffer: Buffer.alloc(64), callback: () => true },
      { log: () => undefined },
    );
    sockets.push(off);
    await new Promise((r) => off.once('connect', r));
    expect(timers(port)).toEqual(['none']);
    expect(log).toEqual([]); // set through the addon: no fallback said
  });

  it.skipIf(!relay)(
    "the native front door: the relay's replica connection gets them before its connect",
    async () => {
      const port = await listen();
      const rig = openFront({}, (t) =>
        t.pair.dial('127.0.0.1', port, 5000, PROXY_KEY, false, serverKeepalive(5000)),
      );
      const c = await client(rig.port);
      c.socket.write(startupPacket());
      await rig.arrival();
      await until(() => sockets.length === 1);
      await until(() => timers(port).includes('keepalive'));
      c.socket.destroy();
    },
  );
});
