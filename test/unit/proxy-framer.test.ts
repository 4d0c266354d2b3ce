// The backend framer against every way a stream can be cut into reads: the bytes forwarded are
// the stream's (with the hook's replacements), only whole messages are forwarded while any fits
// in maxHeld, held tails stay valid when the reader reuses its buffer as the session does, and an
// ErrorResponse added when the backend goes away lands at a message boundary.
import { Parser } from 'pg-protocol/dist/parser.js';
import type { BackendMessage } from 'pg-protocol/dist/messages.js';
import { describe, expect, it } from 'vitest';
import { BackendFramer, backendKeyData, errorResponse } from '../../src/proxy/protocol/wire.js';
import { msg, ready } from '../helpers/backend-messages.js';

function decode(buf: Buffer): BackendMessage[] {
  const out: BackendMessage[] = [];
  new Parser().parse(buf, (m) => out.push(m));
  return out;
}

/** Whole-message offsets of a stream of messages. */
function boundaries(stream: Buffer): Set<number> {
  const at = new Set([0]);
  for (let p = 0; p < stream.length; ) at.add((p += 1 + stream.readInt32BE(p + 1)));
  return at;
}

/**
 * Feeds `stream` cut at `cuts` the way the session reads: into one reused buffer, taking a fresh
 * one while the framer holds a tail. Returns what was forwarded, read by read.
 */
function feed(f: BackendFramer, stream: Buffer, cuts: number[]): Buffer[][] {
  let rbuf = Buffer.alloc(stream.length);
  const reads: Buffer[][] = [];
  const at = [0, ...cuts, stream.length];
  for (let i = 1; i < at.length; i++) {
    const n = (at[i] as number) - (at[i - 1] as number);
    stream.copy(rbuf, 0, at[i - 1], at[i]);
    // Each read's forwarded buffers are copied at once: the next read may overwrite rbuf.
    reads.push(f.push(rbuf.subarray(0, n)).map((b) => Buffer.from(b)));
    if (f.heldBytes > 0) rbuf = Buffer.alloc(stream.length);
    else rbuf.fill(0xee); // reused: anything still pointing at it would be corrupted
  }
  return reads;
}

const stream = Buffer.concat([
  msg('T', 3),
  msg('D', 0),
  msg('D', 9),
  msg('C', 2),
  ready('T'),
  msg('E', 7),
  msg('S', 1),
  ready('E'),
]);

describe('BackendFramer, every cut', () => {
  it('one cut at every byte: the stream is forwarded whole, only at message boundaries', () => {
    const ends = boundaries(stream);
    for (let cut = 0; cut <= stream.length; cut++) {
      const f = new BackendFramer();
      const reads = feed(f, stream, [cut]);
      const first = Buffer.concat(reads[0] as Buffer[]);
      expect(ends.has(first.length)).toBe(true);
      expect(Buffer.concat(reads.flat()).equals(stream)).toBe(true);
      expect(f.heldBytes).toBe(0);
      expect(f.txStatus).toBe('E');
      expect(f.lastType).toBe(0x5a);
    }
  });

  it('two cuts at every pair of bytes (three reads): the same bytes, whole messages after each read', () => {
    const ends = boundaries(stream);
    for (let a = 0; a <= stream.length; a++)
      for (let b = a; b <= stream.length; b++) {
        const f = new BackendFramer();
        const reads = feed(f, stream, [a, b]);
        let sent = 0;
        for (const r of reads) {
          sent += Buffer.concat(r).length;
          expect(ends.has(sent)).toBe(true);
        }
        expect(Buffer.concat(reads.flat()).equals(stream)).toBe(true);
      }
  });

  it('a read per byte: the same bytes, and the ReadyForQuery status of the last one', () => {
    const f = new BackendFramer();
    const cuts = Array.from({ length: stream.length - 1 }, (_, i) => i + 1);
    expect(Buffer.concat(feed(f, stream, cuts).flat()).equals(stream)).toBe(true);
    expect(f.txStatus).toBe('E');
  });

  it('several messages in one read are forwarded as the read itself (no copy, no split)', () => {
    const f = new BackendFramer();
    const out = f.push(stream);
    expect(out).toHaveLength(1);
    expect(out[0]).toBe(stream);
  });

  it('a tail is held as a view of its read, not a copy (until its message completes)', () => {
    const f = new BackendFramer();
    const big = msg('D', 1000);
    const out1 = f.push(big.subarray(0, 600));
    expect(out1).toEqual([]);
    expect(f.heldBytes).toBe(600);
    const out2 = f.push(Buffer.concat([big.subarray(600), ready('I')]));
    expect(Buffer.concat(out2)).toEqual(Buffer.concat([big, ready('I')]));
    expect(out2[0]!.buffer).toBe(big.buffer); // the first read's memory, forwarded as it was
  });

  it('a watched message split across reads reaches its hook whole, at every cut', () => {
    const key = backendKeyData(777, Buffer.from([1, 2, 3, 4]));
    const err = errorResponse('ERROR', '22012', 'division by zero');
    const s = Buffer.concat([msg('R', 4), key, msg('S', 6), err, ready('I')]);
    const mine = backendKeyData(1, Buffer.alloc(4));
    const want = Buffer.concat([msg('R', 4), mine, msg('S', 6), err, ready('I')]);
    for (let cut = 0; cut <= s.length; cut++) {
      const seen: string[] = [];
      const f = new BackendFramer({
        types: new Set([0x4b, 0x45]),
        fn: (type, m) => {
          seen.push(type === 0x4b ? `K${m.readInt32BE(5)}` : (decode(m)[0] as { code?: string }).code!);
          return type === 0x4b ? mine : m;
        },
      });
      expect(Buffer.concat(feed(f, s, [cut]).flat()).equals(want)).toBe(true);
      expect(seen).toEqual(['K777', '22012']);
    }
  });

  it('an oversize message passes through as it arrives, at every cut, then boundaries again', () => {
    const s = Buffer.concat([msg('D', 10), msg('D', 100), ready('I'), msg('C', 3)]);
    for (let cut = 0; cut <= s.length; cut++) {
      const f = new BackendFramer(undefined, 64);
      expect(Buffer.concat(feed(f, s, [cut]).flat()).equals(s)).toBe(true);
      expect(f.atBoundary).toBe(true);
      expect(f.heldBytes).toBe(0);
    }
  });
});

describe('BackendFramer, the backend gone after any read', () => {
  it('what was forwarded plus an ErrorResponse decodes as whole messages ending in that error', () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      const f = new BackendFramer();
      const first = feed(f, stream, [cut])[0] as Buffer[];
      // What the session does when the backend closes at a boundary (node-session.ts onBackendClose).
      expect(f.atBoundary).toBe(true);
      const toClient = Buffer.concat([...first, errorResponse('FATAL', '08006', 'replica r1 went away')]);
      // Whole messages up to the end, the last one the error.
      const sent = Buffer.concat(first).length;
      expect(boundaries(toClient).has(toClient.length)).toBe(true);
      const last = decode(toClient.subarray(sent))[0] as BackendMessage & { code?: string };
      expect(last.name).toBe('error');
      expect(last.code).toBe('08006');
    }
  });

  it('inside an oversize message the framer is not at a boundary (the session closes instead)', () => {
    const f = new BackendFramer(undefined, 64);
    f.push(msg('D', 200).subarray(0, 100));
    expect(f.atBoundary).toBe(false);
  });
});
