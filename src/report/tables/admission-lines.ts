import type { RunSummary } from '../../run-format/summary.js';

/**
 * With an admission queue (plb-admit, lc-queue): per phase, each class's queue p95 and timeouts
 * (queue time is its own metric, never in query latency), and the recovery tail of every rejoin.
 * Empty for runs without a queue or a rejoin.
 */
export function admissionLines(s: RunSummary): string[] {
  const lines: string[] = [];
  const queued = s.phases.filter((p) => p.classes.premium.queueP95Ms !== undefined);
  if (queued.length > 0) {
    const cell = (v: number | null | undefined, t: number | undefined) =>
      `${v === null || v === undefined ? '-' : `${Math.round(v)} ms`}${t ? ` (${t} timed out)` : ''}`;
    lines.push(
      `admission queue p95 (P / F): ${queued
        .map(
          (p) =>
            `${p.name} ${cell(p.classes.premium.queueP95Ms, p.classes.premium.queueTimeouts)} / ${cell(p.classes.freemium.queueP95Ms, p.classes.freemium.queueTimeouts)}`,
        )
        .join(' | ')}`,
    );
  }
  const tail = s.recoveryTail ?? [];
  if (tail.length > 0) {
    const sec = (v: number | null) => (v === null ? 'not in the run' : `${v} s`);
    lines.push(
      `recovery tail (p95 back within 10 % of ref): ${tail
        .map((t) => `${t.phase} premium ${sec(t.premiumS)}, freemium ${sec(t.freemiumS)}`)
        .join(' | ')}`,
    );
  }
  return lines;
}
