// Reading a small text file a user named on the command line (a workload or cluster file): one
// line naming the flag and the path when it is missing, not a file, or too large.
import { readFileSync, statSync } from 'node:fs';
import { PlbError } from './errors.js';
import { escapeControl } from './text.js';

export function readInputFile(path: string, flag: string, maxBytes: number, hint?: string): string {
  const where = `${flag}: ${escapeControl(path)}`;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new PlbError('BAD_INPUT', `${where}: not a regular file`);
    if (st.size > maxBytes)
      throw new PlbError('BAD_INPUT', `${where}: at most ${maxBytes} bytes, got ${st.size}`);
    return readFileSync(path, 'utf8');
  } catch (err) {
    if (err instanceof PlbError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new PlbError(
      'BAD_INPUT',
      `${where}: cannot read (${code === 'ENOENT' ? 'no such file' : String(code ?? err)})`,
      { ...(hint !== undefined ? { hint } : {}), cause: err },
    );
  }
}
