import { CsvError, parse, type InfoRecord } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { SERVICE_CLASSES, type ServiceClass } from '../../core/service-class.js';
import { percentileMs, percentilesOfMs, round } from '../math.js';
import { COUNTED_CAUSES, type SecondAgg } from './store.js';
import type { ReplicaState } from '../types.js';

/** Per class columns of timeline.csv, as `<class>_<metric>`. */
export const CLASS_METRICS = [
  'count',
  'goodput',
  'p50_ms',
  'p95_ms',
  'errors',
  'sessions_opened',
  'sessions_failed',
  'admission_failures',
  'connect_p95_ms',
] as const;

/**
 * Per replica columns of timeline.csv, as `<replica>_<metric>` (failures heard of, by cause; then
 * replication lag, empty in read-only runs: the standby's lag in ms and the primary's byte distance).
 */
export const REPLICA_METRICS = [
  'cpu',
  'premium',
  'freemium',
  'role',
  'healthy',
  ...COUNTED_CAUSES,
  'lag_ms',
  'lag_bytes',
] as const;

/**
 * The client process (is the harness keeping up?), then its host's busy and stolen CPU as
 * fractions of all its cores (is the host keeping up?), right after t_s and phase.
 */
const HARNESS_COLUMNS = ['harness_cpu', 'loop_p99_ms', 'loop_max_ms', 'host_busy', 'host_steal'] as const;

export function timelineHeader(classes: readonly ServiceClass[], replicas: readonly string[]): string[] {
  return [
    't_s',
    'phase',
    ...HARNESS_COLUMNS,
    ...classes.flatMap((c) => CLASS_METRICS.map((m) => `${c}_${m}`)),
    ...replicas.flatMap((r) => REPLICA_METRICS.map((m) => `${r}_${m}`)),
  ];
}

/** The header as one CSV line (with its newline), as the run writer starts timeline.csv. */
export function timelineHeaderLine(classes: readonly ServiceClass[], replicas: readonly string[]): string {
  return stringify([timelineHeader(classes, replicas)]);
}

/** One row: `state` is the router's view at the end of the second (carried forward by the caller). */
export function timelineRow(
  tS: number,
  phase: string,
  agg: SecondAgg | undefined,
  state: Record<string, ReplicaState> | undefined,
  classes: readonly ServiceClass[],
  replicas: readonly string[],
): string {
  const loop = agg && agg.loopHist.totalCount > 0 ? agg.loopHist : undefined;
  const cells: (number | string | null)[] = [
    tS,
    phase,
    agg?.harnessCpu === undefined ? null : round(agg.harnessCpu, 4),
    loop ? round(percentileMs(loop, 99), 3) : null,
    loop ? round(loop.maxValue / 1000, 3) : null,
    agg?.host === undefined ? null : round(agg.host.busy, 4),
    agg?.host === undefined ? null : round(agg.host.steal, 4),
  ];
  for (const cls of classes) {
    const c = agg?.classes[cls];
    const count = c?.count ?? 0;
    const [p50, p95] = c ? percentilesOfMs(c.hist, [50, 95]) : [null, null];
    cells.push(
      count,
      count,
      c ? round(p50 ?? null, 3) : null,
      c ? round(p95 ?? null, 3) : null,
      c?.errors ?? 0,
      c?.opened ?? 0,
      c?.failed ?? 0,
      c?.admission ?? 0,
      c && c.opened > 0 ? round(percentileMs(c.connectHist, 95), 3) : null,
    );
  }
  replicas.forEach((r, i) => {
    const n = agg?.cpuN[i] ?? 0;
    const st = state?.[r];
    cells.push(
      n > 0 ? round((agg?.cpuSum[i] ?? 0) / n, 4) : null,
      st?.premium ?? null,
      st?.freemium ?? null,
      st?.role ?? null,
      st === undefined ? null : st.healthy ? 1 : 0,
      ...COUNTED_CAUSES.map((_, c) => agg?.failures[c]?.[i] ?? 0),
      // As in the summary: the standby's own figure, else the primary's replay_lag.
      round(agg?.lag?.[r]?.lagMs ?? agg?.lag?.[r]?.replayLagMs ?? null, 1),
      agg?.lag?.[r]?.lagBytes ?? null,
    );
  });
  return csvLine(cells);
}

/**
 * One CSV record without its newline, the bytes csv-stringify writes with its defaults (a number
 * as `'' + n`, null as an empty cell, a string quoted only when it holds `,` `"` CR or LF, its
 * quotes doubled: RFC 4180, so any phase name or role reads back as written), at a tenth of the
 * cost: a K=1000 row has 10,000 cells a second.
 */
export function csvLine(cells: readonly (number | string | null)[]): string {
  let out = '';
  for (let i = 0; i < cells.length; i++) {
    if (i > 0) out += ',';
    const v = cells[i];
    if (v === null || v === undefined) continue;
    if (typeof v === 'number') out += `${v}`;
    else out += NEEDS_QUOTES.test(v) ? `"${v.replaceAll('"', '""')}"` : v;
  }
  return out;
}
const NEEDS_QUOTES = /[",\r\n]/;

interface TimelineClassCells {
  count: number;
  goodput: number;
  p50Ms: number | null;
  p95Ms: number | null;
  errors: number;
  sessionsOpened: number;
  sessionsFailed: number;
  admissionFailures: number;
  connectP95Ms: number | null;
}

export interface TimelineReplicaCells {
  cpu: number | null;
  premium: number | null;
  freemium: number | null;
  role: string | null;
  healthy: boolean | null;
  /** Failures heard of in the second, by cause (0 in files written before they were recorded). */
  unreachable: number;
  overloaded: number;
  slow: number;
  /** Replication lag (null in read-only runs and in files written before it was recorded). */
  lagMs: number | null;
  lagBytes: number | null;
}

interface TimelineHarnessCells {
  cpu: number | null;
  loopP99Ms: number | null;
  loopMaxMs: number | null;
  /** Fractions of all the host's cores; null in simulated runs and in runs before these columns. */
  hostBusy: number | null;
  hostSteal: number | null;
}

/** One parsed row of timeline.csv (empty cells are null). */
export interface TimelineRow {
  tS: number;
  phase: string;
  harness: TimelineHarnessCells;
  classes: Partial<Record<ServiceClass, TimelineClassCells>>;
  replicas: Record<string, TimelineReplicaCells>;
}

/**
 * Parses timeline.csv; throws Error with the line number on a malformed line (loadRun wraps it).
 * A short last line without its newline was cut off by an interrupted run: it is skipped.
 */
export function parseTimeline(text: string): TimelineRow[] {
  const records = readCsv(text);
  const header = records[0]?.cells ?? [];
  if (header[0] !== 't_s' || header[1] !== 'phase')
    throw new Error('line 1: header must start with t_s,phase');
  const cutOff = records.length > 1 && !text.endsWith('\n');
  if (cutOff && (records.at(-1)?.cells.length ?? 0) < header.length) records.pop();
  const classCols: { cls: ServiceClass; metric: string; i: number }[] = [];
  const replicaCols: { id: string; metric: string; i: number }[] = [];
  const harnessCols = new Map<string, number>();
  header.forEach((h, i) => {
    if (i < 2) return;
    if ((HARNESS_COLUMNS as readonly string[]).includes(h)) {
      harnessCols.set(h, i);
      return;
    }
    const cls = SERVICE_CLASSES.find((c) => h.startsWith(`${c}_`));
    const metric = cls ? h.slice(cls.length + 1) : '';
    if (cls && (CLASS_METRICS as readonly string[]).includes(metric)) {
      classCols.push({ cls, metric, i });
      return;
    }
    const m = new RegExp(`^(.+)_(${REPLICA_METRICS.join('|')})$`).exec(h);
    if (!m?.[1] || !m[2]) throw new Error(`line 1: unknown column ${h}`);
    replicaCols.push({ id: m[1], metric: m[2], i });
  });
  return records.slice(1).map(({ cells, line }, n) => {
    if (cells.length !== header.length) {
      throw new Error(`line ${line}: ${cells.length} cells, header has ${header.length}`);
    }
    const num = (i: number): number | null => {
      const c = cells[i] ?? '';
      if (c === '') return null;
      const v = Number(c);
      if (!Number.isFinite(v)) throw new Error(`line ${line}: ${header[i]} is not a number`);
      return v;
    };
    // The writer writes 1/0; true/false (hand-made or older files) reads the same.
    const flag = (i: number): boolean | null => {
      const c = cells[i] ?? '';
      if (c === 'true' || c === 'false') return c === 'true';
      const v = num(i);
      return v === null ? null : v === 1;
    };
    const classes: Partial<Record<ServiceClass, TimelineClassCells>> = {};
    for (const { cls, metric, i } of classCols) {
      const c = (classes[cls] ??= {
        count: 0,
        goodput: 0,
        p50Ms: null,
        p95Ms: null,
        errors: 0,
        sessionsOpened: 0,
        sessionsFailed: 0,
        admissionFailures: 0,
        connectP95Ms: null,
      });
      const v = num(i);
      if (metric === 'p50_ms') c.p50Ms = v;
      else if (metric === 'p95_ms') c.p95Ms = v;
      else if (metric === 'count') c.count = v ?? 0;
      else if (metric === 'goodput') c.goodput = v ?? 0;
      else if (metric === 'errors') c.errors = v ?? 0;
      else if (metric === 'sessions_opened') c.sessionsOpened = v ?? 0;
      else if (metric === 'sessions_failed') c.sessionsFailed = v ?? 0;
      else if (metric === 'connect_p95_ms') c.connectP95Ms = v;
      else c.admissionFailures = v ?? 0;
    }
    const replicas: Record<string, TimelineReplicaCells> = {};
    for (const { id, metric, i } of replicaCols) {
      const r = (replicas[id] ??= {
        cpu: null,
        premium: null,
        freemium: null,
        role: null,
        healthy: null,
        unreachable: 0,
        overloaded: 0,
        slow: 0,
        lagMs: null,
        lagBytes: null,
      });
      if (metric === 'role') r.role = cells[i] || null;
      else if (metric === 'lag_ms') r.lagMs = num(i);
      else if (metric === 'lag_bytes') r.lagBytes = num(i);
      else if (metric === 'healthy') r.healthy = flag(i);
      else if ((COUNTED_CAUSES as readonly string[]).includes(metric))
        r[metric as (typeof COUNTED_CAUSES)[number]] = num(i) ?? 0;
      else r[metric as 'cpu' | 'premium' | 'freemium'] = num(i);
    }
    const at = (name: string): number | null => {
      const i = harnessCols.get(name);
      return i === undefined ? null : num(i);
    };
    const harness = {
      cpu: at('harness_cpu'),
      loopP99Ms: at('loop_p99_ms'),
      loopMaxMs: at('loop_max_ms'),
      hostBusy: at('host_busy'),
      hostSteal: at('host_steal'),
    };
    return { tS: num(0) ?? n, phase: cells[1] ?? '', harness, classes, replicas };
  });
}

/**
 * The records of a CSV text with the line each ends on (a quoted cell may hold newlines). A
 * record left inside an open quote at the end of a text without its last newline was cut off by
 * an interrupted run: it is dropped; any other malformed record is an error naming its line.
 */
export function readCsv(text: string): { cells: string[]; line: number }[] {
  // No quote, CR or BOM (what the writer writes unless a name needs quoting): lines and commas
  // are the records and cells csv-parse would give, at a fraction of its cost.
  if (!/["\r]/.test(text) && !text.startsWith('\uFEFF')) {
    const out: { cells: string[]; line: number }[] = [];
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const l = lines[i] as string;
      if (l !== '') out.push({ cells: l.split(','), line: i + 1 });
    }
    return out;
  }
  return readCsvParsed(text);
}

/** readCsv by csv-parse, for any text (quotes, CR, BOM); exported as the plain path's oracle. */
export function readCsvParsed(text: string): { cells: string[]; line: number }[] {
  const cutOff = !text.endsWith('\n');
  try {
    const records = parse(text, {
      info: true,
      // Cell counts are checked by the caller, which knows the header and the cut-off rule.
      relax_column_count: true,
      skip_empty_lines: true,
      // Only to drop a cut-off quoted last record: every other error is thrown on.
      skip_records_with_error: true,
      on_skip: (err) => {
        if (!(cutOff && err?.code === 'CSV_QUOTE_NOT_CLOSED')) throw err;
      },
    }) as unknown as { record: string[]; info: InfoRecord }[];
    return records.map((r) => ({ cells: r.record, line: r.info.lines }));
  } catch (err) {
    if (err instanceof CsvError) throw new Error(`line ${String(err['lines'])}: ${err.message}`);
    throw err;
  }
}
