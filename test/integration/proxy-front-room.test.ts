/**
 * One process, many proxies (a library user's own tests, say): the native relay holds a front door
 * per proxy and never frees one, so past its room the next proxy serves on Node's sockets, says so
 * in one line, and works; it never fails to start. Fake backends on loopback.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { FakeRig } from '../helpers/fake-replicas.js';
import { relay } from '../helpers/native-front.js';

describe.skipIf(relay === undefined)('more proxies in one process than the native relay has room for', () => {
  const rigs: FakeRig[] = [];
  afterAll(async () => {
    for (const r of rigs) await r.stop();
  });

  it("the first ones are native; the one past the room is on Node's sockets and serves", async () => {
    let past: FakeRig | undefined;
    for (let i = 0; i < 80 && past === undefined; i++) {
      const rig = new FakeRig();
      rigs.push(rig);
      await rig.setup(['good']);
      if (rig.proxy!.relay === 'js') past = rig;
      else await rig.stop();
    }
    expect(past, 'a proxy on Node’s sockets within 80').toBeDefined();
    // Fronts the other tests of this process took are not counted: at least some native ones first.
    expect(rigs.length).toBeGreaterThan(1);
    expect(
      past!.logs.some((l) =>
        /native relay: not used \(.*no room.*\); clients are served on Node's sockets/.test(l),
      ),
    ).toBe(true);
    const c = await past!.connect();
    expect((await c.query('select 1')).rows).toEqual([{ x: 1 }]);
  });
});
