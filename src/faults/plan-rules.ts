// The rules of a fault plan that need the whole plan (its K, durations, zones and the replicas'
// states so far), and its resolution into the FaultPlan a run uses: defaults filled, zone-down /
// zone-up expanded to one event per replica. They run on a plan file whose fields all passed
// planFileSchema; each broken rule is one zod issue `<field>: <what>` at the line it names.
import { z } from 'zod';
import { DEFAULT_CLUSTER } from '../cluster/driver.js';
import { replicaIds } from '../core/replica-ids.js';
import {
  describeValue,
  faultPlanSchema,
  fmtSeconds,
  planFileSchemaFor,
  REPLICA_ID_RE,
  ZONE_ACTIONS,
  type CheckedPlanFile,
  type FaultEvent,
  type FaultPlan,
  type ZoneAction,
} from '../run-format/plan.js';
import {
  eventFields,
  NETWORK_ACTIONS,
  type FaultAction,
  type Link,
  type NetworkAction,
  type PlanReplicaState,
} from '../run-format/fault-actions.js';
import { actionRequirement, stateAfter } from './actions.js';

/** What a plan gets for a header field it leaves out. */
const DEFAULT_PLAN: Readonly<Pick<FaultPlan, 'warmup' | 'referenceWindow' | 'replicas'>> = Object.freeze({
  /**
   * Seconds from the start before anything is measured (connections, caches warm up).
   * @default 10
   */
  warmup: 10,
  /**
   * Seconds of the `ref` window just before the first fault (DESIGN.md, Phases).
   * @default 30
   */
  referenceWindow: 30,
  /**
   * K, the replicas the plan is written for: the cluster's default.
   * @default 5
   */
  replicas: DEFAULT_CLUSTER.replicas,
});

/**
 * The schema a plan file is read with: its fields (planFileSchema), then the plan rules, into the
 * resolved plan (faultPlanSchema). `lineOfEvent` gives each resolved event its file line.
 */
export function planSchema(maxReplicas: number, lineOfEvent: (index: number) => number) {
  return planFileSchemaFor(maxReplicas)
    .transform((file, ctx) => {
      try {
        return resolvePlan(file, lineOfEvent);
      } catch (err) {
        if (!(err instanceof RuleBroken)) throw err;
        ctx.issues.push({
          code: 'custom',
          message: err.message,
          path: err.path,
          params: err.params,
          input: file,
        });
        return z.NEVER;
      }
    })
    .pipe(faultPlanSchema);
}

/** A broken rule: the first one ends the check, as each error is one line. */
class RuleBroken extends Error {
  constructor(
    readonly path: PropertyKey[],
    message: string,
    readonly params: { at?: PropertyKey[]; field?: string; of?: 'key' } = {},
  ) {
    super(message);
  }
}

/** What the events are checked against. */
interface PlanContext {
  duration: number;
  warmup: number;
  referenceWindow: number;
  replicas: number;
  zones: Record<string, string> | undefined;
  /** One of r1..rK. */
  isReplica: (id: unknown) => boolean;
}

function resolvePlan(file: CheckedPlanFile, lineOfEvent: (index: number) => number): FaultPlan {
  const { duration } = file;
  const warmup = file.warmup ?? DEFAULT_PLAN.warmup;
  const referenceWindow = file.reference ?? DEFAULT_PLAN.referenceWindow;
  const replicas = file.replicas ?? DEFAULT_PLAN.replicas;
  if (warmup + referenceWindow > duration)
    throw new RuleBroken(
      ['duration'],
      `must be at least warmup ${fmtSeconds(warmup)} + reference ${fmtSeconds(referenceWindow)} = ` +
        `${fmtSeconds(warmup + referenceWindow)} (got ${fmtSeconds(duration)})`,
    );
  const isReplica = (id: unknown) => {
    const m = typeof id === 'string' ? REPLICA_ID_RE.exec(id) : null;
    return m !== null && Number(m[1]) <= replicas;
  };
  for (const field of ['weights', 'cpus', 'zones'] as const)
    for (const key of Object.keys(file[field] ?? {}))
      if (!isReplica(key))
        throw new RuleBroken(
          [field, key],
          `keys must be replicas r1..r${replicas} (got ${describeValue(key)})`,
          { field, of: 'key' },
        );
  const zones = file.zones ?? undefined;
  if (zones !== undefined) {
    const missing = replicaIds(replicas).filter((id) => zones[id] === undefined);
    if (missing.length > 0)
      throw new RuleBroken(['zones'], `give every replica a zone, or none (missing: ${missing.join(', ')})`);
  }

  const plan: PlanContext = { duration, warmup, referenceWindow, replicas, zones, isReplica };
  const events = resolveEvents(file.events ?? [], plan, lineOfEvent);
  return {
    name: file.name,
    description: (file.description ?? '').trim(),
    duration,
    warmup,
    referenceWindow,
    replicas,
    events,
    ...(file.weights ? { weights: file.weights } : {}),
    ...(file.cpus ? { cpus: file.cpus } : {}),
    ...(zones ? { zones } : {}),
  };
}

/**
 * The events in file order, each checked against the plan (time, replica, zone) and the states of
 * its replicas so far; a zone event becomes one event per replica of the zone, at one time.
 */
function resolveEvents(
  events: NonNullable<CheckedPlanFile['events']>,
  plan: PlanContext,
  lineOfEvent: (index: number) => number,
): FaultEvent[] {
  const { duration, zones, replicas, isReplica } = plan;
  const out: FaultEvent[] = [];
  const states = new Map<string, { state: PlanReplicaState; since: number }>();
  const net = new Map<string, Map<NetworkAction, number>>();
  /** Checks an event against its replica's state and network faults so far, and adds it. */
  const take = (event: FaultEvent, path: PropertyKey[]) => {
    const { replica, action: act, at } = event;
    const cur = states.get(replica) ?? { state: 'up' as PlanReplicaState, since: 0 };
    const need = actionRequirement(act, cur.state);
    if (need !== undefined) {
      const now = cur.state === 'up' ? 'up' : `${cur.state} since ${fmtSeconds(cur.since)}`;
      const what = `${act} ${replica} needs it ${need} (it is ${now})`;
      const zoneAction = event.zone === undefined ? undefined : act === 'down' ? 'zone-down' : 'zone-up';
      throw new RuleBroken([...path, 'action'], zoneAction ? `${zoneAction} ${event.zone}: ${what}` : what, {
        at: path,
      });
    }
    checkNetwork(act, replica, event.what, at, net, path);
    const next = stateAfter(act, cur.state);
    if (next !== cur.state) states.set(replica, { state: next, since: at });
    out.push(event);
  };
  /** The heals a fault's `for:` asks for, in time order; one the plan ends first is an error at its `for`. */
  const heals: { at: number; replica: string; what: NetworkAction; line: number; path: PropertyKey[] }[] = [];
  const flushHeals = (until: number) => {
    heals.sort((a, b) => a.at - b.at);
    while (heals.length > 0 && heals[0]!.at <= until && heals[0]!.at < duration) {
      const h = heals.shift()!;
      const kinds = net.get(h.replica);
      const inForce =
        kinds?.has(h.what) === true ||
        (h.what === 'partition' && kinds?.has('partition-replication') === true);
      const why = `${h.what} ${h.replica} ends at ${fmtSeconds(h.at)}`;
      if (!inForce) throw new RuleBroken([...h.path, 'for'], `${why}, but it was healed before`);
      try {
        take({ at: h.at, replica: h.replica, action: 'heal', what: h.what, line: h.line }, h.path);
      } catch (err) {
        if (!(err instanceof RuleBroken)) throw err;
        throw new RuleBroken([...h.path, 'for'], `${why}: ${err.message}`);
      }
    }
  };
  events.forEach((ev, i) => {
    const path = ['events', i];
    const line = lineOfEvent(i);
    // Checked by planFileSchema: every event has its time and action, a fault event its replica.
    const at = ev.at!;
    const action = ev.action!;
    const zone = ev.zone;
    const isZoneAction = Object.hasOwn(ZONE_ACTIONS, action);
    let members = [ev.replica as string];
    if (zone !== undefined) {
      if (zones === undefined)
        throw new RuleBroken([...path, 'action'], `${action} needs the plan's zones: mapping`, { at: path });
      members = Object.keys(zones)
        .filter((id) => zones[id] === zone)
        .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
      if (members.length === 0)
        throw new RuleBroken(
          [...path, 'zone'],
          `must be one of the plan's zones ${[...new Set(Object.values(zones))].join(', ')} (got ${describeValue(zone)})`,
        );
    }
    if (at >= duration)
      throw new RuleBroken(
        [...path, 'at'],
        `must be before duration ${fmtSeconds(duration)} (got ${fmtSeconds(at)})`,
      );
    if (zone === undefined && !isReplica(ev.replica))
      throw new RuleBroken(
        [...path, 'replica'],
        `must be one of r1..r${replicas} (got ${describeValue(ev.replica)})`,
      );
    checkEventTime(
      i,
      at,
      out[out.length - 1],
      zone !== undefined ? 'the event before it' : `events[${i - 1}]`,
      plan,
    );
    // The heals of earlier faults' `for:` that fall before this event come first.
    flushHeals(at);
    const fileAction: FaultAction = isZoneAction
      ? ZONE_ACTIONS[action as ZoneAction]
      : (action as FaultAction);
    const { link, ...fields } = eventFields(ev);
    for (const replica of members) {
      for (const act of resolvedActions(fileAction, link))
        take(
          {
            at,
            replica,
            action: act,
            ...fields,
            line,
            ...(zone !== undefined ? { zone: zone as string } : {}),
          },
          path,
        );
      // `what: partition` ends a partition of any link.
      if (ev.for !== undefined)
        heals.push({ at: at + ev.for, replica, what: fileAction as NetworkAction, line, path });
    }
  });
  flushHeals(duration);

  return out;
}

/**
 * The resolved actions of a file's action: a partition's `link` picks the client port's, the WAL
 * stream's (an action of its own: K+ holds) or both, the WAL stream's first so that the phase they
 * open together is named after the client port's (`down-N`).
 */
function resolvedActions(action: FaultAction, link: Link | undefined): FaultAction[] {
  if (action !== 'partition' || link === undefined || link === 'clients') return [action];
  return link === 'replication' ? ['partition-replication'] : ['partition-replication', 'partition'];
}

/**
 * Network faults stack per replica, one of each kind; a heal ends one kind (`what:`) or all, and
 * must leave no partition or reset in force (so a heal always brings the replica back). Tracks
 * the faults in force in `net`.
 */
function checkNetwork(
  act: FaultAction,
  replica: string,
  what: NetworkAction | undefined,
  at: number,
  net: Map<string, Map<NetworkAction, number>>,
  path: PropertyKey[],
): void {
  const inForce = net.get(replica) ?? new Map<NetworkAction, number>();
  net.set(replica, inForce);
  const broken = (field: string, message: string) =>
    new RuleBroken([...path, field], `${act} ${replica}: ${message}`, { at: path });
  const list = () => [...inForce.keys()].join(', ');
  if ((NETWORK_ACTIONS as readonly string[]).includes(act)) {
    const since = inForce.get(act as NetworkAction);
    if (since !== undefined)
      throw broken('action', `already in force since ${fmtSeconds(since)} (heal it first)`);
    inForce.set(act as NetworkAction, at);
    return;
  }
  if (act !== 'heal') return;
  if (inForce.size === 0) throw broken('action', 'needs a network fault in force (it has none)');
  if (what === undefined) return inForce.clear();
  // `what: partition` ends a partition of either link.
  const ends = what === 'partition' ? (['partition', 'partition-replication'] as const) : [what];
  if (!ends.some((w) => inForce.has(w)))
    throw broken('what', `${what} is not in force (in force: ${list()})`);
  for (const w of ends) inForce.delete(w);
  if (inForce.has('partition') || inForce.has('reset'))
    throw broken('what', `leaves ${list()} in force: heal it whole (without what) or end those first`);
}

/** Events in time order, and the first one after a whole reference window (at the event's line). */
function checkEventTime(
  i: number,
  at: number,
  prev: FaultEvent | undefined,
  prevName: string,
  ctx: PlanContext,
): void {
  const broken = (message: string) => new RuleBroken(['events', i, 'at'], message, { at: ['events', i] });
  if (prev && at < prev.at)
    throw broken(
      `out of order: ${fmtSeconds(at)} is before ${prevName} at ${fmtSeconds(prev.at)} (events must be sorted by time)`,
    );
  if (!prev && at < ctx.warmup + ctx.referenceWindow)
    throw broken(
      `first fault at ${fmtSeconds(at)} leaves no full reference window; it must be at or after ` +
        `warmup ${fmtSeconds(ctx.warmup)} + reference ${fmtSeconds(ctx.referenceWindow)} = ` +
        fmtSeconds(ctx.warmup + ctx.referenceWindow),
    );
}
