// A local cluster's data folder under the state folder: made reachable for the postgres OS user,
// marked with the id of the instance that made it, and removed only by that instance.
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { type ClusterSpec } from '../../run-format/cluster-record.js';
import { PlbError } from '../../core/errors.js';
import { ensureClusterDir, readClusterRecord } from '../state.js';
import { type RunAs } from './binaries.js';

/** In the data folder: the id of the cluster instance that made it (down checks it). */
const ID_FILE = '.plb-id';

/** The first folder on the way to `dir` that `who` may not traverse, or null. */
export function blockedAncestor(dir: string, who: RunAs): string | null {
  let d = resolve(dir);
  for (;;) {
    const st = statSync(d);
    const ok =
      st.uid === who.uid
        ? (st.mode & 0o100) !== 0
        : st.gid === who.gid
          ? (st.mode & 0o010) !== 0
          : (st.mode & 0o001) !== 0;
    if (!ok) return d;
    const up = dirname(d);
    if (up === d) return null;
    d = up;
  }
}

/** Files the server reads must belong to the postgres user when we run as root. */
export function ownFile(path: string, runAs: RunAs | undefined): void {
  if (runAs) chownSync(path, runAs.uid, runAs.gid);
}

/** A fresh, empty data folder carrying the cluster's id. */
export function prepareDataFolder(spec: ClusterSpec, dataRoot: string, runAs: RunAs | undefined): void {
  const cdir = ensureClusterDir(spec.stateDir, spec.name);
  if (runAs) {
    // The postgres user must traverse (not read) the state folders to reach its data dirs:
    // add o+x to the two folders plb made, and check the ancestors (we never chmod those).
    for (const d of [spec.stateDir, cdir]) {
      const mode = statSync(d).mode & 0o7777;
      if ((mode & 0o001) === 0) chmodSync(d, mode | 0o011);
    }
    const blocked = blockedAncestor(dirname(resolve(spec.stateDir)), runAs);
    if (blocked) {
      throw new PlbError('CLUSTER_UP_FAILED', `the postgres user cannot reach ${blocked}`, {
        hint: 'set PLB_STATE_DIR to a folder the postgres OS user can traverse (e.g. under /tmp)',
      });
    }
  }
  rmSync(dataRoot, { recursive: true, force: true });
  mkdirSync(dataRoot, { mode: 0o700 });
  // A driver made without an id (the library's createLocalDriver) still marks the record's id.
  const id = spec.id ?? readClusterRecord(spec.stateDir, spec.name)?.id;
  if (id !== undefined) writeFileSync(join(dataRoot, ID_FILE), id + '\n');
  ownFile(dataRoot, runAs);
}

/** The data folder is this instance's: it carries our id (or we are a down by name, without one). */
export function ownsDataFolder(spec: ClusterSpec, dataRoot: string): boolean {
  if (spec.id === undefined) return true;
  try {
    return readFileSync(join(dataRoot, ID_FILE), 'utf8').trim() === spec.id;
  } catch {
    return false;
  }
}

/** The server folders found in the data folder (the servers `down` must stop). */
export function serverFolders(dataRoot: string): string[] {
  if (!existsSync(dataRoot)) return [];
  return readdirSync(dataRoot, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => join(dataRoot, d.name));
}

/** Removes the data folder, its id file last. */
export function removeDataFolder(dataRoot: string): void {
  // A down cut short (a kill, a crash) leaves a folder that still says whose it is, so the next
  // down removes the rest instead of leaving it alone.
  if (existsSync(dataRoot))
    for (const e of readdirSync(dataRoot))
      if (e !== ID_FILE) rmSync(join(dataRoot, e), { recursive: true, force: true });
  rmSync(dataRoot, { recursive: true, force: true });
}
