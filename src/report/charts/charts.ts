// Charts of the HTML report: vega-lite specs compiled to vega and rendered to SVG in Node.
import { createRequire } from 'node:module';
import type { TopLevelSpec } from 'vega-lite';
import type { LoadedRun } from '../../metrics/store/load-run.js';
import type { TimelineReplicaCells, TimelineRow } from '../../metrics/store/timeline.js';
import { HARNESS_LOOP_P99_LIMIT_MS, HOST_BUSY_LIMIT } from '../../metrics/types.js';
import { SERVICE_CLASSES, type ServiceClass } from '../../core/service-class.js';
import { compareReplicaIds } from '../../core/replica-ids.js';

import { CLASS_COLORS, colorScale, WIDTH } from './chart-style.js';

const ROLE_COLORS: Record<string, string> = {
  premium: '#e6a817',
  mixed: '#2bb3a3',
  freemium: '#4a7fd4',
  shared: '#9aa5b1',
  down: '#d62728',
};
const FAULT_COLOR = '#d62728';
/** Points per series at most; longer timelines are averaged into buckets to keep the SVG small. */
const MAX_POINTS = 600;

// Vega and vega-lite load at the first chart, so a run, a `--json` report or a test of the specs
// never pays for them. Both are CommonJS: `require` skips the ESM loader's scan of their sources
// for export names, which every process of a parallel series that draws a chart would pay again.
let renderer: [typeof import('vega'), typeof import('vega-lite')] | undefined;

/** Renders a vega-lite spec to an SVG string without a browser or canvas. */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const require = createRequire(import.meta.url);
  renderer ??= [require('vega') as typeof import('vega'), require('vega-lite') as typeof import('vega-lite')];
  const [vega, { compile }] = renderer;
  const vgSpec = compile(spec).spec;
  const view = new vega.View(vega.parse(vgSpec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

interface Overlay {
  durationS: number;
  phases: { name: string; start: number; end: number; shade: number }[];
  faults: { t: number; label: string }[];
}

export function overlayOf(run: LoadedRun): Overlay {
  const phases = run.summary.phases.map((p, i) => ({
    name: p.name,
    start: p.startS,
    end: p.endS,
    shade: i % 2 === 0 ? 0.07 : 0.15,
  }));
  const faults = run.events
    .filter((e) => e.type === 'fault')
    .map((e) => ({ t: e.tMs / 1000, label: `${e.replica ?? ''} ${e.action ?? ''}`.trim() }));
  const lastRow = run.timeline[run.timeline.length - 1];
  const durationS = Math.max(
    run.summary.durationS ?? 0,
    lastRow ? lastRow.tS + 1 : 0,
    ...phases.map((p) => p.end),
  );
  return { durationS, phases, faults };
}

/** Averages consecutive rows so a series has at most MAX_POINTS points (nulls are left out). */
export function bucketize<T>(rows: readonly T[], value: (r: T) => number | null, time: (r: T) => number) {
  const size = Math.max(1, Math.ceil(rows.length / MAX_POINTS));
  const out: { t: number; value: number | null }[] = [];
  for (let i = 0; i < rows.length; i += size) {
    const chunk = rows.slice(i, i + size);
    const vals = chunk.map(value).filter((v): v is number => v !== null);
    out.push({
      t: time(chunk[0] as T),
      value: vals.length === 0 ? null : vals.reduce((s, v) => s + v, 0) / vals.length,
    });
  }
  return out;
}

export function overlayLayers(o: Overlay, height: number): object[] {
  const x = { field: 'start', type: 'quantitative' as const };
  const layers: object[] = [
    {
      data: { values: o.phases },
      mark: { type: 'rect' },
      encoding: {
        x: { ...x, scale: { domain: [0, o.durationS], nice: false }, title: 'time (s)' },
        x2: { field: 'end' },
        color: { value: '#4b5b6b' },
        opacity: { field: 'shade', type: 'quantitative', scale: null, legend: null },
      },
    },
    {
      data: { values: o.phases },
      mark: { type: 'text', align: 'left', baseline: 'top', dx: 3, dy: 2, fontSize: 10, color: '#333' },
      encoding: { x, y: { value: 0 }, text: { field: 'name' } },
    },
  ];
  if (o.faults.length > 0) {
    layers.push(
      {
        data: { values: o.faults },
        mark: { type: 'rule', color: FAULT_COLOR, strokeDash: [4, 3], strokeWidth: 1.5 },
        encoding: { x: { field: 't', type: 'quantitative' } },
      },
      {
        data: { values: o.faults },
        mark: {
          type: 'text',
          align: 'left',
          baseline: 'bottom',
          dx: 3,
          dy: -2,
          fontSize: 10,
          color: FAULT_COLOR,
        },
        encoding: { x: { field: 't', type: 'quantitative' }, y: { value: height }, text: { field: 'label' } },
      },
    );
  }
  return layers;
}

/** Per class p95 or goodput per second, phases shaded, faults as dashed red rules. */
export function classTimelineSpec(run: LoadedRun, metric: 'p95' | 'goodput'): TopLevelSpec {
  const height = 170;
  const pick = (r: TimelineRow, c: ServiceClass): number | null =>
    (metric === 'p95' ? r.classes[c]?.p95Ms : r.classes[c]?.goodput) ?? null;
  const values = SERVICE_CLASSES.flatMap((c) =>
    bucketize(
      run.timeline,
      (r) => pick(r, c),
      (r) => r.tS,
    ).map((p) => ({ ...p, series: c })),
  );
  const o = overlayOf(run);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: metric === 'p95' ? 'p95 latency per second (ms)' : 'Goodput (completed queries/s)',
    width: WIDTH,
    height,
    layer: [
      ...overlayLayers(o, height),
      {
        data: { values },
        mark: { type: 'line', strokeWidth: 1.5, invalid: 'break-paths-show-domains' },
        encoding: {
          x: { field: 't', type: 'quantitative' },
          y: { field: 'value', type: 'quantitative', title: metric === 'p95' ? 'ms' : 'q/s' },
          color: {
            field: 'series',
            type: 'nominal',
            title: 'class',
            scale: colorScale([...SERVICE_CLASSES], CLASS_COLORS),
          },
        },
      },
    ],
  } as TopLevelSpec;
}

/** CPU fraction of each replica's quota over time. */
export function cpuTimelineSpec(run: LoadedRun): TopLevelSpec {
  return replicaTimelineSpec(run, {
    title: 'CPU per replica (fraction of its quota)',
    value: (c) => c.cpu,
    y: { title: 'CPU', axis: { format: '%' } },
  });
}

/** One line per replica of a per-second replica value, with the faults and phases overlaid. */
function replicaTimelineSpec(
  run: LoadedRun,
  opts: {
    title: string;
    value: (cells: TimelineReplicaCells) => number | null;
    y: { title: string; axis?: { format: string } };
  },
): TopLevelSpec {
  const height = 170;
  const ids = [...run.replicaIds].sort(compareReplicaIds);
  const values = ids.flatMap((id) =>
    bucketize(
      run.timeline,
      (r) => {
        const cells = r.replicas[id];
        return cells ? opts.value(cells) : null;
      },
      (r) => r.tS,
    ).map((p) => ({ ...p, series: id })),
  );
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: opts.title,
    width: WIDTH,
    height,
    layer: [
      ...overlayLayers(overlayOf(run), height),
      {
        data: { values },
        mark: { type: 'line', strokeWidth: 1.2, invalid: 'break-paths-show-domains' },
        encoding: {
          x: { field: 't', type: 'quantitative' },
          y: { field: 'value', type: 'quantitative', ...opts.y },
          color: { field: 'series', type: 'nominal', title: 'replica', sort: ids },
        },
      },
    ],
  } as TopLevelSpec;
}

/** The client process over time: event-loop delay p99 (with the 20 ms limit) or its CPU. */
export function harnessTimelineSpec(run: LoadedRun, metric: 'loop' | 'cpu' | 'host'): TopLevelSpec {
  const height = 120;
  const values = bucketize(
    run.timeline,
    (r) => (metric === 'loop' ? r.harness.loopP99Ms : metric === 'cpu' ? r.harness.cpu : r.harness.hostBusy),
    (r) => r.tS,
  );
  const line =
    metric === 'loop' ? HARNESS_LOOP_P99_LIMIT_MS : metric === 'host' ? HOST_BUSY_LIMIT : undefined;
  const limit =
    line === undefined
      ? []
      : [
          {
            data: { values: [{ y: line }] },
            mark: { type: 'rule', color: '#b3261e', strokeDash: [2, 2] },
            encoding: { y: { field: 'y', type: 'quantitative' } },
          },
        ];
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title:
      metric === 'loop'
        ? `Client event-loop delay p99, ms (above ${HARNESS_LOOP_P99_LIMIT_MS} ms the harness sets the pace)`
        : metric === 'cpu'
          ? 'Client CPU (fraction of one core)'
          : `Host CPU busy, share of all its cores (from ${Math.round(HOST_BUSY_LIMIT * 100)} % the replicas' quotas are not guaranteed)`,
    width: WIDTH,
    height,
    layer: [
      ...overlayLayers(overlayOf(run), height),
      {
        data: { values },
        mark: { type: 'line', strokeWidth: 1.2, color: '#55606b', invalid: 'break-paths-show-domains' },
        encoding: {
          x: { field: 't', type: 'quantitative' },
          y: {
            field: 'value',
            type: 'quantitative',
            title: metric === 'loop' ? 'ms' : 'CPU',
            ...(metric !== 'loop' ? { axis: { format: '%' } } : {}),
          },
        },
      },
      ...limit,
    ],
  } as TopLevelSpec;
}

/** Runs of one role (or `down`) per replica, as segments: a handful of rects instead of one per second. */
export function roleSegments(
  run: LoadedRun,
): { replica: string; start: number; end: number; role: string }[] {
  const out: { replica: string; start: number; end: number; role: string }[] = [];
  for (const id of [...run.replicaIds].sort(compareReplicaIds)) {
    let cur: { replica: string; start: number; end: number; role: string } | null = null;
    for (const r of run.timeline) {
      const st = r.replicas[id];
      // No router view of the replica this second: leave a gap.
      if (!st || st.healthy === null) continue;
      const role = st.healthy ? st.role || 'unknown' : 'down';
      if (cur && cur.role === role && cur.end === r.tS) {
        cur.end = r.tS + 1;
      } else {
        if (cur) out.push(cur);
        cur = { replica: id, start: r.tS, end: r.tS + 1, role };
      }
    }
    if (cur) out.push(cur);
  }
  return out;
}

export function roleTimelineSpec(run: LoadedRun): TopLevelSpec {
  const values = roleSegments(run);
  const ids = [...run.replicaIds].sort(compareReplicaIds);
  const roles = [...new Set(values.map((v) => v.role))].sort(
    (a, b) => roleRank(a) - roleRank(b) || a.localeCompare(b),
  );
  const o = overlayOf(run);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: 'Replica role over time (as the router saw it)',
    width: WIDTH,
    height: Math.max(60, ids.length * 20),
    layer: [
      {
        data: { values },
        mark: { type: 'bar', height: { band: 0.8 } },
        encoding: {
          x: {
            field: 'start',
            type: 'quantitative',
            scale: { domain: [0, o.durationS], nice: false },
            title: 'time (s)',
          },
          x2: { field: 'end' },
          y: { field: 'replica', type: 'nominal', sort: ids, title: null },
          color: { field: 'role', type: 'nominal', title: 'role', scale: colorScale(roles, ROLE_COLORS) },
        },
      },
      ...(o.faults.length > 0
        ? [
            {
              data: { values: o.faults },
              mark: { type: 'rule', color: '#000', strokeDash: [4, 3], strokeWidth: 1 },
              encoding: { x: { field: 't', type: 'quantitative' } },
            },
          ]
        : []),
    ],
  } as TopLevelSpec;
}

function roleRank(r: string): number {
  const i = Object.keys(ROLE_COLORS).indexOf(r);
  return i === -1 ? 99 : i;
}

// The replication-lag chart of report.html: one line per replica, in the style of the CPU chart.
/** A run with lag samples (the write workload was on). */
export function hasLag(run: LoadedRun): boolean {
  return run.timeline.some((r) => Object.values(r.replicas).some((c) => c.lagMs !== null));
}

/** Each replica's replication lag (ms) over time, with the faults and phases overlaid. */
export function lagTimelineSpec(run: LoadedRun): TopLevelSpec {
  return replicaTimelineSpec(run, {
    title: "Replication lag per replica (ms: the standby's time since its last replayed commit)",
    value: (c) => c.lagMs,
    y: { title: 'lag ms' },
  });
}
