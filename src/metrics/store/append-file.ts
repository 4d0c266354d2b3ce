import { appendFileSync, closeSync, openSync, writeSync } from 'node:fs';

/** A file a run appends to as it goes; what is written is on disk at once (no buffer here). */
export interface AppendFile {
  write(text: string): void;
  close(): void;
}

/**
 * Appends through one descriptor held open until close(): one system call for a second's lines,
 * where `appendFileSync` would open and close the file each time. After close() a write still
 * lands, through `appendFileSync`, and leaves no descriptor open.
 */
export function appendFile(path: string): AppendFile {
  let fd: number | undefined;
  let closed = false;
  return {
    write(text) {
      if (text === '') return;
      if (closed) return appendFileSync(path, text);
      fd ??= openSync(path, 'a');
      // A regular file takes it in one write; the loop is for a short one all the same.
      const bytes = Buffer.from(text);
      for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off);
    },
    close() {
      closed = true;
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
