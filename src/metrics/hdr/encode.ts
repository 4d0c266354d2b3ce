// HdrHistogram's compressed base64 (V2 encoding, deflated), the bytes hdr-histogram-js writes,
// without its per-call costs: it grows a ByteBuffer a byte at a time and formats each interval
// line's times through Intl. A run writes one to seven of these a second (seconds.jsonl and the
// per-second logs); the deflate itself is zlib's, called as the library calls it.
import { deflateSync } from 'node:zlib';
import * as hdr from 'hdr-histogram-js';
import type { Histogram } from 'hdr-histogram-js';
import { firstCountIndex, withCounts } from './counts.js';

const V2_COOKIE = 0x1c849303 | 0x10;
const V2_COMPRESSED_COOKIE = 0x1c849304 | 0x10;
/** Header (40 bytes) and at most 9 bytes a count: grown when a histogram needs more. */
let scratch = new Uint8Array(64 * 1024);
const view = (): DataView => new DataView(scratch.buffer, scratch.byteOffset, scratch.byteLength);
let scratchView = view();

function ensure(bytes: number): void {
  if (bytes <= scratch.length) return;
  scratch = new Uint8Array(Math.max(bytes, scratch.length * 2));
  scratchView = view();
}

/** Java's putLong as the library does it: the high word is floor(v / 2^32), the low one v mod 2^32. */
function putInt64(at: number, v: number): void {
  scratchView.setUint32(at, Math.floor(v / 2 ** 32) >>> 0);
  scratchView.setUint32(at + 4, v >>> 0);
}

/** ZigZag LEB128-64b9B (the library's ZigZagEncoding): 8 bytes of 7 bits, then a full 9th. */
function putVarint(at: number, signed: number): number {
  let v = signed >= 0 ? signed * 2 : -signed * 2 - 1;
  for (let i = 0; i < 8; i++) {
    if (v < 128) {
      scratch[at++] = v;
      return at;
    }
    scratch[at++] = v % 128 | 0x80;
    v = Math.floor(v / 128);
  }
  scratch[at++] = v % 256;
  return at;
}

/** The uncompressed V2 encoding into the scratch buffer; returns its length. */
function encodeV2(h: hdr.JsHistogram, counts: ArrayLike<number>): number {
  const limit = h.countsArrayIndex(h.maxValue) + 1;
  ensure(40 + 9 * limit);
  scratchView.setUint32(0, V2_COOKIE >>> 0);
  scratchView.setUint32(8, 1);
  scratchView.setUint32(12, h.numberOfSignificantValueDigits >>> 0);
  putInt64(16, h.lowestDiscernibleValue);
  putInt64(24, h.highestTrackableValue);
  putInt64(32, 1);
  let at = 40;
  let i = 0;
  const from = firstCountIndex(h);
  while (i < limit) {
    const count = counts[i++] as number;
    if (count < 0) throw new Error(`cannot encode a histogram with a negative count at ${i - 1}`);
    if (count === 0) {
      let zeros = 1;
      // Up to the least non-zero value's index the counts are 0: known, not walked.
      if (i < from) {
        zeros += from - i;
        i = from;
      }
      while (i < limit && counts[i] === 0) {
        zeros++;
        i++;
      }
      at = putVarint(at, zeros > 1 ? -zeros : 0);
    } else at = putVarint(at, count);
  }
  scratchView.setUint32(4, (at - 40) >>> 0);
  return at;
}

// Equal encodings deflate alike: the small ones (an empty second, a handful of values) repeat.
const SMALL = 96;
const memo = new Map<string, string>();
const MEMO_MAX = 4096;

/** `hdr.encodeIntoCompressedBase64(h)`, byte for byte. */
export function encodeCompressedBase64(h: Histogram): string {
  const js = withCounts(h);
  if (js === null) return hdr.encodeIntoCompressedBase64(h);
  const n = encodeV2(js.h, js.counts);
  const key = n <= SMALL ? Buffer.from(scratch.buffer, scratch.byteOffset, n).toString('latin1') : null;
  if (key !== null) {
    const hit = memo.get(key);
    if (hit !== undefined) return hit;
  }
  const deflated = deflateSync(scratch.subarray(0, n));
  // The library's buffer starts at 16 bytes: a shorter result would keep its zeros (never seen).
  const out = Buffer.alloc(Math.max(16, 8 + deflated.length));
  out.writeUInt32BE(V2_COMPRESSED_COOKIE >>> 0, 0);
  out.writeUInt32BE(deflated.length, 4);
  deflated.copy(out, 8);
  const b64 = out.toString('base64');
  if (key !== null) {
    if (memo.size >= MEMO_MAX) memo.clear();
    memo.set(key, b64);
  }
  return b64;
}

/** The log's time format: 3 decimals, padded to 5 (the library formats it through Intl). */
const time = (s: number): string => s.toFixed(3).padStart(5);

/**
 * One interval line of an HdrHistogram log, as HistogramLogWriter.outputIntervalHistogram writes
 * it: start and length in seconds, max / maxRatio, the compressed histogram; `Tag=` when tagged.
 */
export function intervalLogLine(h: Histogram, startS: number, endS: number, maxRatio: number): string {
  const line = `${time(startS)},${time(endS - startS)},${time(h.maxValue / maxRatio)},${encodeCompressedBase64(h)}\n`;
  return h.tag && h.tag !== 'NO TAG' ? `Tag=${h.tag},${line}` : line;
}
