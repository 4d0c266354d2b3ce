// The per-second samples of each phase x class of a run, read from the files the run appends as
// it goes (histograms/<class>.hlog and seconds.jsonl): the input of the intervals. Each whole
// second belongs to the phase holding its middle, as in a rebuilt summary.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as hdr from 'hdr-histogram-js';
import type { Histogram } from 'hdr-histogram-js';
import { SERVICE_CLASSES, type ServiceClass } from '../core/service-class.js';
import { RUN_FILES } from './run-writer.js';
import { intervalLogName, parseIntervalLog, parseSeconds } from './seconds.js';
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

function decode(b64: string | null | undefined): Histogram | null {
  if (!b64) return null;
  try {
    return hdr.decodeFromCompressedBase64(b64);
  } catch {
    return null;
  }
}

const readOr = (p: string): string | null => (existsSync(p) ? readFileSync(p, 'utf8') : null);

/** The seconds of a run by phase; `note` says so when the run has no per-second files. */
export function readRunSeconds(dir: string, phases: readonly PhaseSpan[]): RunSeconds {
  const logs = new Map<ServiceClass, Map<number, Histogram>>();
  for (const cls of SERVICE_CLASSES) {
    const text = readOr(join(dir, RUN_FILES.histograms, intervalLogName(cls)));
    if (text !== null) logs.set(cls, parseIntervalLog(text));
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
