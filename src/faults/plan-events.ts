// The events of a fault plan: each checked against the plan (time, replica, action, its fields)
// and against the replica's state so far; zone-down / zone-up expand to one event per replica.
import { isMap, isScalar, isSeq } from 'yaml';
import type { Node as YamlNode } from 'yaml';
import { actionRequirement, stateAfter, type PlanReplicaState } from './actions.js';
import type { FaultAction, FaultEvent } from '../run-format/plan.js';
import { faultActionSchema } from '../run-format/plan.js';
import { describe, fmtSeconds, type PlanNodes } from './plan-nodes.js';

// The one list of actions is the plan schema's.
export const FAULT_ACTIONS: readonly FaultAction[] = faultActionSchema.options;
export const MAX_EVENTS = 10_000;
export const EVENT_KEYS = ['at', 'replica', 'zone', 'action', 'cpus', 'weight'] as const;
/** File-only actions: every replica of a zone at once, expanded to one down/rejoin per replica. */
const ZONE_ACTIONS = { 'zone-down': 'down', 'zone-up': 'rejoin' } as const;

export function readEvents(
  n: PlanNodes,

  node: YamlNode | undefined,
  ctx: {
    duration: number;
    warmup: number;
    referenceWindow: number;
    replicas: number;
    zones: Record<string, string> | undefined;
  },
): FaultEvent[] {
  const resolved = n.resolve(node);
  if (resolved === undefined || (isScalar(resolved) && resolved.value === null)) return [];
  if (!isSeq(resolved)) {
    throw n.fail(n.lineOf(resolved), 'events', `must be a list (got ${describe(resolved.toJSON())})`);
  }
  if (resolved.items.length > MAX_EVENTS) {
    throw n.fail(
      n.lineOf(resolved.items[MAX_EVENTS] as YamlNode),
      'events',
      `at most ${MAX_EVENTS} events (got ${resolved.items.length})`,
    );
  }
  const out: FaultEvent[] = [];
  const states = new Map<string, { state: PlanReplicaState; since: number }>();
  resolved.items.forEach((raw, i) => {
    const path = `events[${i}]`;
    const item = n.resolve(raw as YamlNode);
    if (!isMap(item)) {
      throw n.fail(
        n.lineOf(item),
        path,
        `must be a mapping with at, replica, action (got ${describe(item?.toJSON())})`,
      );
    }
    const line = n.lineOf(item);
    const f = n.fields(item, EVENT_KEYS, `${path}.`);
    const zoneAction = n.value(f.get('action'));
    if (typeof zoneAction === 'string' && Object.hasOwn(ZONE_ACTIONS, zoneAction)) {
      zoneEvent(n, f, path, line, ctx, zoneAction as keyof typeof ZONE_ACTIONS, out, states);
      return;
    }
    for (const key of ['at', 'replica', 'action'] as const) {
      if (!f.has(key)) throw n.fail(line, `${path}.${key}`, 'required');
    }
    if (f.has('zone'))
      throw n.fail(n.lineOf(f.get('zone')), `${path}.zone`, 'only allowed with action zone-down or zone-up');

    const at = n.duration(f.get('at'), `${path}.at`, false);
    if (at >= ctx.duration) {
      throw n.fail(
        n.lineOf(f.get('at')),
        `${path}.at`,
        `must be before duration ${fmtSeconds(ctx.duration)} (got ${fmtSeconds(at)})`,
      );
    }

    const replicaNode = f.get('replica');
    const replica = n.value(replicaNode);
    const rm = typeof replica === 'string' ? /^r([1-9]\d*)$/.exec(replica) : null;
    if (!rm || Number(rm[1]) > ctx.replicas) {
      throw n.fail(
        n.lineOf(replicaNode),
        `${path}.replica`,
        `must be one of r1..r${ctx.replicas} (got ${describe(replica)})`,
      );
    }
    const replicaId = replica as string;

    const actionNode = f.get('action');
    const action = n.value(actionNode);
    if (typeof action !== 'string' || !(FAULT_ACTIONS as readonly string[]).includes(action)) {
      throw n.fail(
        n.lineOf(actionNode),
        `${path}.action`,
        `must be one of ${[...FAULT_ACTIONS, ...Object.keys(ZONE_ACTIONS)].join(', ')} (got ${describe(action)})`,
      );
    }
    const act = action as FaultAction;

    let cpus: number | undefined;
    if (act === 'throttle') {
      if (!f.has('cpus')) throw n.fail(line, `${path}.cpus`, 'required for action throttle');
      const v = n.value(f.get('cpus'));
      if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
        throw n.fail(n.lineOf(f.get('cpus')), `${path}.cpus`, `must be a number > 0 (got ${describe(v)})`);
      }
      cpus = v;
    } else if (f.has('cpus')) {
      throw n.fail(
        n.lineOf(f.get('cpus')),
        `${path}.cpus`,
        `only allowed with action throttle (action is ${act})`,
      );
    }
    let weight: number | undefined;
    if (f.has('weight')) {
      const v = n.value(f.get('weight'));
      if (act !== 'throttle')
        throw n.fail(
          n.lineOf(f.get('weight')),
          `${path}.weight`,
          `only allowed with action throttle (action is ${act})`,
        );
      if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
        throw n.fail(
          n.lineOf(f.get('weight')),
          `${path}.weight`,
          `must be a number > 0 (got ${describe(v)})`,
        );
      weight = v;
    }

    // Semantic checks, reported at the line of the event.
    const prev = out[out.length - 1];
    checkEventTime(n, line, path, at, prev, `events[${i - 1}]`, ctx);
    const cur = states.get(replicaId) ?? { state: 'up' as PlanReplicaState, since: 0 };
    const need = actionRequirement(act, cur.state);
    if (need !== undefined) {
      const now = cur.state === 'up' ? 'up' : `${cur.state} since ${fmtSeconds(cur.since)}`;
      throw n.fail(line, `${path}.action`, `${act} ${replicaId} needs it ${need} (it is ${now})`);
    }
    const nextState = stateAfter(act, cur.state);
    if (nextState !== cur.state) states.set(replicaId, { state: nextState, since: at });

    const ev: FaultEvent = { at, replica: replicaId, action: act, line };
    if (cpus !== undefined) ev.cpus = cpus;
    if (weight !== undefined) ev.weight = weight;
    out.push(ev);
  });
  return out;
}
/** Events in time order, and the first one after a whole reference window. */
function checkEventTime(
  n: PlanNodes,

  line: number,
  path: string,
  at: number,
  prev: FaultEvent | undefined,
  prevName: string,
  ctx: { warmup: number; referenceWindow: number },
): void {
  if (prev && at < prev.at)
    throw n.fail(
      line,
      `${path}.at`,
      `out of order: ${fmtSeconds(at)} is before ${prevName} at ${fmtSeconds(prev.at)} (events must be sorted by time)`,
    );
  if (!prev && at < ctx.warmup + ctx.referenceWindow)
    throw n.fail(
      line,
      `${path}.at`,
      `first fault at ${fmtSeconds(at)} leaves no full reference window; it must be at or after ` +
        `warmup ${fmtSeconds(ctx.warmup)} + reference ${fmtSeconds(ctx.referenceWindow)} = ` +
        fmtSeconds(ctx.warmup + ctx.referenceWindow),
    );
}
/** zone-down / zone-up: one down / rejoin per replica of the zone, at one time (one phase). */
function zoneEvent(
  n: PlanNodes,

  f: Map<string, YamlNode | undefined>,
  path: string,
  line: number,
  ctx: {
    duration: number;
    warmup: number;
    referenceWindow: number;
    zones: Record<string, string> | undefined;
  },
  zoneAction: keyof typeof ZONE_ACTIONS,
  out: FaultEvent[],
  states: Map<string, { state: PlanReplicaState; since: number }>,
): void {
  for (const key of ['at', 'zone'] as const)
    if (!f.has(key)) throw n.fail(line, `${path}.${key}`, `required for action ${zoneAction}`);
  for (const key of ['replica', 'cpus', 'weight'] as const)
    if (f.has(key))
      throw n.fail(n.lineOf(f.get(key)), `${path}.${key}`, `not allowed with action ${zoneAction}`);
  if (ctx.zones === undefined)
    throw n.fail(line, `${path}.action`, `${zoneAction} needs the plan's zones: mapping`);
  const zone = n.value(f.get('zone'));
  const members = Object.keys(ctx.zones)
    .filter((id) => ctx.zones?.[id] === zone)
    .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
  if (members.length === 0)
    throw n.fail(
      n.lineOf(f.get('zone')),
      `${path}.zone`,
      `must be one of the plan's zones ${[...new Set(Object.values(ctx.zones))].join(', ')} (got ${describe(zone)})`,
    );
  const at = n.duration(f.get('at'), `${path}.at`, false);
  if (at >= ctx.duration)
    throw n.fail(
      n.lineOf(f.get('at')),
      `${path}.at`,
      `must be before duration ${fmtSeconds(ctx.duration)} (got ${fmtSeconds(at)})`,
    );
  checkEventTime(n, line, path, at, out[out.length - 1], 'the event before it', ctx);
  const act = ZONE_ACTIONS[zoneAction];
  for (const replica of members) {
    const cur = states.get(replica) ?? { state: 'up' as PlanReplicaState, since: 0 };
    const need = actionRequirement(act, cur.state);
    if (need !== undefined) {
      const now = cur.state === 'up' ? 'up' : `${cur.state} since ${fmtSeconds(cur.since)}`;
      throw n.fail(
        line,
        `${path}.action`,
        `${zoneAction} ${String(zone)}: ${act} ${replica} needs it ${need} (it is ${now})`,
      );
    }
    const next = stateAfter(act, cur.state);
    if (next !== cur.state) states.set(replica, { state: next, since: at });
    out.push({ at, replica, action: act, line, zone: zone as string });
  }
}
