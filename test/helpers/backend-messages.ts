// Raw PostgreSQL backend messages for the proxy's framing tests.

/** A backend message of `type` with `n` body bytes. */
export function msg(type: string, n: number, fill = 0x61): Buffer {
  const b = Buffer.alloc(5 + n, fill);
  b.write(type, 0, 'latin1');
  b.writeInt32BE(4 + n, 1);
  return b;
}

/** ReadyForQuery with a transaction status (I, T or E). */
export const ready = (status: string): Buffer => Buffer.from([0x5a, 0, 0, 0, 5, status.charCodeAt(0)]);
