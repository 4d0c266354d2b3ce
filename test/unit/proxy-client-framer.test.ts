// The client framer sees a Terminate only as a whole message: never in the bytes of another
// message, whichever way the client's stream is cut into reads.
import { serialize } from 'pg-protocol';
import { describe, expect, it } from 'vitest';
import { ClientFramer } from '../../src/proxy/protocol/wire.js';

const TERMINATE = serialize.end();

/** A Query whose text ends in 'X' and the Int32 4: its last 5 bytes read as a Terminate. */
function lookalikeQuery(): Buffer {
  // Not a well-formed query string (no closing NUL), but framed like one, as a framer sees it.
  const body = Buffer.concat([Buffer.from('select 1 --'), Buffer.from([0x58, 0, 0, 0, 4])]);
  const out = Buffer.alloc(5 + body.length);
  out[0] = 0x51; // 'Q'
  out.writeInt32BE(4 + body.length, 1);
  body.copy(out, 5);
  return out;
}

/** Pushes the stream cut at `cuts`; the index of each read that reported a Terminate. */
function feed(stream: Buffer, cuts: number[]): number[] {
  const f = new ClientFramer();
  const seen: number[] = [];
  let at = 0;
  [...cuts, stream.length].forEach((end, k) => {
    if (f.push(stream.subarray(at, end))) seen.push(k);
    at = end;
  });
  return seen;
}

describe('ClientFramer', () => {
  it('a Query whose last 5 bytes look like a Terminate is not one', () => {
    const q = lookalikeQuery();
    expect(q.subarray(q.length - 5)).toEqual(TERMINATE);
    expect(feed(q, [])).toEqual([]);
    // Nor at any cut of it, nor with a real message after it.
    for (let c = 1; c < q.length; c++) expect(feed(q, [c])).toEqual([]);
    const sync = serialize.sync();
    expect(feed(Buffer.concat([q, sync, q]), [])).toEqual([]);
  });

  it('a Terminate split across two chunks is one, at every split', () => {
    for (let c = 1; c < TERMINATE.length; c++) expect(feed(TERMINATE, [c])).toEqual([1]);
    const stream = Buffer.concat([serialize.query('select 1'), TERMINATE]);
    // Wherever the cut, the Terminate ends in the second read.
    for (let c = 1; c < stream.length; c++) expect(feed(stream, [c])).toEqual([1]);
  });

  it('a Terminate after other messages in the same chunk is one', () => {
    const stream = Buffer.concat([lookalikeQuery(), serialize.sync(), TERMINATE]);
    expect(feed(stream, [])).toEqual([0]);
  });

  it('reads no Terminate after a length that is not the protocol', () => {
    const bad = Buffer.from([0x51, 0, 0, 0, 2]);
    expect(feed(Buffer.concat([bad, TERMINATE]), [])).toEqual([]);
  });
});
