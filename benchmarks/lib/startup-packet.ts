// A PostgreSQL startup packet (protocol 3.0) as the burst benchmarks' raw sockets send it.

/** user, database and application_name, as a client's first message. */
export function startupPacket(user: string, database: string, applicationName: string): Buffer {
  const body = Buffer.from(`user\0${user}\0database\0${database}\0application_name\0${applicationName}\0\0`);
  const out = Buffer.alloc(8 + body.length);
  out.writeInt32BE(out.length, 0);
  out.writeInt32BE(3 << 16, 4);
  body.copy(out, 8);
  return out;
}
