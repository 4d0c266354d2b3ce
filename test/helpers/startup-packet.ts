/** A startup packet (protocol 3.0) with these parameters, as a client's first message. */
export function startupPacket(params: Record<string, string> = { user: 'u', database: 'd' }): Buffer {
  const body = Buffer.from(
    Object.entries(params)
      .map(([k, v]) => `${k}\0${v}\0`)
      .join('') + '\0',
  );
  const out = Buffer.alloc(8 + body.length);
  out.writeInt32BE(out.length, 0);
  out.writeInt32BE(3 << 16, 4);
  body.copy(out, 8);
  return out;
}
