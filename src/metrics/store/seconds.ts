// The per-second files a run appends as it goes, so a run killed hard can still be summarised:
// histograms/<class>.hlog (query latency, an HdrHistogram interval log, one interval a second)
// and seconds.jsonl (what the summary needs that timeline.csv does not hold, one line a second).
import * as hdr from 'hdr-histogram-js';
import type { Histogram } from 'hdr-histogram-js';
import type { ServiceClass } from '../../core/service-class.js';
import { encodeCompressedBase64, intervalLogLine } from '../hdr/encode.js';
import type { SecondAgg } from './store.js';

/** Lifetimes are in milliseconds, up to a day (a session cannot outlive a 24 h plan). */
export function newLifetimeHistogram(): Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 86_400_000,
    numberOfSignificantValueDigits: 3,
    autoResize: false,
    useWebAssembly: false,
  });
}

/** `histograms/<class>.hlog`: the per-second latency log of one class. */
export const intervalLogName = (cls: ServiceClass): string => `${cls}.hlog`;

/** The header of a per-second log: comment, format version, start time, legend. */
export function intervalLogHeader(cls: ServiceClass, startedAtMs: number): string {
  let out = '';
  const w = new hdr.HistogramLogWriter((s) => {
    out += s;
  });
  w.outputComment(`[plb per-second latency of ${cls}, values in microseconds]`);
  w.outputLogFormatVersion();
  w.outputStartTime(startedAtMs);
  w.outputLegend();
  return out;
}

/** One interval line [s, s+1) (seconds since the run started); max in ms. */
export function intervalLine(h: Histogram, s: number): string {
  return intervalLogLine(h, s, s + 1, 1000);
}

/** Complete lines only: a run killed mid-write leaves its last line cut off. */
function wholeLines(text: string): string[] {
  const lines = text.split('\n');
  lines.pop(); // after the last newline: '' or a cut-off line
  return lines;
}

/** The encoded histograms of a per-second log, by second (compressed base64, not decoded). */
export function intervalLogEntries(text: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const line of wholeLines(text)) {
    if (line === '' || line.startsWith('#') || line.startsWith('"')) continue;
    const cells = line.split(',');
    if (cells[0]?.startsWith('Tag=')) cells.shift();
    const start = Number(cells[0]);
    const b64 = cells[3];
    if (!Number.isFinite(start) || b64 === undefined) continue;
    out.set(Math.round(start), b64);
  }
  return out;
}

/** The intervals of a per-second log, by second (a line that does not decode is skipped). */
export function parseIntervalLog(text: string): Map<number, Histogram> {
  const out = new Map<number, Histogram>();
  for (const [t, b64] of intervalLogEntries(text)) {
    try {
      out.set(t, hdr.decodeFromCompressedBase64(b64));
    } catch {
      // A damaged line loses its second, not the run.
    }
  }
  return out;
}

interface SecondClassRecord {
  closed: number;
  cut: number;
  /** Compressed base64 histograms, null when empty. */
  lifetime: string | null;
  connect: string | null;
}

/** One line of seconds.jsonl. */
export interface SecondRecord {
  t: number;
  classes: Partial<Record<ServiceClass, SecondClassRecord>>;
  /** Per replica id: sessions opened and queries completed in the second. */
  replicas: Record<string, { opened: number; queries: number }>;
  /** Event-loop delay of the client (us), null when not sampled. */
  loop: string | null;
}

const encode = (h: Histogram): string | null => (h.totalCount > 0 ? encodeCompressedBase64(h) : null);

/** The seconds.jsonl line of second `s` (scratch: a lifetime histogram reused between calls). */
export function secondLine(
  s: number,
  agg: SecondAgg,
  classes: readonly ServiceClass[],
  replicas: readonly string[],
  scratch: Histogram,
): string {
  const rec: SecondRecord = { t: s, classes: {}, replicas: {}, loop: encode(agg.loopHist) };
  for (const cls of classes) {
    const c = agg.classes[cls];
    scratch.reset();
    for (const ms of c.lifetimesMs) scratch.recordValue(Math.min(Math.max(1, Math.round(ms)), 86_400_000));
    rec.classes[cls] = {
      closed: c.closed,
      cut: c.cut,
      lifetime: encode(scratch),
      connect: encode(c.connectHist),
    };
  }
  replicas.forEach((id, i) => {
    rec.replicas[id] = { opened: agg.opened[i] ?? 0, queries: agg.queries[i] ?? 0 };
  });
  return JSON.stringify(rec);
}

/** seconds.jsonl by second (a cut-off or damaged line is skipped). */
export function parseSeconds(text: string): Map<number, SecondRecord> {
  const out = new Map<number, SecondRecord>();
  for (const line of wholeLines(text)) {
    try {
      const r = JSON.parse(line) as SecondRecord;
      if (typeof r.t === 'number') out.set(r.t, r);
    } catch {
      // skipped
    }
  }
  return out;
}

/** Decodes a histogram of a seconds.jsonl line into `into` (nothing when null or damaged). */
export function addEncoded(into: Histogram, b64: string | null | undefined): void {
  if (!b64) return;
  try {
    into.add(hdr.decodeFromCompressedBase64(b64));
  } catch {
    // skipped
  }
}
