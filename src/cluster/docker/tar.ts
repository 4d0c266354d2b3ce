/**
 * A minimal ustar writer: enough to hand a few small files to dockerode's putArchive (the entry
 * script and the password file) without a dependency.
 */

export interface TarEntry {
  /** Path inside the archive, no leading slash; directories end with '/'. */
  name: string;
  mode: number;
  /** File content; omitted for directories. */
  content?: string | Buffer;
}

function octal(value: number, width: number): string {
  // width-1 octal digits and a NUL, as ustar wants.
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

function header(name: string, mode: number, size: number, type: '0' | '5'): Buffer {
  if (Buffer.byteLength(name) > 99) throw new Error(`tar: name too long: ${name}`);
  const h = Buffer.alloc(512, 0);
  h.write(name, 0, 'utf8');
  h.write(octal(mode, 8), 100, 'ascii');
  h.write(octal(0, 8), 108, 'ascii'); // uid root
  h.write(octal(0, 8), 116, 'ascii'); // gid root
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(Math.floor(Date.now() / 1000), 12), 136, 'ascii');
  h.write('        ', 148, 'ascii'); // checksum field counts as spaces while summing
  h.write(type, 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'ascii');
  return h;
}

/** Builds an uncompressed tar archive of the given entries. */
export function makeTar(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    if (e.content === undefined) {
      parts.push(header(e.name.endsWith('/') ? e.name : `${e.name}/`, e.mode, 0, '5'));
      continue;
    }
    const body = typeof e.content === 'string' ? Buffer.from(e.content, 'utf8') : e.content;
    parts.push(header(e.name, e.mode, body.length, '0'), body);
    const pad = (512 - (body.length % 512)) % 512;
    if (pad > 0) parts.push(Buffer.alloc(pad, 0));
  }
  parts.push(Buffer.alloc(1024, 0));
  return Buffer.concat(parts);
}
