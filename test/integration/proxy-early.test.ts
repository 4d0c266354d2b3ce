/**
 * Early connects on Node's front door (--relay js, or TLS on a leg): the replica connection opened
 * at the client's SSLRequest, before its startup packet; used, dropped unused, failed, bounded; off
 * where the packet may name another class or with --early-connect off. Fake backends on loopback.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EARLY_HOLD_MS, EARLY_MAX } from '../../src/proxy/node/early-connect.js';
import { FakeRig, authOk } from '../helpers/fake-replicas.js';
import { sleep } from '../helpers/proxy-setup.js';

describe("early connects (Node's front door)", () => {
  const rig = new FakeRig({ relay: { kind: 'js' } });
  afterEach(() => rig.stop());

  it('an SSLRequest opens the replica connection before the startup packet; the session uses it', async () => {
    const [f] = await rig.setup(['good']);
    const s = await rig.sslRequested();
    // Connected, nothing sent: the server has not seen a byte of the session yet.
    await vi.waitFor(() => expect(f!.accepted).toBe(1));
    expect(f!.received).toBe(0);
    expect(rig.sessions()).toEqual([1]);
    expect((await rig.startup(s)).includes(authOk)).toBe(true);
    expect(f!.accepted).toBe(1);
    expect(rig.proxy!.stats).toMatchObject({ earlyConnects: 1, earlyUnused: 0 });
    s.destroy();
    await vi.waitFor(() => expect(rig.sessions()).toEqual([0]));
  });

  it('a client gone after its SSLRequest: the early connection closed unused, its slot given back', async () => {
    const [f] = await rig.setup(['good']);
    const s = await rig.sslRequested();
    await vi.waitFor(() => expect(f!.accepted).toBe(1));
    s.destroy();
    await vi.waitFor(() => expect(f!.sockets.size).toBe(0));
    expect(f!.received).toBe(0);
    expect(rig.sessions()).toEqual([0]);
    expect(rig.proxy!.stats).toMatchObject({ earlyConnects: 1, earlyUnused: 1 });
  });

  it('an early connection reset before the startup packet: reported, the session goes on to the next replica', async () => {
    const [reset, good] = await rig.setup(['reset', 'good']);
    const s = await rig.sslRequested();
    // The early connection was made (and reset); its reset may reach the proxy before the startup
    // packet or after it: either way the session goes on to r2.
    await vi.waitFor(() => expect(reset!.accepted).toBe(1));
    expect((await rig.startup(s)).includes(authOk)).toBe(true);
    expect(good!.accepted).toBe(1);
    expect(rig.proxy!.stats.replica('r2').opened).toBe(1);
    expect(rig.sessions()).toEqual([0, 1]);
    s.destroy();
  });

  it(`no startup packet within ${EARLY_HOLD_MS} ms: the early connection dropped, the session connects as usual later`, async () => {
    const [f] = await rig.setup(['good']);
    const s = await rig.sslRequested();
    await vi.waitFor(() => expect(f!.accepted).toBe(1));
    await vi.waitFor(() => expect(f!.sockets.size).toBe(0), { timeout: EARLY_HOLD_MS + 1000 });
    expect(rig.sessions()).toEqual([0]);
    expect((await rig.startup(s)).includes(authOk)).toBe(true);
    expect(f!.accepted).toBe(2);
    expect(rig.proxy!.stats).toMatchObject({ earlyConnects: 1, earlyUnused: 1 });
    s.destroy();
  });

  it(`at most ${EARLY_MAX} early connections at once; all given back when their clients leave`, async () => {
    const [f] = await rig.setup(['good']);
    const held = await Promise.all(Array.from({ length: EARLY_MAX + 8 }, () => rig.sslRequested()));
    await vi.waitFor(() => expect(f!.accepted).toBe(EARLY_MAX));
    await sleep(100);
    expect(f!.accepted).toBe(EARLY_MAX);
    // The rest connect after their startup packet, as without early connects.
    expect((await rig.startup(held.at(-1)!)).includes(authOk)).toBe(true);
    for (const s of held) s.destroy();
    await vi.waitFor(() => expect(f!.sockets.size).toBe(0));
    expect(rig.sessions()).toEqual([0]);
  });

  it('--class-from option (the packet may name another class) and --early-connect off: no early connection', async () => {
    for (const over of [{ classFrom: 'option' as const }, { earlyConnect: false }]) {
      const [f] = await rig.setup(['good'], 2000, over);
      const s = await rig.sslRequested();
      await sleep(100);
      expect(f!.accepted).toBe(0);
      expect((await rig.startup(s)).includes(authOk)).toBe(true);
      s.destroy();
      await rig.stop();
    }
  });
});
