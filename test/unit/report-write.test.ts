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
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isPlbError } from '../../src/errors.js';
import { comparisonDir, writeReports } from '../../src/report/report.js';
import { ensureWritableDir } from '../../src/safe-write.js';

const FIXTURES = join(import.meta.dirname, '../fixtures/runs/demo-cascade');

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
    const err = await rejection(writeReports([join(dir, 'runs')], { format: 'json' }));
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
    const out = await writeReports([join(dir, 'runs')], { format: 'json' });
    expect(out.htmlFiles).toContain(join(dir, 'runs', 'comparison.html'));
    for (const f of out.htmlFiles) expect(lstatSync(f).isFile()).toBe(true);
  });

  it('never puts comparison.html into /', () => {
    expect(comparisonDir(['/a/x/run1', '/b/y/run2'])).toBe('/a/x');
    expect(comparisonDir(['/run1', '/run2'])).toBe('/run1');
    expect(comparisonDir(['/a/runs/r1', '/a/runs/r2'])).toBe('/a/runs');
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
