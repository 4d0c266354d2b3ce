/**
 * The few backend messages the proxy writes itself (ErrorResponse, BackendKeyData), the
 * CancelRequest it forwards, and a framer that follows message boundaries on the backend stream
 * without decoding it (decoding, where needed, is pg-protocol's), and one on the client stream
 * that tells a Terminate from bytes that only look like one.
 */
import { serialize } from 'pg-protocol';
import { CANCEL_REQUEST_CODE } from './startup-packet.js';

/** ErrorResponse ('E'): severity (S and V), SQLSTATE (C), message (M). */
export function errorResponse(severity: 'FATAL' | 'ERROR', code: string, message: string): Buffer {
  const fields = Buffer.from(`S${severity}\0V${severity}\0C${code}\0M${message}\0\0`, 'utf8');
  const out = Buffer.alloc(5 + fields.length);
  out[0] = 0x45; // 'E'
  out.writeInt32BE(4 + fields.length, 1);
  fields.copy(out, 5);
  return out;
}

/** BackendKeyData ('K'): the key a client sends back in a CancelRequest. */
export function backendKeyData(pid: number, secret: Buffer): Buffer {
  const out = Buffer.alloc(9 + secret.length);
  out[0] = 0x4b; // 'K'
  out.writeInt32BE(8 + secret.length, 1);
  out.writeInt32BE(pid, 5);
  secret.copy(out, 9);
  return out;
}

/** CancelRequest for a backend's key (pg-protocol's serializer for the usual 4-byte secret). */
export function cancelRequest(pid: number, secret: Buffer): Buffer {
  if (secret.length === 4) return serialize.cancel(pid, secret.readInt32BE(0));
  const out = Buffer.alloc(12 + secret.length);
  out.writeInt32BE(12 + secret.length, 0);
  out.writeInt32BE(CANCEL_REQUEST_CODE, 4);
  out.writeInt32BE(pid, 8);
  secret.copy(out, 12);
  return out;
}

export const MSG_ERROR = 0x45; // 'E'
export const MSG_BACKEND_KEY = 0x4b; // 'K'
export const MSG_READY = 0x5a; // 'Z'

/**
 * Called for a whole message of a watched type; returns what to forward in its place (the same
 * buffer, a replacement, or undefined to drop it).
 */
export type MessageHook = (type: number, msg: Buffer) => Buffer | undefined;

/**
 * Follows message boundaries (type byte + Int32 length) on the backend's byte stream. Forwards
 * only whole messages, holding back the unfinished tail of a chunk, so the proxy can always add
 * an ErrorResponse at a boundary when the backend goes away mid-message. A message longer than
 * `maxHeld` is passed through as it arrives instead (then `atBoundary` is false until it ends).
 * Nothing is copied or allocated per message: a chunk of whole messages is forwarded as it is, and
 * a held tail is kept as a view of its chunk (forwarded with the rest of its message as separate
 * buffers, one writev), so the caller must not reuse a chunk's memory while `heldBytes > 0`. Only
 * a tail of fewer than 5 bytes (a split header) is copied, and a watched message split across
 * chunks is joined for its hook.
 */
export class BackendFramer {
  /** The unfinished message's bytes so far: views of the chunks (or one copy, header split). */
  private held: Buffer[] = [];
  private heldLen = 0;
  /** Total size of the held message (type byte included); 0 while its header is incomplete. */
  private heldTotal = 0;
  /** Bytes still to come of an oversize message passed through as it arrives. */
  private passing = 0;
  /** Type of the last message forwarded (whole or started), -1 before any. */
  lastType = -1;
  /** The status byte of the last ReadyForQuery (-1 before one): kept as a number, no string per query. */
  private txByte = -1;
  /** ReadyForQuery messages seen: the first ends the startup, each later one a query. */
  readyCount = 0;

  constructor(
    /** Types the hook sees (by type byte); none when undefined. */
    public hook: { types: ReadonlySet<number>; fn: MessageHook } | undefined = undefined,
    private readonly maxHeld = 1 << 20,
  ) {}

  /** False while an oversize message is partly forwarded. */
  get atBoundary(): boolean {
    return this.passing === 0;
  }

  /** Transaction status of the last ReadyForQuery: I (idle), T, E; undefined before one. */
  get txStatus(): string | undefined {
    return this.txByte < 0 ? undefined : String.fromCharCode(this.txByte);
  }

  /** Bytes held back (part of an unfinished message). */
  get heldBytes(): number {
    return this.heldLen;
  }

  /** Takes a chunk from the backend; returns the buffers to forward to the client, in order. */
  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let buf = chunk;
    if (this.passing > 0) {
      const n = Math.min(this.passing, buf.length);
      out.push(buf.subarray(0, n));
      this.passing -= n;
      buf = buf.subarray(n);
      if (buf.length === 0) return out;
    }
    if (this.heldLen > 0) {
      if (this.heldTotal === 0) {
        // A split header (rare, at most 4 bytes held): joined with the chunk and walked again.
        buf = Buffer.concat([this.held[0] as Buffer, buf]);
        this.dropHeld();
      } else {
        const need = this.heldTotal - this.heldLen;
        if (buf.length < need) {
          this.held.push(buf);
          this.heldLen += buf.length;
          return out;
        }
        this.held.push(buf.subarray(0, need));
        this.forwardHeld(out);
        buf = buf.subarray(need);
      }
    }
    this.walk(buf, out);
    return out;
  }

  /** Whole messages of buf to out; its unfinished tail held (or, oversize, passed on). */
  private walk(buf: Buffer, out: Buffer[]): void {
    let pos = 0;
    let start = 0;
    while (buf.length - pos >= 5) {
      const type = buf[pos] as number;
      const len = buf.readInt32BE(pos + 1);
      if (len < 4) throw new Error(`backend protocol error: message length ${len}`);
      const total = 1 + len;
      if (buf.length - pos < total) {
        if (total <= this.maxHeld) {
          this.held.push(buf.subarray(pos));
          this.heldLen = buf.length - pos;
          this.heldTotal = total;
          break;
        }
        // Oversize: forward what there is and let the rest through as it comes.
        this.lastType = type;
        this.passing = total - (buf.length - pos);
        out.push(buf.subarray(start));
        return;
      }
      this.lastType = type;
      if (type === MSG_READY && len >= 5) {
        this.txByte = buf[pos + 5] as number;
        this.readyCount += 1;
      }
      const hook = this.hook;
      if (hook !== undefined && hook.types.has(type)) {
        const msg = buf.subarray(pos, pos + total);
        const repl = hook.fn(type, msg);
        if (repl !== msg) {
          if (pos > start) out.push(buf.subarray(start, pos));
          if (repl !== undefined) out.push(repl);
          start = pos + total;
        }
      }
      pos += total;
    }
    // The usual case, a chunk of whole messages none of which was replaced: the chunk itself.
    if (start === 0 && pos === buf.length) out.push(buf);
    else if (pos > start) out.push(buf.subarray(start, pos));
    const rest = buf.length - pos;
    if (rest > 0 && this.heldLen === 0) {
      // Fewer than 5 bytes: the header itself is split; copied, as the chunk's memory may be reused.
      this.held.push(Buffer.from(buf.subarray(pos)));
      this.heldLen = rest;
    }
  }

  /** The held message is complete (its last piece pushed): forwarded, through the hook if watched. */
  private forwardHeld(out: Buffer[]): void {
    const parts = this.held;
    const total = this.heldTotal;
    this.dropHeld();
    const first = parts[0] as Buffer;
    const type = first[0] as number;
    this.lastType = type;
    const hook = this.hook;
    if ((type === MSG_READY && total >= 6) || (hook !== undefined && hook.types.has(type))) {
      const msg = Buffer.concat(parts, total);
      if (type === MSG_READY && total >= 6) {
        this.txByte = msg[5] as number;
        this.readyCount += 1;
      }
      const repl = hook !== undefined && hook.types.has(type) ? hook.fn(type, msg) : msg;
      if (repl !== undefined) out.push(repl);
      return;
    }
    for (const p of parts) out.push(p);
  }

  private dropHeld(): void {
    this.held = [];
    this.heldLen = 0;
    this.heldTotal = 0;
  }
}

const MSG_TERMINATE = 0x58; // 'X'

/**
 * Follows message boundaries (type byte + Int32 length) on the client's stream after its startup
 * packet, only so that a Terminate is seen as a whole message ('X', length 4), never in the bytes
 * of another (a Query that ends in what looks like one). Forwards nothing and copies nothing but a
 * split header's few bytes. A length under 4 is not the protocol: PostgreSQL will say so and close,
 * and no Terminate is read from the stream after it (as the native relay does).
 */
export class ClientFramer {
  private readonly header = Buffer.alloc(5);
  private headerLen = 0;
  /** Bytes still to come of the current message's body. */
  private left = 0;
  private unframed = false;

  /** Takes a chunk from the client; true when a whole Terminate ended in it. */
  push(chunk: Buffer): boolean {
    let terminated = false;
    let i = 0;
    const n = chunk.length;
    while (i < n && !this.unframed) {
      if (this.left > 0) {
        const take = Math.min(this.left, n - i);
        this.left -= take;
        i += take;
        continue;
      }
      let type: number;
      let len: number;
      if (this.headerLen === 0 && n - i >= 5) {
        type = chunk[i] as number;
        len = chunk.readInt32BE(i + 1);
        i += 5;
      } else {
        // A header split across chunks: its bytes gathered until all five are in.
        const take = Math.min(5 - this.headerLen, n - i);
        chunk.copy(this.header, this.headerLen, i, i + take);
        this.headerLen += take;
        i += take;
        if (this.headerLen < 5) break;
        this.headerLen = 0;
        type = this.header[0] as number;
        len = this.header.readInt32BE(1);
      }
      if (len < 4) this.unframed = true;
      else if (type === MSG_TERMINATE && len === 4) terminated = true;
      else this.left = len - 4;
    }
    return terminated;
  }
}
