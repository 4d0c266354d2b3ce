// Mechanism (f) of benchmarks/fig6-mechanisms.ts: premium's p95 of a phase under another metric
// than the report's (p95 over the queries that completed), from a run directory's files.
// - failed: every failed query counted as one that took the query timeout (a client that got an
//   error waited in vain at least as long as any completed query it would have accepted);
// - connect: every connect a wait of its own beside the queries (how long a session waited to
//   start), a connect that failed or found no replica counted at the connect timeout.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Histogram } from 'hdr-histogram-js';
import { newLatencyHistogram, readHistogramLog, toLatencyUs } from '../../src/metrics/hdr/histogram.js';
import { addEncoded, parseSeconds } from '../../src/metrics/store/seconds.js';
import type { RunSummary } from '../../src/run-format/summary.js';

/** p95 in ms by phase name. */
export type PhaseP95s = Record<string, number>;

interface Timeouts {
  queryTimeoutMs: number;
  connectTimeoutMs: number;
}

function timeoutsOf(dir: string): Timeouts {
  const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { workload: Timeouts };
  return cfg.workload;
}

/** The premium connects of a phase: the seconds whose middle lies in it (as phase-seconds.ts cuts them). */
function connects(dir: string, startS: number, endS: number): Histogram {
  const h = newLatencyHistogram();
  for (const [t, rec] of parseSeconds(readFileSync(join(dir, 'seconds.jsonl'), 'utf8')))
    if (t + 0.5 >= startS && t + 0.5 < endS) addEncoded(h, rec.classes.premium?.connect);
  return h;
}

export function failureCountedP95(
  dir: string,
  summary: RunSummary,
  phases: readonly string[],
  metric: 'failed' | 'connect',
): PhaseP95s {
  const t = timeoutsOf(dir);
  const out: PhaseP95s = {};
  for (const name of phases) {
    const p = summary.phases.find((x) => x.name === name);
    if (!p) continue;
    const h = readHistogramLog(readFileSync(join(dir, 'histograms', `premium-${name}.hlog`), 'utf8'));
    const c = p.classes.premium;
    if (metric === 'failed') {
      if (c.errors > 0) h.recordValueWithCount(toLatencyUs(t.queryTimeoutMs), c.errors);
    } else {
      h.add(connects(dir, p.startS, p.endS));
      if (c.admissionFailures > 0)
        h.recordValueWithCount(toLatencyUs(t.connectTimeoutMs), c.admissionFailures);
    }
    if (h.totalCount > 0) out[name] = h.getValueAtPercentile(95) / 1000;
  }
  return out;
}
