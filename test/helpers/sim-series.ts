// A simulated series run in this process through the command itself (the shipped defaults, as a
// user types it), into `out`; fails the test with the command's output when it does not exit 0.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import BenchRun from '../../src/commands/bench/run.js';
import PaperRun from '../../src/commands/paper/run.js';
import { runCommand } from './fixtures.js';

export const REPO = join(import.meta.dirname, '../..');

export async function simSeries(
  cmd: 'bench run' | 'paper run',
  args: string[],
  out: string,
): Promise<string[]> {
  const r = await runCommand(cmd === 'bench run' ? BenchRun : PaperRun, [
    ...args,
    '--driver',
    'sim',
    '--out',
    out,
  ]);
  if (r.code !== 0)
    throw new Error(`plb ${cmd} ${args.join(' ')} exited ${r.code}:\n${r.stderr.slice(-2000)}`);
  return readdirSync(out, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}
