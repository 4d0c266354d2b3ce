// A table as strings (TableModel), its cell formats, and its terminal and markdown renderings.
import Table from 'cli-table3';
import type { Stat } from '../../run-format/report.js';
import { tableStyle } from '../../core/table-style.js';
import { escapeControl } from '../../core/text.js';

/**
 * wide: every column, with IQRs (HTML and markdown, and the terminal with --wide). false: compact
 * for a terminal, at most 100 columns for the demo plan: medians and the columns that tell the story.
 */
export interface TableOptions {
  wide?: boolean;
}

/** A table as strings, rendered later to the terminal, markdown or HTML. */
export interface TableModel {
  title: string;
  head: string[];
  rows: string[][];
}

export type Fmt = (v: number) => string;
export const fixed =
  (digits: number): Fmt =>
  (v) =>
    v.toFixed(digits);
export const pct: Fmt = (v) => `${(v * 100).toFixed(1)}%`;
export const signedPct: Fmt = (v) => `${v > 0 ? '+' : ''}${(v * 100).toFixed(1)}%`;
export const seconds: Fmt = (v) => (v / 1000).toFixed(1);
export const int: Fmt = (v) => String(Math.round(v * 10) / 10);

export function fmtValue(v: number | null, f: Fmt): string {
  return v === null ? '-' : f(v);
}

/**
 * `12.0` for one run (or when every repeat gave the same value); `12.0 [11.0..13.0]` (median
 * [q1..q3]) when the IQR comes from several runs that differ.
 */
export function fmtStat(s: Stat, f: Fmt, wide = true): string {
  if (s.median === null) return '-';
  if (!wide || s.n <= 1 || s.q1 === null || s.q3 === null || f(s.q1) === f(s.q3)) return f(s.median);
  return `${f(s.median)} [${f(s.q1)}..${f(s.q3)}]`;
}

export function renderTable(t: TableModel): string {
  // Names come from files on disk: their control characters are escaped here, before colour
  // codes are put around them (the caller cannot tell the two apart afterwards).
  const table = new Table({
    head: t.head.map(escapeControl),
    style: tableStyle(),
    // Compact: no separator line between body rows.
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
  });
  for (const r of t.rows) table.push(r.map(escapeControl));
  return `${escapeControl(t.title)}\n${table.toString()}`;
}

export function renderMarkdown(t: TableModel): string {
  const esc = (s: string): string => s.replace(/\|/g, '\\|');
  const line = (cells: string[]): string => `| ${cells.map(esc).join(' | ')} |`;
  return [`### ${t.title}`, '', line(t.head), line(t.head.map(() => '---')), ...t.rows.map(line)].join('\n');
}
