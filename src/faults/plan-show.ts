/**
 * Dry run of a fault plan: replays its events through a real router (no cluster, no sessions) and
 * reports, after each event, K+, the target role vector and the role of every replica.
 */
import Table from 'cli-table3';
import {
  createRouter,
  formatReadings,
  formatRoleVector,
  fullReference,
  repairTarget,
  resolveBorrowing,
  resolveReadings,
} from '../router/index.js';
import type {
  BorrowingOptions,
  BorrowThresholds,
  Partition,
  PlbReadings,
  Role,
  RoleChange,
  RoleVector,
  ServiceClass,
  StrategyName,
} from '../router/index.js';
import { tableStyle } from '../core/table-style.js';
import { compareReplicaIds, replicaIds } from '../core/replica-ids.js';
import { phaseBase, phaseNameFor, stateAfter, survivorDelta } from './actions.js';
import { planPhases } from './plan.js';
import type { FaultPlan } from '../run-format/plan.js';
import {
  FAULT_FIELD_NAMES,
  eventFields,
  FAULT_FIELDS,
  type FaultFields,
  type FaultAction,
  type FaultFieldName,
  type PlanReplicaState,
} from '../run-format/fault-actions.js';

/** The event fields plan show prints (the registry's `shown`): cpus. */
type ShownField = {
  [F in FaultFieldName]: (typeof FAULT_FIELDS)[F]['shown'] extends string ? F : never;
}[FaultFieldName];
const SHOWN_FIELDS = FAULT_FIELD_NAMES.filter((f): f is ShownField => FAULT_FIELDS[f].shown !== null);

export interface PlanShowOptions {
  strategy: StrategyName;
  /** plb: premium:mixed:freemium reference (router default 2:1:2 when absent). */
  reference?: RoleVector;
  /** static: premium:freemium partition (router default 3:2 when absent). */
  partition?: Partition;
  /** plb: the readings of the repair rules (DEFAULT_READINGS when absent). */
  readings?: Partial<PlbReadings>;
  /** plb: borrowing (shown only: a dry run opens no sessions, so nothing is borrowed). */
  borrowing?: BorrowingOptions | false;
}

interface PlanShowReplica {
  id: string;
  healthy: boolean;
  /** Plan-side state: up, down, stopped or paused. */
  state: PlanReplicaState;
  /** Router role (for an unhealthy replica: the role it had when it left). */
  role: Role;
  /** Set after a throttle event. */
  cpus?: number;
}

interface PlanShowRow {
  /** Seconds from the start of the run. */
  at: number;
  /** null for the initial row. */
  event: ({ replica: string; action: FaultAction } & Pick<FaultFields, ShownField>) | null;
  /** The phase that starts here; null for an event followed by another at the same time. */
  phase: string | null;
  survivors: number;
  /** plb only: the target role vector for K+ (null also with repair=none: the roles are kept). */
  target: RoleVector | null;
  replicas: PlanShowReplica[];
  /** Role changes the router made for this event (canonicalize, repair, ...). */
  changes: RoleChange[];
}

export interface PlanShow {
  plan: string;
  strategy: StrategyName;
  replicas: number;
  /** plb only: the reference scaled to K, the full-capacity role vector. */
  reference: RoleVector | null;
  /** plb only: the readings and borrowing thresholds a run would use. */
  readings: PlbReadings | null;
  borrowing: Record<ServiceClass, BorrowThresholds> | null;
  rows: PlanShowRow[];
}

/** Replays the plan through the router: markDown for down/stop/pause, markUp for rejoin/unpause. */
export function dryRunPlan(plan: FaultPlan, opts: PlanShowOptions): PlanShow {
  const ids = replicaIds(plan.replicas);
  const router = createRouter({
    strategy: opts.strategy,
    replicas: ids.map((id) => ({ id, weight: plan.weights?.[id] ?? 1 })),
    // With zones each zone is a pool of its own (router/zones.ts): its roles are per zone.
    ...(plan.zones ? { zones: plan.zones } : {}),
    ...(opts.reference ? { reference: opts.reference } : {}),
    ...(opts.partition ? { partition: opts.partition } : {}),
    ...(opts.readings ? { readings: opts.readings } : {}),
  });
  const isPlb = opts.strategy === 'plb';
  const readings = isPlb ? resolveReadings(opts.readings) : null;
  const full =
    readings && !plan.zones
      ? fullReference(plan.replicas, opts.reference, readings.reference, readings.floors)
      : null;
  const states = new Map<string, PlanReplicaState>(ids.map((id) => [id, 'up']));
  const cpus = new Map<string, number>();
  // Phase names come from planPhases so show and the metrics agree on naming.
  const phaseAt = new Map(planPhases(plan).map((p) => [p.startS, p.name]));

  const row = (
    at: number,
    event: PlanShowRow['event'],
    phase: string | null,
    survivors: number,
  ): PlanShowRow => ({
    at,
    event,
    phase,
    survivors,
    target: full && readings ? repairTarget(survivors, plan.replicas, full, readings) : null,
    replicas: router
      .snapshot()
      .slice()
      .sort((a, b) => compareReplicaIds(a.id, b.id))
      .map((r) => {
        const c = cpus.get(r.id);
        const rep: PlanShowReplica = {
          id: r.id,
          healthy: r.healthy,
          state: states.get(r.id) ?? 'up',
          role: r.role,
        };
        if (c !== undefined) rep.cpus = c;
        return rep;
      }),
    changes: router.drainChanges(),
  });

  let survivors = plan.replicas;
  const rows: PlanShowRow[] = [row(0, null, null, survivors)];
  const counts = new Map<string, number>();
  plan.events.forEach((ev, i) => {
    const nowMs = Math.round(ev.at * 1000);
    const before = states.get(ev.replica) ?? 'up';
    const after = stateAfter(ev.action, before);
    const base = phaseBase(ev.action, before !== 'up' && after === 'up');
    const count = (counts.get(base) ?? 0) + 1;
    counts.set(base, count);
    // Network faults stack: a cut replica cut again, or a heal of a loss alone, changes no K+.
    const delta = (before === 'up') === (after === 'up') ? 0 : survivorDelta(ev.action);
    if (delta < 0) router.markDown(ev.replica, nowMs);
    else if (delta > 0) router.markUp(ev.replica, nowMs);
    states.set(ev.replica, after);
    // Only a throttle carries cpus (the plan's checks): the replica's quota from then on.
    if (ev.cpus !== undefined) cpus.set(ev.replica, ev.cpus);
    survivors += delta;
    const next = plan.events[i + 1];
    const opens = !next || next.at !== ev.at;
    const phase = opens ? (phaseAt.get(ev.at) ?? phaseNameFor(base, count)) : null;
    const event: NonNullable<PlanShowRow['event']> = { replica: ev.replica, action: ev.action };
    const fields = eventFields(ev);
    for (const f of SHOWN_FIELDS) if (fields[f] !== undefined) Object.assign(event, { [f]: fields[f] });
    rows.push(row(ev.at, event, phase, survivors));
  });

  return {
    plan: plan.name,
    strategy: opts.strategy,
    replicas: plan.replicas,
    reference: full,
    readings,
    borrowing: isPlb ? resolveBorrowing(opts.borrowing) : null,
    rows,
  };
}

/** The dry run as a terminal table: one row per event, one column per replica. */
export function renderPlanShow(show: PlanShow, plan: FaultPlan): string {
  const ids = show.rows[0]?.replicas.map((r) => r.id) ?? [];
  const table = new Table({
    head: ['at', 'event', 'phase', 'K+', 'target p:m:f', ...ids],
    style: tableStyle(),
    // No rule between body rows: the table stays as tall as the plan is long.
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
  });
  for (const r of show.rows) {
    const event = r.event ? eventText(r.event) : 'start';
    table.push([
      `${r.at}s`,
      event,
      r.phase ?? (r.event ? '' : '-'),
      String(r.survivors),
      r.target ? formatRoleVector(r.target) : '-',
      ...r.replicas.map(replicaCell),
    ]);
  }
  const ref = show.reference ? `, reference ${formatRoleVector(show.reference)}` : '';
  const header =
    `plan ${plan.name}: ${plan.duration}s, warmup ${plan.warmup}s, ref window ${plan.referenceWindow}s, ` +
    `K=${plan.replicas}; strategy ${show.strategy}${ref}`;
  const phases = planPhases(plan)
    .map((p) => `${p.name} ${p.startS}..${p.endS}s K+=${p.survivors}`)
    .join(' | ');
  const readings =
    show.readings && show.borrowing ? `\nreadings: ${formatReadings(show.readings, show.borrowing)}` : '';
  return `${header}${readings}${balanceLines(plan)}\n${table.toString()}\nphases: ${phases}`;
}

/** `throttle r3 (0.1 cpus)`: the action, the replica and each shown field with its unit. */
function eventText(e: NonNullable<PlanShowRow['event']>): string {
  const fields = SHOWN_FIELDS.map((f) => {
    const unit = FAULT_FIELDS[f].shown;
    return e[f] !== undefined ? ` (${e[f]}${unit === '' ? '' : ` ${unit}`})` : '';
  });
  return `${e.action} ${e.replica}${fields.join('')}`;
}

/** The plan's static weights, per-replica quotas and zones, one line each ('' without). */
function balanceLines(plan: FaultPlan): string {
  const map = (m: Record<string, number | string>): string =>
    Object.entries(m)
      .map(([id, v]) => `${id}=${v}`)
      .join(' ');
  let out = '';
  if (plan.weights) out += `\nweights: ${map(plan.weights)}`;
  if (plan.cpus) out += `\ncpus: ${map(plan.cpus)}`;
  if (plan.zones) out += `\nzones: ${map(plan.zones)} (roles per zone; no target column)`;
  return out;
}

function replicaCell(r: PlanShowReplica): string {
  const base = r.healthy ? r.role : r.state === 'up' ? 'down' : r.state;
  return r.cpus !== undefined ? `${base} @${r.cpus}cpu` : base;
}
