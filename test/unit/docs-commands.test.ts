/**
 * Every command line in README.md and docs/ runs as written, or at least names real commands and
 * flags. ```sh blocks are run (each line one command, `plb` = `node bin/run.js`, in a scratch folder
 * with copies of the repository's plans, fixtures, ...); ```console and ```text blocks are shown,
 * not run, but every `plb` invocation in any of them is parsed against the commands' own flag
 * definitions. Relative links must point at files and headings that exist. Needs `npm run build`.
 */
import { execFile } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { Config } from '@oclif/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  commandLines,
  fencedBlocks,
  headingAnchors,
  plbInvocations,
  relativeLinks,
  type DocLine,
} from '../helpers/doc-blocks.js';

const ROOT = resolve(import.meta.dirname, '../..');
const BUILT = existsSync(join(ROOT, 'dist/commands'));
/** Folders a documented command may name by a relative path; copied into each scratch folder. */
const COPIED = [
  'plans',
  'workloads',
  'examples',
  'schemas',
  'calibration',
  'benchmarks',
  'compose',
  'test/fixtures',
];
const RUN_TAGS = new Set(['sh']);
const SHOWN_TAGS = new Set(['console', 'text']);
/** Lines run at once, across files (two cores are typical). */
const PARALLEL = 3;

function docFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
    );
  return ['README.md', ...walk(join(ROOT, 'docs')).map((f) => relative(ROOT, f))];
}
const FILES = docFiles();
const read = (f: string) => readFileSync(join(ROOT, f), 'utf8');

/** The lines of a file's blocks of the given tags. */
function linesOf(file: string, tags: Set<string>): DocLine[] {
  return fencedBlocks(read(file))
    .filter((b) => tags.has(b.tag))
    .flatMap((b) => commandLines(b, b.tag !== 'sh'));
}

type Flag = {
  name: string;
  type: 'boolean' | 'option';
  char?: string;
  allowNo?: boolean;
  aliases?: string[];
  options?: readonly string[];
};
type Cmd = { id: string; strict?: boolean; args: Record<string, unknown>; flags: Record<string, Flag> };

/** Problems with one `plb` invocation, as sentences; none when it parses. */
function checkInvocation(config: Config, args: string[]): string[] {
  if (args.length === 0 || ['--help', '-h', '--version'].includes(args[0]!)) return [];
  let cmd: Cmd | undefined;
  let used = 0;
  for (let k = Math.min(3, args.length); k >= 1 && !cmd; k--) {
    const words = args.slice(0, k);
    if (words.some((w) => w.startsWith('-'))) continue;
    const found = config.findCommand(words.join(':')) as Cmd | undefined;
    if (found) [cmd, used] = [found, k];
  }
  if (!cmd) return [`\`plb ${args[0]}\` is not a command`];
  const name = `plb ${cmd.id.replaceAll(':', ' ')}`;
  const byName = new Map<string, Flag>();
  const byChar = new Map<string, Flag>();
  for (const f of Object.values(cmd.flags)) {
    byName.set(f.name, f);
    for (const a of f.aliases ?? []) byName.set(a, f);
    if (f.char) byChar.set(f.char, f);
  }
  const problems: string[] = [];
  let positional = 0;
  const rest = args.slice(used);
  for (let i = 0; i < rest.length; i++) {
    const tok = rest[i]!;
    if (tok === '--') {
      positional += rest.length - i - 1;
      break;
    }
    let flag: Flag | undefined;
    let value: string | undefined;
    if (tok.startsWith('--')) {
      const [key, ...v] = tok.slice(2).split('=');
      value = v.length > 0 ? v.join('=') : undefined;
      if (key === 'help') continue;
      flag = byName.get(key!);
      if (!flag && key!.startsWith('no-') && byName.get(key!.slice(3))?.allowNo) continue;
      if (!flag) {
        problems.push(`${name} has no flag --${key}`);
        continue;
      }
    } else if (/^-[A-Za-z]$/.test(tok)) {
      if (tok === '-h') continue;
      flag = byChar.get(tok[1]!);
      if (!flag) {
        problems.push(`${name} has no flag ${tok}`);
        continue;
      }
    } else {
      positional++;
      continue;
    }
    if (flag.type === 'option' && value === undefined) value = rest[++i];
    if (flag.type === 'option' && value === undefined) problems.push(`${name} --${flag.name} needs a value`);
    if (flag.options && value !== undefined && !flag.options.includes(value))
      problems.push(`${name} --${flag.name} ${value}: not one of ${flag.options.join(', ')}`);
  }
  const maxArgs = Object.keys(cmd.args ?? {}).length;
  if (cmd.strict !== false && positional > maxArgs)
    problems.push(`${name} takes ${maxArgs} argument(s), given ${positional}`);
  return problems;
}

let config: Config;
const scratch = mkdtempSync(join(tmpdir(), 'plb-docs-'));
const shim = join(scratch, 'bin');
beforeAll(async () => {
  if (!BUILT) return;
  config = await Config.load({ root: ROOT });
  // The CLI as the packed package has it: this dist/ with a command manifest beside it (made here,
  // from the commands just loaded), so a line does not pay for importing every command to find its
  // own. The tree itself must hold no manifest (packaging.test.ts).
  const pkg = join(scratch, 'pkg');
  mkdirSync(join(pkg, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(pkg, 'package.json'));
  cpSync(join(ROOT, 'bin/run.js'), join(pkg, 'bin/run.js'));
  symlinkSync(join(ROOT, 'dist'), join(pkg, 'dist'));
  symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'));
  const own = config.getPluginsList().find((p) => p.root === ROOT) as { manifest?: unknown } | undefined;
  // Under vitest (NODE_ENV=test) oclif loads the commands from src/; the package runs dist/.
  const manifest = own?.manifest as { commands: Record<string, { relativePath?: string[] }> };
  for (const c of Object.values(manifest.commands))
    c.relativePath = c.relativePath?.map((p, i, all) =>
      i === 0 && p === 'src' ? 'dist' : i === all.length - 1 ? p.replace(/\.ts$/, '.js') : p,
    );
  writeFileSync(join(pkg, 'oclif.manifest.json'), JSON.stringify(manifest));
  mkdirSync(shim);
  writeFileSync(
    join(shim, 'plb'),
    `#!/bin/sh\nexec "${process.execPath}" "${join(pkg, 'bin/run.js')}" "$@"\n`,
  );
  chmodSync(join(shim, 'plb'), 0o755);
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A bounded pool: at most PARALLEL lines run at once, whichever file they come from. */
let running = 0;
const waiting: (() => void)[] = [];
async function slot<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= PARALLEL) await new Promise<void>((r) => waiting.push(r));
  running++;
  try {
    return await fn();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

function runLine(cwd: string, text: string): Promise<{ code: number; out: string }> {
  const env = {
    ...process.env,
    PATH: `${shim}:${process.env.PATH ?? ''}`,
    PLB_STATE_DIR: join(cwd, '.state'),
    XDG_CACHE_HOME: join(cwd, '.cache'),
    XDG_CONFIG_HOME: join(cwd, '.config'),
    XDG_DATA_HOME: join(cwd, '.data'),
    NO_COLOR: '1',
  };
  return new Promise((res) => {
    execFile(
      'bash',
      ['-e', '-o', 'pipefail', '-c', text],
      { cwd, env, timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        res({ code, out: `${stderr}\n${stdout}` });
      },
    );
  });
}

describe.skipIf(!BUILT && process.env.CI !== 'true')('documented command lines', () => {
  it('the CLI is built (npm run build) so the documentation can be checked', () => {
    expect(BUILT, 'dist/commands is missing: run `npm run build` first').toBe(true);
  });

  it('README.md stays at most 300 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(300);
  });

  it('every `plb` line names a real command and real flags', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const file of FILES)
      for (const l of linesOf(file, new Set([...RUN_TAGS, ...SHOWN_TAGS])))
        for (const args of plbInvocations(l.text)) {
          checked++;
          for (const p of checkInvocation(config, args))
            problems.push(`${file}:${l.line}: ${p}\n    ${l.text}`);
        }
    console.log(`docs: ${checked} plb invocations checked against the commands' flags`);
    expect(problems).toEqual([]);
  });

  it('relative links point at files and headings that exist', () => {
    const problems: string[] = [];
    for (const file of FILES)
      for (const { line, target } of relativeLinks(read(file))) {
        const [path, anchor] = target.split('#') as [string, string | undefined];
        const dest = path === '' ? file : relative(ROOT, resolve(ROOT, dirname(file), path));
        if (!existsSync(join(ROOT, dest))) problems.push(`${file}:${line}: ${target}: no file ${dest}`);
        else if (anchor && dest.endsWith('.md') && !headingAnchors(read(dest)).has(anchor))
          problems.push(`${file}:${line}: ${target}: no heading #${anchor} in ${dest}`);
      }
    expect(problems).toEqual([]);
  });

  const runnable = FILES.map((f) => [f, linesOf(f, RUN_TAGS)] as const).filter(([, ls]) => ls.length > 0);
  it('runs some lines', () => {
    const n = runnable.reduce((a, [, ls]) => a + ls.length, 0);
    console.log(`docs: ${n} sh lines in ${runnable.length} files are run`);
    expect(n).toBeGreaterThan(0);
  });

  // One test per file, the files at once (the pool bounds the processes); lines in order.
  it.concurrent.each(runnable)(
    '%s: every sh line exits 0',
    async (file, lines) => {
      const cwd = join(scratch, file.replaceAll('/', '_'));
      mkdirSync(cwd, { recursive: true });
      for (const d of COPIED) cpSync(join(ROOT, d), join(cwd, d), { recursive: true });
      const failures: string[] = [];
      const t0 = Date.now();
      for (const l of lines) {
        const r = await slot(() => runLine(cwd, l.text));
        if (r.code !== 0) {
          const tail = r.out.trim().split('\n').slice(-6).join('\n      ');
          failures.push(`${file}:${l.line}: ${l.text}\n    exited ${r.code}:\n      ${tail}`);
        }
      }
      console.log(`docs: ${file}: ${lines.length} sh line(s) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      expect(failures).toEqual([]);
    },
    600_000,
  );
});
