/**
 * The loop's side of startup pacing (paced-intake.ts): turns are loop iterations (setImmediate),
 * counted here, never timed; and a client refused unread is closed on the proxy's side (loopback).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { refuseOverLimit } from '../../src/proxy/admission/client-limit.js';
import { PacedIntake, type PacedStartup } from '../../src/proxy/admission/paced-intake.js';
import { errorResponse } from '../../src/proxy/protocol/wire.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function listen(onClient: (s: Socket) => void): Promise<number> {
  const srv = createServer({ pauseOnConnect: true }, onClient);
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return (srv.address() as { port: number }).port;
}

const opts = { perTurn: 2, slowPerTurn: 1, lagMs: 1e9, maxHoldMs: 1e9 };

/** A startup stand-in that records what became of it. */
function startup(log: string[], tag: string): PacedStartup {
  return { run: () => log.push(`run ${tag}`), expire: () => log.push(`expire ${tag}`) };
}
const turns = (n: number): Promise<void> =>
  n === 0 ? Promise.resolve() : new Promise((r) => setImmediate(() => void turns(n - 1).then(r)));

describe('PacedIntake', () => {
  it('lets perTurn through at once, the rest a turn at a time, in order', async () => {
    const log: string[] = [];
    const intake = new PacedIntake(opts);
    for (let i = 0; i < 7; i++) intake.offer(startup(log, String(i)));
    expect(log).toEqual(['run 0', 'run 1']);
    expect(intake.held).toBe(5);
    await turns(1);
    expect(log).toEqual(['run 0', 'run 1', 'run 2', 'run 3']);
    await turns(3);
    expect(log).toEqual(Array.from({ length: 7 }, (_, i) => `run ${i}`));
    expect(intake.held).toBe(0);
    expect(intake.counters).toMatchObject({ held: 5, peakHeld: 5, expired: 0 });
  });

  it('one held past maxHoldMs expires instead of running', async () => {
    const log: string[] = [];
    const intake = new PacedIntake({ ...opts, perTurn: 1, maxHoldMs: -1 });
    intake.offer(startup(log, 'a'));
    intake.offer(startup(log, 'b'));
    await turns(2);
    expect(log).toEqual(['run a', 'expire b']);
    expect(intake.counters.expired).toBe(1);
  });

  it('stopping runs the held ones at once (each finds its session closing or routes it)', () => {
    const log: string[] = [];
    const intake = new PacedIntake({ ...opts, perTurn: 1 });
    for (const t of ['a', 'b', 'c']) intake.offer(startup(log, t));
    intake.stop();
    expect(log).toEqual(['run a', 'run b', 'run c']);
    intake.offer(startup(log, 'd'));
    expect(log).toContain('run d');
    expect(intake.held).toBe(0);
  });
});

describe('refuseOverLimit', () => {
  const refusal = errorResponse('FATAL', '53300', 'sorry, too many clients already');
  const ssl = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);
  const startup = (): Buffer => {
    const body = Buffer.from('user\0u\0\0');
    const out = Buffer.alloc(8 + body.length);
    out.writeInt32BE(out.length, 0);
    out.writeInt32BE(3 << 16, 4);
    body.copy(out, 8);
    return out;
  };

  /** What a client sending `first` (then `then` once it has an answer) reads before the proxy's FIN. */
  function exchange(first: Buffer, then?: Buffer): Promise<{ got: Buffer; serverReadEnd: boolean }> {
    return new Promise((resolve) => {
      let serverReadEnd: Promise<boolean> | undefined;
      void listen((s) => {
        // Closed because it read the client's end (not by the linger timer's destroy).
        serverReadEnd = new Promise((r) => s.on('close', () => r(s.readableEnded)));
        refuseOverLimit(s, refusal);
      }).then((port) => {
        const c = connect({ host: '127.0.0.1', port });
        const chunks: Buffer[] = [];
        c.on('connect', () => c.write(first));
        c.on('error', () => undefined);
        c.on('data', (d: Buffer) => {
          if (chunks.length === 0 && then) c.write(then);
          chunks.push(d);
        });
        // The client reads to the proxy's FIN and closes; the proxy's side must follow.
        c.on('end', () => {
          c.end();
          void (serverReadEnd as Promise<boolean>).then((e) =>
            resolve({ got: Buffer.concat(chunks), serverReadEnd: e }),
          );
        });
      });
    });
  }

  it('tells a client its refusal at its startup packet, and closes its side when the client closes', async () => {
    const r = await exchange(Buffer.concat([startup(), Buffer.alloc(64, 1)]));
    expect(r.got.equals(refusal)).toBe(true);
    expect(r.serverReadEnd).toBe(true);
  });

  it("answers an SSLRequest 'N' first, as a server without SSL", async () => {
    const r = await exchange(ssl, startup());
    expect(r.got.toString('latin1', 0, 1)).toBe('N');
    expect(r.got.subarray(1).equals(refusal)).toBe(true);
  });

  it('closes a Terminate (a length no packet has) without a word', async () => {
    const r = await exchange(Buffer.from([0x58, 0, 0, 0, 4]));
    expect(r.got.length).toBe(0);
  });
});
