/**
 * The archive handed to dockerode's putArchive (the entry script and the password file): a plain
 * ustar stream made by tar-stream, owned by root.
 */
import { pack } from 'tar-stream';

export interface TarEntry {
  /** Path inside the archive, no leading slash; directories end with '/'. */
  name: string;
  mode: number;
  /** File content; omitted for directories. */
  content?: string | Buffer;
}

/** Builds an uncompressed tar archive of the given entries, in their order. */
export async function makeTar(entries: readonly TarEntry[]): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    p.on('data', (c) => chunks.push(c as Buffer));
    p.on('end', () => resolve(Buffer.concat(chunks)));
    p.on('error', reject);
  });
  const common = { uid: 0, gid: 0, mtime: new Date() };
  for (const e of entries) {
    if (e.content === undefined) {
      const name = e.name.endsWith('/') ? e.name : `${e.name}/`;
      p.entry({ ...common, name, mode: e.mode, type: 'directory' });
    } else {
      p.entry({ ...common, name: e.name, mode: e.mode, type: 'file' }, e.content);
    }
  }
  p.finalize();
  return done;
}
