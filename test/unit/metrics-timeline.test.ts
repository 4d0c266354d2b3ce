import fc from 'fast-check';
import { stringify } from 'csv-stringify/sync';
import { describe, expect, it } from 'vitest';
import {
  csvLine,
  parseTimeline,
  readCsv,
  readCsvParsed,
  timelineHeader,
  timelineHeaderLine,
  timelineRow,
} from '../../src/metrics/store/timeline.js';
import type { ReplicaState } from '../../src/metrics/types.js';
import { SERVICE_CLASSES } from '../../src/core/service-class.js';

const replicas = ['r1', 'r2'];
const NASTY = ['down-1', 'a,b', 'say "hi"', 'two\nlines', 'crlf\r\nend', '"', ',', ' padded ', 'ünï,"\n'];

const state = (role: string): Record<string, ReplicaState> => ({
  r1: { premium: 1, freemium: 2, role, healthy: true },
  r2: { premium: 0, freemium: 0, role: 'mixed', healthy: false },
});

function file(phases: readonly string[], roles: readonly string[]): string {
  const rows = phases.map((p, i) =>
    timelineRow(i, p, undefined, state(roles[i] ?? 'mixed'), SERVICE_CLASSES, replicas),
  );
  return timelineHeaderLine(SERVICE_CLASSES, replicas) + rows.map((r) => `${r}\n`).join('');
}

describe('timeline.csv', () => {
  it('keeps the header and its columns', () => {
    const line = timelineHeaderLine(SERVICE_CLASSES, replicas);
    expect(line).toBe(`${timelineHeader(SERVICE_CLASSES, replicas).join(',')}\n`);
    expect(
      line.startsWith('t_s,phase,harness_cpu,loop_p99_ms,loop_max_ms,host_busy,host_steal,premium_count,'),
    ).toBe(true);
    expect(line).toContain(',r1_cpu,r1_premium,r1_freemium,r1_role,r1_healthy,r1_unreachable,');
  });

  it('writes a record as csv-stringify does, byte for byte', () => {
    const cell = fc.oneof(
      fc.constant(null),
      fc.double(),
      fc.integer(),
      fc.constantFrom(...NASTY, '', '0', '-1'),
      fc.string({ unit: 'binary' }),
    );
    fc.assert(
      fc.property(fc.array(cell, { maxLength: 30 }), (cells) => {
        expect(csvLine(cells)).toBe(stringify([cells], { eof: false }));
      }),
      { numRuns: 2000 },
    );
  });

  it('reads records and their lines as csv-parse does (readCsvParsed), with or without quotes', () => {
    const text = fc
      .array(fc.array(fc.constantFrom('1', '', '2.5', 'x', ' ', 'a"b', '"q"', 'c\rd'), { maxLength: 4 }), {
        maxLength: 8,
      })
      .chain((rows) => fc.constantFrom('\n', '').map((end) => rows.map((r) => r.join(',')).join('\n') + end));
    fc.assert(
      fc.property(text, (t) => {
        let ref: unknown;
        try {
          ref = readCsvParsed(t);
        } catch {
          ref = 'error';
        }
        let got: unknown;
        try {
          got = readCsv(t);
        } catch {
          got = 'error';
        }
        expect(got).toEqual(ref);
      }),
      { numRuns: 3000 },
    );
  });

  it('writes plain rows unquoted', () => {
    const row = timelineRow(3, 'ref', undefined, state('premium'), SERVICE_CLASSES, replicas);
    expect(row).not.toContain('"');
    expect(row.startsWith('3,ref,,,,,,0,0,,,0,')).toBe(true);
    expect(row).toContain(',premium,1,');
  });

  it('reads a timeline from before the host columns, with the host as null', () => {
    const [header, ...rows] = file(['ref'], ['mixed']).split('\n');
    const cols = (header ?? '').split(',');
    const drop = [cols.indexOf('host_busy'), cols.indexOf('host_steal')];
    const without = (l: string): string =>
      l
        .split(',')
        .filter((_, i) => !drop.includes(i))
        .join(',');
    const old = [header ?? '', ...rows].map((l) => (l === '' ? l : without(l))).join('\n');
    expect(old.split('\n')[0]).not.toContain('host_');
    const [row] = parseTimeline(old);
    expect(row?.harness).toMatchObject({ hostBusy: null, hostSteal: null });
    expect([row?.phase, row?.replicas.r1?.role]).toEqual(['ref', 'mixed']);
  });

  it('round-trips any phase name and role: commas, quotes, newlines', () => {
    const rows = parseTimeline(file(NASTY, [...NASTY].reverse()));
    expect(rows.map((r) => r.phase)).toEqual(NASTY);
    expect(rows.map((r) => r.replicas.r1?.role)).toEqual([...NASTY].reverse());
    expect(rows.map((r) => r.tS)).toEqual(NASTY.map((_, i) => i));
    expect(rows[1]?.replicas.r1).toMatchObject({ premium: 1, freemium: 2, healthy: true });
    expect(rows[1]?.replicas.r2).toMatchObject({ role: 'mixed', healthy: false });
  });

  it('skips a last row cut off anywhere by an interrupted run, also inside a quoted cell', () => {
    const whole = file(['ref', 'a "quoted",\nphase', 'down-1'], ['mixed', 'x,"y"', 'premium']);
    const lastRowStart = whole.lastIndexOf('\n', whole.length - 2) + 1;
    for (let end = lastRowStart + 1; end < whole.length - 1; end++) {
      const rows = parseTimeline(whole.slice(0, end));
      // Cut within the last cell of a whole row, it still has every cell: it is kept.
      expect(rows.length === 2 || rows.length === 3).toBe(true);
      expect(rows[1]?.phase).toBe('a "quoted",\nphase');
    }
    // Cut inside the quoted phase name of the second row (after its newline): only the first stays.
    const second = whole.indexOf('phase"') + 2;
    expect(parseTimeline(whole.slice(0, second)).map((r) => r.phase)).toEqual(['ref']);
  });

  it('names the line of a malformed record', () => {
    const header = timelineHeaderLine(SERVICE_CLASSES, replicas);
    const good = `${timelineRow(0, 'two\nlines', undefined, state('mixed'), SERVICE_CLASSES, replicas)}\n`;
    expect(() => parseTimeline(`${header}${good}1,ref\n`)).toThrow(/^line 4: 2 cells, header has \d+$/);
    expect(() => parseTimeline(`${header}${good}1,"a"b\n`)).toThrow(/^line 4: Invalid Closing Quote/);
    // An open quote in a file that ends with its newline was not cut off: an error.
    expect(() => parseTimeline(`${header}1,"ref\n`)).toThrow(/^line \d+: Quote Not Closed/);
  });
});
