// The network-fault cells of sim-vs-real (issue 47): for a plan with partition, reset, loss, delay,
// bandwidth or a WAL-only cut, per side (real, sim) and strategy, pooled over the side's runs (one
// per seed): each fault's detection delay (median and range), false detections, and in the phase
// it opens the premium and freemium p95 with their 95 % intervals, the faulted replica's share of
// the new sessions against its weight's share, and the sessions that failed.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Table from 'cli-table3';
import type { RunSummary } from '../src/run-format/summary.js';
import { estimateOf, type Estimates } from './sim-vs-real-verdicts.js';

const NETWORK = new Set(['partition', 'partition-replication', 'reset', 'loss', 'delay', 'bandwidth']);

interface PlanEvent {
  at: number;
  replica: string;
  action: string;
  ms?: number;
  jitter?: number;
  percent?: number;
  rate?: number;
  direction?: string;
}

interface Run {
  summary: RunSummary;
  events: PlanEvent[];
}

/** Every run of the side's directories, by strategy. */
function runsOf(dirs: readonly string[]): Map<string, Run[]> {
  const out = new Map<string, Run[]>();
  for (const dir of dirs)
    for (const name of readdirSync(dir)) {
      const f = join(dir, name, 'summary.json');
      if (!existsSync(f)) continue;
      const summary = JSON.parse(readFileSync(f, 'utf8')) as RunSummary;
      const config = JSON.parse(readFileSync(join(dir, name, 'config.json'), 'utf8')) as {
        plan: { events: PlanEvent[] };
      };
      const list = out.get(summary.strategy) ?? [];
      list.push({ summary, events: config.plan.events });
      out.set(summary.strategy, list);
    }
  return out;
}

const s1 = (x: number): string => (x / 1000).toFixed(1);

/**
 * `6.0 s [5.2, 6.9]` over the runs that detected it; `-` when none was expected or seen. A real
 * fault is injected a moment after its `at`.
 */
function detection(runs: readonly Run[], ev: PlanEvent | undefined): string {
  if (ev === undefined) return '-';
  const at = ev.at * 1000;
  const delays = runs
    .flatMap((r) =>
      r.summary.detection.filter(
        (d) =>
          d.replica === ev.replica &&
          d.action === ev.action &&
          d.injectedMs >= at &&
          d.injectedMs < at + 5000,
      ),
    )
    .map((d) => d.delayMs);
  if (delays.length === 0) return '-';
  const seen = delays.filter((d): d is number => d !== null).sort((a, b) => a - b);
  if (seen.length === 0) return `never (${delays.length})`;
  const mid = seen[Math.floor(seen.length / 2)] as number;
  const missed = delays.length - seen.length;
  return `${s1(mid)} s [${s1(seen[0] as number)}, ${s1(seen[seen.length - 1] as number)}]${missed ? ` +${missed} never` : ''}`;
}

/** The replica's share of the phase's new sessions, pooled over the runs, and its weight's share. */
function share(runs: readonly Run[], phase: string, replica: string): { text: string; pct: number | null } {
  let mine = 0;
  let all = 0;
  let weight = 0;
  let weights = 0;
  for (const r of runs) {
    const ph = r.summary.phases.find((p) => p.name === phase);
    if (!ph) continue;
    for (const [id, st] of Object.entries(ph.replicas)) {
      all += st.sessionsOpened;
      weights += st.weight ?? 1;
      if (id === replica) {
        mine += st.sessionsOpened;
        weight += st.weight ?? 1;
      }
    }
  }
  if (all === 0) return { text: '-', pct: null };
  const pct = (100 * mine) / all;
  return { text: `${pct.toFixed(1)}% (w ${((100 * weight) / weights).toFixed(0)}%)`, pct };
}

/** In the fault's phase, against ref (a role split, plb's, gives a replica less than its weight). */
function shareCell(runs: readonly Run[], phase: string, replica: string): string {
  const ref = share(runs, 'ref', replica).pct;
  return `${ref === null ? '-' : `${ref.toFixed(1)}%`} -> ${share(runs, phase, replica).text}`;
}

function failed(runs: readonly Run[], phase: string): number {
  let n = 0;
  for (const r of runs) {
    const ph = r.summary.phases.find((p) => p.name === phase);
    if (ph) n += ph.classes.premium.sessionsFailed + ph.classes.freemium.sessionsFailed;
  }
  return n;
}

function what(ev: PlanEvent): string {
  const arg =
    ev.action === 'delay'
      ? ` ${ev.ms} ms${ev.jitter ? ` ±${ev.jitter}` : ''}`
      : ev.action === 'loss'
        ? ` ${ev.percent}%`
        : ev.action === 'bandwidth'
          ? ` ${ev.rate} bit/s`
          : ev.direction && ev.direction !== 'both'
            ? ` ${ev.direction}`
            : '';
  return `${ev.action}${arg} ${ev.replica} @${ev.at}s`;
}

/** The table of network-fault cells for each side; empty when the plan has no network fault. */
export function networkCells(
  sides: readonly { name: string; dirs: readonly string[]; estimates: Estimates }[],
): string {
  const table = new Table({
    head: [
      'side',
      'strategy',
      'fault',
      'phase',
      'runs',
      'detected after',
      'up after heal',
      'false',
      'premium p95 [95 %]',
      'freemium p95 [95 %]',
      'its share of new sessions: ref -> phase',
      'sessions failed',
    ],
    style: { head: [], border: [] },
  });
  const p95 = (e: Estimates, n: string, ph: string, cls: string): string => {
    const x = estimateOf(e, n, ph, cls, 'p95');
    if (!x || x.value === null) return '-';
    const iv = x.lo === null || x.hi === null ? '' : ` [${x.lo.toFixed(1)}, ${x.hi.toFixed(1)}]`;
    return `${x.value.toFixed(1)}${iv}`;
  };
  for (const side of sides) {
    for (const [strategy, runs] of runsOf(side.dirs)) {
      const events = runs[0]?.events.filter((e) => NETWORK.has(e.action)) ?? [];
      const falseDetections = runs.reduce((s, r) => s + (r.summary.detectionCounts?.unexplained ?? 0), 0);
      for (const ev of events) {
        // The phase it opened: a real run's boundary is when it was injected, a moment after `at`.
        const phase =
          runs[0]?.summary.phases.find((p) => p.startS >= ev.at - 0.5 && p.startS < ev.at + 5)?.name ?? '-';
        table.push([
          side.name,
          strategy,
          what(ev),
          phase,
          runs.length,
          detection(runs, ev),
          detection(
            runs,
            runs[0]?.events.find((e) => e.action === 'heal' && e.replica === ev.replica && e.at > ev.at),
          ),
          falseDetections,
          p95(side.estimates, strategy, phase, 'premium'),
          p95(side.estimates, strategy, phase, 'freemium'),
          shareCell(runs, phase, ev.replica),
          failed(runs, phase),
        ]);
      }
    }
  }
  return table.length === 0 ? '' : `network faults (runs pooled per side)\n${table.toString()}\n`;
}
