/**
 * The package root, its version and the files it ships (plans/, compose/), found by walking up
 * from this module: works from src/ (tsx, vitest) and from dist/ alike.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PlbError } from './errors.js';

let root: string | undefined;

/** The folder holding plb's package.json. */
export function packageRoot(): string {
  if (root !== undefined) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pj = join(dir, 'package.json');
    if (existsSync(pj)) {
      try {
        if ((JSON.parse(readFileSync(pj, 'utf8')) as { name?: string }).name === 'plb') return (root = dir);
      } catch {
        // not ours; keep walking
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new PlbError('INTERNAL', 'cannot find the plb package root');
    dir = up;
  }
}

/** plb's version (container labels, config.json). */
export function packageVersion(): string {
  const pj = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version?: string };
  return pj.version ?? '0.0.0';
}

/** Path of a file under compose/ (the entry script, the image builder). */
export function composeFile(name: string): string {
  const file = join(packageRoot(), 'compose', name);
  if (!existsSync(file)) throw new PlbError('INTERNAL', `missing ${file}`, { hint: 'reinstall plb' });
  return file;
}

/** The container entry script (compose/plb-entry.sh). */
export function entryScript(): string {
  return readFileSync(composeFile('plb-entry.sh'), 'utf8');
}
