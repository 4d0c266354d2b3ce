// The per-second samples of each phase x class of a run, read from the files the run appends as
// it goes (histograms/<class>.hlog and seconds.jsonl): the input of the intervals. Each whole
// second belongs to the phase holding its middle, as in a rebuilt summary.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SERVICE_CLASSES, type ServiceClass } from '../../core/service-class.js';
import { RUN_FILES } from '../store/run-writer.js';
import { intervalLogEntries, intervalLogName, parseSeconds } from '../store/seconds.js';
import { decodeSparse, type SparseCounts } from '../hdr/sparse-counts.js';
import type { SecondSample } from './intervals.js';

export interface PhaseSpan {
  name: string;
  startS: number;
  endS: number;
}

export interface RunSeconds {
  /** Per phase name, per class: the phase's seconds in time order. */
  cells: Map<string, Record<ServiceClass, SecondSample[]>>;
  /** Why there are none (an older run without per-second files), else null. */
  note: string | null;
}

// Decoded straight to sparse counts: the intervals need no histogram objects.
function decode(b64: string | null | undefined): SparseCounts | null {
  if (!b64) return null;
  try {
    return decodeSparse(b64);
  } catch {
    return null;
  }
}

function decodeLog(text: string): Map<number, SparseCounts> {
  const out = new Map<number, SparseCounts>();
  for (const [t, b64] of intervalLogEntries(text)) {
    const c = decode(b64);
    // A damaged line loses its second, not the run.
    if (c !== null) out.set(t, c);
  }
  return out;
}

const readOr = (p: string): string | null => (existsSync(p) ? readFileSync(p, 'utf8') : null);

/** The seconds of a run by phase; `note` says so when the run has no per-second files. */
export function readRunSeconds(dir: string, phases: readonly PhaseSpan[]): RunSeconds {
  const logs = new Map<ServiceClass, Map<number, SparseCounts>>();
  for (const cls of SERVICE_CLASSES) {
    const text = readOr(join(dir, RUN_FILES.histograms, intervalLogName(cls)));
    if (text !== null) logs.set(cls, decodeLog(text));
  }
  const secondsText = readOr(join(dir, RUN_FILES.seconds));
  const cells = new Map<string, Record<ServiceClass, SecondSample[]>>();
  if (logs.size === 0)
    return { cells, note: 'no per-second histograms (histograms/<class>.hlog): no intervals' };
  const seconds = secondsText === null ? new Map() : parseSeconds(secondsText);
  // The run's last whole second: the last line either file holds.
  let last = -1;
  for (const m of [...logs.values(), seconds]) for (const t of m.keys()) last = Math.max(last, t);
  for (const ph of phases) {
    const perClass = {} as Record<ServiceClass, SecondSample[]>;
    for (const cls of SERVICE_CLASSES) {
      const out: SecondSample[] = [];
      for (let t = Math.max(0, Math.floor(ph.startS)); t <= last && t + 0.5 < ph.endS; t++) {
        if (t + 0.5 < ph.startS) continue;
        out.push({
          latency: logs.get(cls)?.get(t) ?? null,
          lifetime: decode(seconds.get(t)?.classes[cls]?.lifetime),
        });
      }
      perClass[cls] = out;
    }
    cells.set(ph.name, perClass);
  }
  const note = secondsText === null ? 'no seconds.jsonl: lifetimes get no interval' : null;
  return { cells, note };
}
