/**
 * The query rate above which plb's own client (one Node.js event loop: router, sessions, recorder)
 * rather than the servers sets the figures, so a run past it says so. Measured against pgbench by
 * benchmarks/harness-vs-pgbench.ts (docs/workloads.md has the figures).
 */
import type { PhaseSummary } from '../../run-format/summary.js';

const HARNESS_RATE = {
  /**
   * Completed queries per second of the whole run (both classes): the lowest rate at which one core
   * of plb's client is all busy over 4, 32 and 256 clients. Many sessions cost more than many
   * queries, so the lowest rate is the safe one.
   */
  maxQps: 6000,
  measured: 'benchmarks/harness-vs-pgbench.ts: one client core, 256 sessions',
} as const;

/** One warning per phase whose completed queries per second exceed the measured rate. */
export function harnessRateWarnings(
  phases: readonly PhaseSummary[],
  maxQps: number = HARNESS_RATE.maxQps,
): string[] {
  const out: string[] = [];
  for (const p of phases) {
    // A hand-made summary may leave classes out: no rate, no warning.
    const c = p.classes as Partial<PhaseSummary['classes']> | undefined;
    const qps = (c?.premium?.goodput ?? 0) + (c?.freemium?.goodput ?? 0);
    if (qps > maxQps)
      out.push(
        `warning: phase ${p.name}: ${Math.round(qps)} queries/s is above the ~${maxQps} q/s at which plb's client measured itself rather than the servers (${HARNESS_RATE.measured}): compare with pgbench before trusting its latencies`,
      );
  }
  return out;
}
