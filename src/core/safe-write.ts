/**
 * Writing files at paths a user (or a shared folder) chose: never through a symlink, never into a
 * special file, and checked before the first byte is written, so a bad path fails at once with one
 * line instead of half-way through.
 */
import { randomBytes } from 'node:crypto';
import {
  accessSync,
  constants,
  existsSync,
  lstatSync,
  mkdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { PlbError } from './errors.js';

function code(err: unknown): string {
  return String((err as NodeJS.ErrnoException).code ?? err);
}

/** A temp file created and removed in `dir` ('wx'): the only proof that a folder takes new files. */
function probe(dir: string, field: string): void {
  const tmp = join(dir, `.plb-probe-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    writeFileSync(tmp, '', { flag: 'wx', mode: 0o600 });
  } catch (err) {
    throw new PlbError('BAD_INPUT', `${field}: cannot write in ${dir} (${code(err)})`);
  }
  rmSync(tmp, { force: true });
}

/**
 * Checks that `file` can be written by writeFileSafe: its folder exists and takes files, and it is
 * absent or a regular file (not a symlink, folder, device or fifo). Returns the absolute path.
 */
export function checkWritableFile(file: string, field: string): string {
  const abs = resolve(file);
  let st;
  try {
    st = lstatSync(abs);
  } catch (err) {
    if (code(err) !== 'ENOENT') throw new PlbError('BAD_INPUT', `${field}: cannot use ${abs} (${code(err)})`);
  }
  if (st?.isSymbolicLink())
    throw new PlbError('BAD_INPUT', `${field}: ${abs} is a symlink; refusing to write through it`);
  if (st && !st.isFile()) throw new PlbError('BAD_INPUT', `${field}: ${abs} is not a regular file`);
  const dir = dirname(abs);
  let dst;
  try {
    dst = statSync(dir);
  } catch (err) {
    throw new PlbError('BAD_INPUT', `${field}: folder ${dir} does not exist (${code(err)})`);
  }
  if (!dst.isDirectory()) throw new PlbError('BAD_INPUT', `${field}: ${dir} is not a folder`);
  probe(dir, field);
  return abs;
}

/**
 * Writes `file` as a new temp file in the same folder renamed over it: a symlink at `file` is
 * refused (rename would replace the link, but the user meant its target), and a reader never sees a
 * half-written file.
 */
export function writeFileSafe(file: string, content: string | Buffer, field: string, mode = 0o644): void {
  const abs = checkWritableFile(file, field);
  const tmp = `${abs}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, content, { flag: 'wx', mode });
    renameSync(tmp, abs);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw new PlbError('BAD_INPUT', `${field}: cannot write ${abs} (${code(err)})`, { cause: err });
  }
}

/**
 * Makes sure `dir` is a folder that takes new files, creating it (and its parents) when missing.
 * Special or unwritable places (/proc/x, a file, a read-only mount) fail with one line.
 */
export function ensureWritableDir(dir: string, field: string): string {
  const abs = makeDirs(dir, field);
  let st;
  try {
    st = statSync(abs);
  } catch (err) {
    throw new PlbError('BAD_INPUT', `${field}: cannot use ${abs} (${code(err)})`);
  }
  if (!st.isDirectory()) throw new PlbError('BAD_INPUT', `${field}: ${abs} is not a folder`);
  try {
    accessSync(abs, constants.W_OK | constants.X_OK);
  } catch (err) {
    throw new PlbError('BAD_INPUT', `${field}: ${abs} is not writable (${code(err)})`);
  }
  probe(abs, field);
  return abs;
}

/**
 * mkdir -p. Not mkdirSync({ recursive }): on Node 20 it spins forever on /proc/x (ENOENT under an
 * existing folder). Returns the absolute path; BAD_INPUT naming the field when a level cannot be made.
 */
export function makeDirs(dir: string, field: string, mode = 0o777): string {
  const abs = resolve(dir);
  const missing: string[] = [];
  for (let d = abs; !existsSync(d); d = dirname(d)) {
    missing.unshift(d);
    if (dirname(d) === d) break;
  }
  for (const d of missing) {
    try {
      mkdirSync(d, { mode });
    } catch (err) {
      if (code(err) === 'EEXIST') continue;
      throw new PlbError('BAD_INPUT', `${field}: cannot create folder ${d} (${code(err)})`);
    }
  }
  return abs;
}
