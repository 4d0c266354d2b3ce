// --workers (and plb bench merge): per worker process or node, what it ran and measured, and how it
// ended. Per run, not aggregated: a worker of one run is not a repeat of another's.
import type { RunGroup } from '../../run-format/report.js';
import type { RunSummary } from '../../run-format/summary.js';
import { fixed, fmtValue, int, type TableModel } from './table-model.js';

type WorkerRows = NonNullable<RunGroup['workers']>;

/** The group's runs' workers as summary.json has them (undefined: no run had workers). */
export function aggregateWorkers(runs: readonly RunSummary[]): WorkerRows | undefined {
  const rows = runs.flatMap((r) =>
    (r.workers ?? []).map((w) => {
      const total = w.queries.premium + w.queries.freemium;
      return {
        runId: r.runId,
        worker: w.worker,
        pid: w.pid,
        instances: [...w.instances],
        queries: { ...w.queries },
        errors: { ...w.errors },
        sessions: { ...w.sessions },
        p95Ms: { ...w.p95Ms },
        qps: w.seconds > 0 ? Math.round((total / w.seconds) * 10) / 10 : 0,
        exit: w.exit,
      };
    }),
  );
  return rows.length > 0 ? rows : undefined;
}

/** Instances as a short list (`0, 2, 4 … (16)` past eight). */
function instanceList(xs: readonly number[]): string {
  return xs.length <= 8 ? xs.join(', ') : `${xs.slice(0, 6).join(', ')} … (${xs.length})`;
}

export function workersTable(g: RunGroup, title: (g: RunGroup) => string): TableModel | null {
  const w = g.workers;
  if (!w) return null;
  const several = g.runIds.length > 1;
  const pf = (p: number | null, f: number | null, fmt = int): string =>
    `${fmtValue(p, fmt)} / ${fmtValue(f, fmt)}`;
  return {
    title: `${title(g)} · workers: per process (premium / freemium)`,
    head: [
      ...(several ? ['Run'] : []),
      'Worker',
      'PID',
      'Instances',
      'Queries',
      'Errors',
      'Sessions',
      'p95 ms',
      'q/s',
      'Ended',
    ],
    rows: w.map((r) => [
      ...(several ? [r.runId] : []),
      String(r.worker),
      r.pid === null ? '-' : String(r.pid),
      instanceList(r.instances),
      pf(r.queries.premium, r.queries.freemium),
      pf(r.errors.premium, r.errors.freemium),
      pf(r.sessions.premium, r.sessions.freemium),
      pf(r.p95Ms.premium, r.p95Ms.freemium, fixed(1)),
      fixed(1)(r.qps),
      r.exit,
    ]),
  };
}
