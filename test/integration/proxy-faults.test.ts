/**
 * The proxy's failure paths against fake backends on loopback (no PostgreSQL needed), where a
 * real server cannot be made to misbehave on cue, through both front doors (the native one, and
 * Node's sockets with --relay js): a reset connection and a dying server's FATAL before the first
 * byte reached the client (retried on another replica), a silent server (08006 after the connect
 * timeout, no hang), a server gone mid-session (FATAL 08006 at a message boundary) or cut inside a
 * message (the client's connection is closed, no hang), the cancel key mapping, and clients that
 * send anything after an SSLRequest (no slot leaks). Ephemeral ports; rr routing so the order of
 * replicas is known. Early connects (Node's front door only): proxy-early.test.ts.
 */
import { createConnection, type Socket } from 'node:net';
import { serialize } from 'pg-protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BACKEND_PID, FakeRig, SECRET, authOk } from '../helpers/fake-replicas.js';
import { relay } from '../helpers/native-front.js';

const fronts = [
  ...(relay ? [{ front: 'native', over: {} }] : []),
  { front: 'js', over: { relay: { kind: 'js' as const } } },
];

describe.each(fronts)('plb proxy failure paths (fake backends), front door $front', ({ front, over }) => {
  const rig = new FakeRig(over);
  afterEach(() => rig.stop());

  it('serves through the front door it was asked for', async () => {
    await rig.setup(['good']);
    expect(rig.proxy!.relay.split(',')[0]).toBe(front);
  });

  it('a reset connection and a dying server before the first byte: the session goes on to another replica', async () => {
    await rig.setup(['reset', 'dying', 'good']);
    const c = await rig.connect();
    expect((await c.query('select 1')).rows).toEqual([{ x: 1 }]);
    const stats = rig.proxy!.stats;
    // The native relay tells ReadyForQuery a few ms late when nothing else is to be told.
    await vi.waitFor(() =>
      expect(stats.classes.premium).toMatchObject({ opened: 1, ready: 1, startupFailed: 0 }),
    );
    expect(stats.replica('r3').opened).toBe(1);
    expect(stats.replica('r1').opened + stats.replica('r2').opened).toBe(0);
    // The failed attempts released their slots: only the live session counts.
    expect(rig.proxy!.router.snapshot().map((r) => r.sessions.premium)).toEqual([0, 0, 1]);
  });

  it('every attempt fails: FATAL 08006 naming the last cause', async () => {
    await rig.setup(['reset', 'reset', 'reset']);
    await expect(rig.connect()).rejects.toMatchObject({
      code: '08006',
      message: /could not connect to a replica for class premium/,
    });
    expect(rig.proxy!.stats.classes.premium.startupFailed).toBe(1);
    expect(rig.proxy!.router.snapshot().every((r) => r.sessions.premium === 0)).toBe(true);
  });

  it('a silent server: FATAL 08006 after the connect timeout, not a hang', async () => {
    await rig.setup(['silent'], 300);
    // The connect timeout's own words: told, not left hanging (a hang ends at the test's timeout).
    await expect(rig.connect()).rejects.toMatchObject({
      code: '08006',
      message: /no answer to the startup packet within 300 ms/,
    });
  });

  it('a client gone during authentication: counted as opened and closed, not as a failure of its replica', async () => {
    await rig.setup(['auth']);
    const s = createConnection({ host: '127.0.0.1', port: rig.proxy!.ports.premium! });
    s.on('error', () => undefined);
    s.write(serialize.startup({ user: 'u', database: 'd' }));
    await new Promise((r) => s.once('data', r)); // the SASL request
    s.destroy();
    await vi.waitFor(() => expect(rig.proxy!.stats.classes.premium.closed).toBe(1));
    expect(rig.proxy!.stats.classes.premium).toMatchObject({
      opened: 1,
      ready: 0,
      startupFailed: 0,
      lost: 0,
    });
    expect(rig.proxy!.stats.replica('r1')).toMatchObject({ opened: 1, failed: 0, lost: 0 });
    expect(rig.sessions()).toEqual([0]);
  });

  it('a server gone between messages: FATAL 08006 "replica r1 went away"', async () => {
    const [f] = await rig.setup(['good']);
    const c = await rig.connect();
    f!.onQuery = 'close';
    await expect(c.query('select 1')).rejects.toMatchObject({
      code: '08006',
      message: /replica r1 went away/,
    });
    expect(rig.proxy!.stats.replica('r1').lost).toBe(1);
    expect(rig.proxy!.router.snapshot()[0]!.sessions.premium).toBe(0);
  });

  it('a server gone inside a message: the client connection is closed, not left hanging', async () => {
    const [f] = await rig.setup(['good']);
    const c = await rig.connect();
    f!.onQuery = 'cut';
    // Rejected, not left hanging (a hang ends at the test's timeout).
    await expect(c.query('select 1')).rejects.toThrow();
    expect(rig.proxy!.stats.replica('r1').lost).toBe(1);
  });

  it("the client sees the proxy's cancel key; a cancel reaches the backend with the backend's key", async () => {
    const [f] = await rig.setup(['good']);
    const c = await rig.connect();
    const { processID, secretKey } = c as unknown as { processID: number; secretKey: number };
    expect(processID === BACKEND_PID && secretKey === SECRET).toBe(false);
    const s = createConnection({ host: '127.0.0.1', port: rig.proxy!.ports.freemium! });
    s.on('error', () => undefined);
    await new Promise<void>((r) =>
      s.on('connect', () => s.end(serialize.cancel(processID, secretKey))).on('close', () => r()),
    );
    expect(f!.cancels).toEqual([[BACKEND_PID, SECRET]]);
    expect(rig.proxy!.stats.cancels).toBe(1);
  });

  it('SSLRequests followed by anything (garbage, a cancel, half a packet, a reset, a session): no slot leaks', async () => {
    const [f] = await rig.setup(['good', 'good']);
    const actions: ((s: Socket) => void)[] = [
      (s) => s.end(Buffer.from('garbage, not a startup packet')),
      (s) => s.end(serialize.cancel(1, 2)),
      (s) => s.end(serialize.startup({ user: 'u', database: 'd' }).subarray(0, 7)),
      (s) => s.resetAndDestroy(),
      (s) => s.end(),
      (s) => void rig.startup(s).then(() => s.end()),
    ];
    const clients = await Promise.all(Array.from({ length: 120 }, () => rig.sslRequested()));
    clients.forEach((s, i) => actions[i % actions.length]!(s));
    // Every client's connection ends: refused, forwarded, dropped, or served and ended.
    await Promise.all(clients.map((s) => new Promise((r) => (s.closed ? r(0) : s.once('close', r)))));
    await vi.waitFor(() => expect(rig.sessions()).toEqual([0, 0]), { timeout: 5000 });
    await vi.waitFor(() => expect(f!.sockets.size + rig.fakes[1]!.sockets.size).toBe(0), { timeout: 5000 });
    expect(rig.proxy!.stats.classes.premium.ready).toBe(20);
    if (front === 'js') expect(rig.proxy!.stats.earlyConnects).toBeGreaterThan(0);
    // And it keeps serving.
    expect((await rig.startup(await rig.sslRequested())).includes(authOk)).toBe(true);
  });
});
