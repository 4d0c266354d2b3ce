import * as hdr from 'hdr-histogram-js';
import type { Histogram } from 'hdr-histogram-js';
import { intervalLogLine } from './encode.js';

/** Latency histograms are in microseconds, 1 us .. 60 s, 3 significant digits, plain JS. */
const LATENCY_HIGHEST_US = 60_000_000;

export function newLatencyHistogram(): Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: LATENCY_HIGHEST_US,
    numberOfSignificantValueDigits: 3,
    autoResize: false,
    useWebAssembly: false,
  });
}

/** Whole microseconds clamped to the trackable range (a 60 s+ query counts as 60 s). */
export function toLatencyUs(latencyMs: number): number {
  if (!Number.isFinite(latencyMs) || latencyMs <= 0) return 0;
  return Math.min(Math.round(latencyMs * 1000), LATENCY_HIGHEST_US);
}

/**
 * One HdrHistogram log (format 1.3, readable by HistogramLogReader and the Java/HdrHistogram
 * tools): header comments, legend, one interval line. Max is reported in ms (ratio 1000).
 */
export function histogramLog(
  h: Histogram,
  opts: { tag: string; startedAtMs: number; startS: number; endS: number },
): string {
  let out = '';
  const writer = new hdr.HistogramLogWriter((s) => {
    out += s;
  });
  writer.outputComment(`[plb latency histogram ${opts.tag}, values in microseconds]`);
  writer.outputLogFormatVersion();
  writer.outputStartTime(opts.startedAtMs);
  writer.outputLegend();
  h.tag = opts.tag;
  // The writer's own line, through the fast encoder (the same bytes).
  return out + intervalLogLine(h, opts.startS, opts.endS, 1000);
}

/** Reads every interval of an HdrHistogram log and adds them into one histogram. */
export function readHistogramLog(content: string): Histogram {
  const reader = new hdr.HistogramLogReader(content);
  const total = newLatencyHistogram();
  for (let h = reader.nextIntervalHistogram(); h !== null; h = reader.nextIntervalHistogram()) total.add(h);
  return total;
}
