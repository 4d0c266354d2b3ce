import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderTable } from '../../src/report/tables/table-model.js';
import { colourEnabled, tableStyle } from '../../src/core/table-style.js';

const SRC = join(import.meta.dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe('colours', () => {
  it('only at a terminal, never with NO_COLOR or on a dumb terminal', () => {
    const tty = { isTTY: true };
    expect(colourEnabled(tty, {})).toBe(true);
    expect(colourEnabled(tty, { TERM: 'xterm-256color' })).toBe(true);
    expect(colourEnabled({ isTTY: false }, {})).toBe(false);
    expect(colourEnabled({}, {})).toBe(false);
    expect(colourEnabled(tty, { NO_COLOR: '1' })).toBe(false);
    expect(colourEnabled(tty, { NO_COLOR: 'false' })).toBe(false);
    expect(colourEnabled(tty, { TERM: 'dumb' })).toBe(false);
    // NO_COLOR set but empty does not count (no-color.org).
    expect(colourEnabled(tty, { NO_COLOR: '' })).toBe(true);
  });

  it('a plain style overrides cli-table3 defaults', () => {
    expect(tableStyle(false)).toEqual({ head: [], border: [] });
    expect(tableStyle(true).head.length).toBeGreaterThan(0);
  });

  it('every cli-table3 table in src takes its style from tableStyle()', () => {
    const sites = sources(SRC).filter((f) => readFileSync(f, 'utf8').includes('new Table('));
    expect(sites.length).toBeGreaterThanOrEqual(5);
    for (const f of sites) {
      const text = readFileSync(f, 'utf8');
      const tables = text.split('new Table(').slice(1);
      for (const t of tables) {
        // The options object of this constructor call: up to its closing `})`.
        const opts = t.slice(0, t.indexOf('})'));
        expect(opts, relative(SRC, f)).toMatch(/style: (tableStyle\(\)|\{ \.\.\.tableStyle\(\))/);
      }
    }
  });

  it('report tables escape control characters themselves, so colour codes can go around them', () => {
    const out = renderTable({ title: 'plan \u001b[31mred', head: ['Phase'], rows: [['a\u001b]0;x\u0007b']] });
    expect(out).not.toContain('\u001b');
    expect(out).toContain('plan \\x1b[31mred');
    expect(out).toContain('a\\x1b]0;x\\x07b');
  });
});
