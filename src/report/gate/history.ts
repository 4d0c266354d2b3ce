// The nightly's history: one JSON line per night with its verdict table (each headline cell's
// change against rr, interval and verdict, the baseline's verdict, PASS/FAIL), appended by
// `plb report --gate --history-append FILE` and read back by `plb report --history FILE`, which
// tables premium's change against rr night by night.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { PlbError } from '../../core/errors.js';
import { checkWritableFile } from '../../core/safe-write.js';
import { changeText } from '../evidence/verdicts.js';
import type { VerdictGateResult } from './verdict-gate.js';

const HISTORY_SCHEMA = 'plb-nightly-history/1';

const num = z.number().nullable();
const historyCellSchema = z.object({
  group: z.string(),
  strategy: z.string(),
  phase: z.string(),
  cls: z.enum(['premium', 'freemium']),
  metric: z.enum(['p95', 'goodput']),
  delta: num.describe('(value - rr) / rr'),
  lo: num,
  hi: num,
  verdict: z.string().nullable().describe("tonight's verdict against rr (null: no such cell)"),
  baselineVerdict: z.string().nullable(),
  status: z.string(),
  value: num.describe("the strategy's own median (ms, queries/s): the trend"),
});

const historyEntrySchema = z.object({
  schema: z.literal(HISTORY_SCHEMA),
  at: z.string().describe('ISO time the gate ran'),
  pass: z.boolean(),
  commit: z.string().optional(),
  ciRun: z.string().optional(),
  images: z.array(z.string()).describe('the PostgreSQL images the runs used (empty: simulator)'),
  cells: z.array(historyCellSchema),
});
export type HistoryEntry = z.infer<typeof historyEntrySchema>;

/** Tonight's line: the gate's cells, with where and on what it ran. */
export function historyEntry(
  r: VerdictGateResult,
  images: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  now: Date = new Date(),
): HistoryEntry {
  return {
    schema: HISTORY_SCHEMA,
    at: now.toISOString(),
    pass: r.failed.length === 0,
    ...(env.GITHUB_SHA ? { commit: env.GITHUB_SHA } : {}),
    ...(env.GITHUB_RUN_ID ? { ciRun: env.GITHUB_RUN_ID } : {}),
    images: [...images],
    cells: r.cells.map((c) => ({
      group: c.group,
      strategy: c.strategy,
      phase: c.phase,
      cls: c.cls,
      metric: c.metric,
      delta: c.current?.delta ?? null,
      lo: c.current?.lo ?? null,
      hi: c.current?.hi ?? null,
      verdict: c.current?.verdict ?? null,
      baselineVerdict: c.baseline?.verdict ?? null,
      status: c.status,
      value: c.currentValue,
    })),
  };
}

/** Appends one line (the file and its folder may not exist yet: the first night makes the file). */
export function appendHistory(file: string, entry: HistoryEntry): void {
  const abs = checkWritableFile(file, 'history-append');
  appendFileSync(abs, `${JSON.stringify(entry)}\n`);
}

/** Every night of a history file, oldest first; a malformed line is refused naming its number. */
export function readHistory(file: string): HistoryEntry[] {
  if (!existsSync(file)) throw new PlbError('BAD_INPUT', `history: ${file} does not exist`);
  const lines = readFileSync(file, 'utf8').split('\n');
  const out: HistoryEntry[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch (err) {
      throw new PlbError('BAD_INPUT', `history: ${file}:${i + 1} is not JSON`, { cause: err });
    }
    const r = historyEntrySchema.safeParse(raw);
    if (!r.success)
      throw new PlbError('BAD_INPUT', `history: ${file}:${i + 1} is not a ${HISTORY_SCHEMA} line`, {
        hint: r.error.issues[0]?.message,
      });
    out.push(r.data);
  });
  return out;
}

const verdictWord = (v: string | null): string =>
  v === null ? '-' : v === 'no difference detected' ? 'no diff.' : v;

/**
 * A row per night and strategy, a column per fault phase: the class's change of the metric against
 * rr with its 95 % interval and verdict (default premium p95, the headline).
 */
export function historyTable(
  entries: readonly HistoryEntry[],
  opts: { cls?: 'premium' | 'freemium'; metric?: 'p95' | 'goodput' } = {},
): string {
  const cls = opts.cls ?? 'premium';
  const metric = opts.metric ?? 'p95';
  const phases: string[] = [];
  const strategies: string[] = [];
  for (const e of entries)
    for (const c of e.cells)
      if (c.cls === cls && c.metric === metric) {
        if (!phases.includes(c.phase)) phases.push(c.phase);
        if (!strategies.includes(c.strategy)) strategies.push(c.strategy);
      }
  const header = ['night', 'gate', 'strategy', ...phases];
  const body = entries.flatMap((e) =>
    strategies
      .filter((st) => e.cells.some((c) => c.strategy === st))
      .map((st) => [
        e.at.slice(0, 16).replace('T', ' '),
        e.pass ? 'PASS' : 'FAIL',
        st,
        ...phases.map((ph) => {
          const c = e.cells.find(
            (x) => x.cls === cls && x.metric === metric && x.strategy === st && x.phase === ph,
          );
          return c ? `${changeText(c)} ${verdictWord(c.verdict)}` : '-';
        }),
      ]),
  );
  const all = [header, ...body];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const lines = all.map((r) =>
    r
      .map((v, i) => v.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd(),
  );
  return `${cls} ${metric} against rr, per night (change within the night's run, 95 % interval, verdict)\n${lines.join('\n')}\n`;
}
