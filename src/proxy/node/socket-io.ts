/** Writing to and ending a session's sockets the cheap way (node-session.ts). */
import type { Socket } from 'node:net';

/** Up to this many bytes of several buffers are joined into one write rather than a writev. */
const JOIN_MAX_BYTES = 16 * 1024;

/** The byte a client's SSLRequest or GSSENCRequest is answered with, prepared (no string write). */
export const ANSWER_N = Buffer.from('N');
export const ANSWER_S = Buffer.from('S');

/**
 * Writes bufs in order; false when the socket wants a 'drain'. Small pieces (a replaced
 * BackendKeyData between the rest of the server's startup answer, a message joined from several
 * reads) are copied into one buffer: a corked writev costs more in Node's stream layer than the copy.
 */
export function writeAll(s: Socket, bufs: readonly Buffer[]): boolean {
  if (bufs.length === 1) return s.write(bufs[0] as Buffer);
  let total = 0;
  for (const b of bufs) total += b.length;
  if (total <= JOIN_MAX_BYTES) return s.write(Buffer.concat(bufs, total));
  let ok = true;
  s.cork();
  for (const b of bufs) ok = s.write(b);
  s.uncork();
  return ok;
}

/**
 * Ends a socket's writing side unless it is ended already (e.g. by the peer's FIN, allowHalfOpen
 * off): a second end() builds and emits an ERR_STREAM_WRITE_AFTER_END, stack trace and all, which
 * was a cost of every session whose client closed first.
 */
export function endOnce(s: Socket, last?: Buffer): void {
  if (s.writableEnded) return;
  if (last) s.end(last);
  else s.end();
}

/**
 * A backend's read buffer (net's onread reads into it, up to its size at once): the same one
 * again, unless hold() said the last read is still referenced (a pending client write of it, a
 * framer's view of an unfinished message): then a fresh one.
 */
export class ReadBuffer {
  private buf: Buffer | undefined;
  private held = false;

  constructor(private readonly bytes = 32 * 1024) {}

  get(): Buffer {
    if (this.buf === undefined || this.held) {
      this.buf = Buffer.allocUnsafe(this.bytes);
      this.held = false;
    }
    return this.buf;
  }

  hold(): void {
    this.held = true;
  }
}
