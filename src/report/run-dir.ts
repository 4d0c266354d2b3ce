// Finds the run directories `plb report` was pointed at and loads them. Reading one is metrics'
// loadRun (the one parser of the run-directory format); this walks folders and keeps the runs
// apart.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PlbError } from '../core/errors.js';
import { loadRun, type LoadedRun } from '../metrics/store/load-run.js';
import { RUN_FILES } from '../metrics/store/run-writer.js';

/**
 * The runs under `paths`, each with a run id of its own. A simulated series counts its run ids
 * from virtual time 0, so two series (two seeds, say) hold the same ids; the report keys runs by
 * id, so a repeated one is read as `<id>~2`, `<id>~3` (in directory order) instead of pooling one
 * run's seconds twice.
 */
export function loadRuns(paths: readonly string[]): LoadedRun[] {
  const seen = new Map<string, number>();
  return findRunDirs(paths).map((dir) => {
    const run = loadRun(dir);
    const id = run.summary.runId;
    const n = (seen.get(id) ?? 0) + 1;
    seen.set(id, n);
    return n === 1 ? run : { ...run, summary: { ...run.summary, runId: `${id}~${n}` } };
  });
}

/**
 * Expands each path to the run directories under it (a dir with summary.json, or with a RUNNING
 * marker: a crashed run, listed too; searched 3 levels deep).
 */
export function findRunDirs(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const p of paths) {
    const abs = resolve(p);
    if (!existsSync(abs) || !statSync(abs).isDirectory()) {
      throw new PlbError('RUN_DIR_INVALID', `run-dir: ${p} is not a directory`);
    }
    const found = walk(abs, 3);
    if (found.length === 0) {
      throw new PlbError(
        'RUN_DIR_INVALID',
        `run-dir: no run directory (${RUN_FILES.summary} or ${RUN_FILES.running}) in ${p}`,
        {
          hint: existsSync(join(abs, RUN_FILES.timeline))
            ? 'the run stopped before it wrote its summary'
            : 'pass a directory made by plb bench run',
        },
      );
    }
    for (const d of found) if (!out.includes(d)) out.push(d);
  }
  return out;
}

/** A run directory: finished (summary.json) or killed before it finished (RUNNING marker). */
function isRunDir(dir: string): boolean {
  return existsSync(join(dir, RUN_FILES.summary)) || existsSync(join(dir, RUN_FILES.running));
}

function walk(dir: string, depth: number): string[] {
  if (isRunDir(dir)) return [dir];
  if (depth === 0) return [];
  const subdirs = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith('.') && e.name !== RUN_FILES.histograms)
    .map((e) => e.name)
    .sort();
  return subdirs.flatMap((name) => walk(join(dir, name), depth - 1));
}
