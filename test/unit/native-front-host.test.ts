/**
 * The native front door tells each client's host with its first packet (native/front.c: the peer
 * at accept): what the admission queue and --startup-yield tell hosts apart by. It must be built
 * (npm run build): without it the test is skipped, and fails with CI=true.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { failInCiWithout } from '../helpers/proxy-setup.js';
import { client, closeAll, openFront, relay, relayMissing, startupPacket } from '../helpers/native-front.js';

failInCiWithout(relay !== undefined, `the native front door (${String(relayMissing)})`);

describe.skipIf(relay === undefined)('native front door: the client host', () => {
  afterAll(() => closeAll());

  it('is told with the first packet, one per source address (127.0.0.1, 127.0.0.2)', async () => {
    const rig = openFront();
    const hosts: string[] = [];
    for (const from of ['127.0.0.1', '127.0.0.2', '127.0.0.2']) {
      const c = await client(rig.port, from);
      c.socket.write(startupPacket());
      const t = await rig.arrival();
      hosts.push(t.clientHost);
      c.socket.destroy();
    }
    expect(hosts).toEqual(['127.0.0.1', '127.0.0.2', '127.0.0.2']);
    rig.front.stop(Buffer.alloc(0));
  });
});
