import {
  cpSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import Report from '../../src/commands/report.js';
import { isPlbError } from '../../src/core/errors.js';
import { comparisonDir, writeReports } from '../../src/report/report.js';
import { ensureWritableDir } from '../../src/core/safe-write.js';

const FIXTURES = join(import.meta.dirname, '../fixtures/runs/demo-cascade');
const ROOT = join(import.meta.dirname, '../../package.json');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'plb-report-write-'));
  for (const r of ['demo-cascade-plb-1', 'demo-cascade-rr-1'])
    cpSync(join(FIXTURES, r), join(dir, 'runs', r), { recursive: true });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('did not reject');
}

describe('plb report writes', () => {
  it('refuses a symlinked report.html and leaves its target alone', async () => {
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'keep');
    const link = join(dir, 'runs', 'demo-cascade-plb-1', 'report.html');
    symlinkSync(victim, link);
    const err = await rejection(writeReports([join(dir, 'runs')], { format: 'json', html: true }));
    expect(isPlbError(err, 'BAD_INPUT')).toBe(true);
    expect(err.message).toMatch(/^report\.html: .*report\.html is a symlink; refusing/);
    expect(readFileSync(victim, 'utf8')).toBe('keep');
    expect(readlinkSync(link)).toBe(victim);
    // Nothing was written before the refusal.
    expect(existsSync(join(dir, 'runs', 'demo-cascade-rr-1', 'report.html'))).toBe(false);
  });

  it('refuses a symlinked --html target', async () => {
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'keep');
    symlinkSync(victim, join(dir, 'cmp.html'));
    const err = await rejection(
      writeReports([join(dir, 'runs')], { format: 'json', comparisonHtml: join(dir, 'cmp.html') }),
    );
    expect(err.message).toMatch(/^html: .* is a symlink/);
    expect(readFileSync(victim, 'utf8')).toBe('keep');
  });

  it('checks --compare-to and --html before writing anything', async () => {
    const bad = await rejection(
      writeReports([join(dir, 'runs')], { format: 'json', compareTo: join(dir, 'missing.json') }),
    );
    expect(bad.message).toMatch(/^compare-to: cannot read/);
    const special = await rejection(
      writeReports([join(dir, 'runs')], { format: 'json', comparisonHtml: '/proc/plb-x.html' }),
    );
    expect(special.message).toMatch(/^html: cannot write in \/proc/);
    const noDir = await rejection(
      writeReports([join(dir, 'runs')], { format: 'json', comparisonHtml: join(dir, 'no', 'x.html') }),
    );
    expect(noDir.message).toMatch(/^html: folder .* does not exist/);
    expect(existsSync(join(dir, 'runs', 'demo-cascade-plb-1', 'report.html'))).toBe(false);
    expect(existsSync(join(dir, 'runs', 'comparison.html'))).toBe(false);
  });

  it('writes regular files via rename, comparison.html next to the runs', async () => {
    const out = await writeReports([join(dir, 'runs')], { format: 'json', html: true });
    expect(out.htmlFiles).toContain(join(dir, 'runs', 'comparison.html'));
    for (const f of out.htmlFiles) expect(lstatSync(f).isFile()).toBe(true);
  });

  it('never puts comparison.html into /', () => {
    expect(comparisonDir(['/a/x/run1', '/b/y/run2'])).toBe('/a/x');
    expect(comparisonDir(['/run1', '/run2'])).toBe('/run1');
    expect(comparisonDir(['/a/runs/r1', '/a/runs/r2'])).toBe('/a/runs');
  });
});

describe('which HTML plb report writes', () => {
  const written = (): string[] =>
    [
      join(dir, 'runs', 'demo-cascade-plb-1', 'report.html'),
      join(dir, 'runs', 'demo-cascade-rr-1', 'report.html'),
      join(dir, 'runs', 'comparison.html'),
      join(dir, 'cmp.html'),
    ].filter((f) => existsSync(f));

  it.each(['json', 'csv'] as const)('--%s: none', async (format) => {
    const out = await writeReports([join(dir, 'runs')], { format });
    expect(out.htmlFiles).toEqual([]);
    expect(written()).toEqual([]);
  });

  it('--json with --html: the run pages and the comparison page where --html says', async () => {
    const cmp = join(dir, 'cmp.html');
    const out = await writeReports([join(dir, 'runs')], { format: 'json', comparisonHtml: cmp });
    expect(out.htmlFiles.sort()).toEqual(
      written()
        .filter((f) => !f.endsWith('comparison.html'))
        .sort(),
    );
    expect(out.htmlFiles).toContain(cmp);
  });

  it.each(['table', 'markdown'] as const)('%s: every page by default, none when told', async (format) => {
    expect((await writeReports([join(dir, 'runs')], { format, html: false })).htmlFiles).toEqual([]);
    expect(written()).toEqual([]);
    const out = await writeReports([join(dir, 'runs')], { format });
    expect(out.htmlFiles).toHaveLength(3);
    expect(written()).toHaveLength(3);
  });

  it('the command: --csv prints the CSV and writes no HTML; --html and --skip-html exclude each other', async () => {
    let stdout = '';
    const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stdout += String(chunk);
      return true;
    });
    try {
      await Report.run([join(dir, 'runs'), '--csv'], ROOT);
    } finally {
      out.mockRestore();
    }
    expect(stdout.startsWith('plan,strategy,mix,runs,phase,')).toBe(true);
    expect(written()).toEqual([]);
    let stderr = '';
    const errOut = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr += String(chunk);
      return true;
    });
    const err = (await Report.run(
      [join(dir, 'runs'), '--html', join(dir, 'cmp.html'), '--skip-html'],
      ROOT,
    ).catch((e: unknown) => e)) as Error & { oclif?: { exit?: number } };
    errOut.mockRestore();
    expect(err.oclif?.exit).toBe(1);
    expect(stderr).toMatch(/^Error: [^\n]*cannot also be provided[^\n]*\n$/);
    expect(written()).toEqual([]);
  });
});

describe('--out', () => {
  it.each(['/proc/plb-x', '/dev/null'])('%s fails at once with one line', (p) => {
    let err: unknown;
    try {
      ensureWritableDir(p, '--out');
    } catch (e) {
      err = e;
    }
    expect(isPlbError(err, 'BAD_INPUT')).toBe(true);
    expect((err as Error).message).toMatch(/^--out: /);
    expect((err as Error).message).not.toContain('\n');
  });

  it('creates a missing folder', () => {
    expect(ensureWritableDir(join(dir, 'a', 'b'), '--out')).toBe(join(dir, 'a', 'b'));
    expect(existsSync(join(dir, 'a', 'b'))).toBe(true);
  });
});
