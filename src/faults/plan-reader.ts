// A fault plan's header (name, duration, warm-up, reference, replicas, weights, cpus, zones), read
// node by node so each error names its line; the events are plan-events.ts'.
import { isMap, isScalar } from 'yaml';
import type { Node as YamlNode } from 'yaml';
import { DEFAULT_CLUSTER } from '../cluster/driver.js';
import { MAX_SIM_REPLICAS, replicaIds } from '../core/replica-ids.js';
import { PlbError } from '../core/errors.js';
import { hasControl } from '../core/text.js';
import type { FaultPlan } from '../run-format/plan.js';
import { readEvents } from './plan-events.js';
import { describe, fmtSeconds, type PlanNodes } from './plan-nodes.js';

/** What a plan gets for a header field it leaves out. */
export const DEFAULT_PLAN: Readonly<Pick<FaultPlan, 'warmup' | 'referenceWindow' | 'replicas'>> =
  Object.freeze({
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
export const MAX_NAME_LENGTH = 100;
/** A plan runs at most a day. */
export const MAX_DURATION_S = 24 * 3600;

const PLAN_KEYS = [
  'name',
  'description',
  'duration',
  'warmup',
  'reference',
  'replicas',
  'weights',
  'cpus',
  'zones',
  'events',
] as const;
const ZONE_RE = /^[A-Za-z0-9_-]{1,32}$/;

export function readPlanNodes(n: PlanNodes, maxReplicas: number): FaultPlan {
  const root = n.file.root;
  if (!isMap(root)) {
    const line = root ? n.lineOf(root) : 1;
    throw n.fail(
      line,
      'plan',
      `must be a mapping with name, duration and events (got ${describe(root?.toJSON())})`,
    );
  }
  const fields = n.fields(root, PLAN_KEYS, '');

  const name = n.value(fields.get('name'));
  if (fields.get('name') === undefined) throw n.fail(n.lineOf(root), 'name', 'required');
  if (typeof name !== 'string' || name.trim() === '') {
    throw n.fail(n.lineOf(fields.get('name')), 'name', `must be a non-empty string (got ${describe(name)})`);
  }
  if (name.trim().length > MAX_NAME_LENGTH) {
    throw n.fail(
      n.lineOf(fields.get('name')),
      'name',
      `must be at most ${MAX_NAME_LENGTH} characters (got ${name.trim().length})`,
    );
  }
  // The name reaches terminals, file names and reports: no control characters.
  if (hasControl(name)) {
    throw n.fail(
      n.lineOf(fields.get('name')),
      'name',
      `must not contain control characters (got ${describe(name)})`,
    );
  }
  const descNode = fields.get('description');
  const description = n.value(descNode) ?? '';
  if (typeof description !== 'string') {
    throw n.fail(n.lineOf(descNode), 'description', `must be a string (got ${describe(description)})`);
  }

  if (fields.get('duration') === undefined) throw n.fail(n.lineOf(root), 'duration', 'required');
  const duration = n.duration(fields.get('duration'), 'duration', true);
  if (duration > MAX_DURATION_S) {
    throw n.fail(
      n.lineOf(fields.get('duration')),
      'duration',
      `must be at most ${fmtSeconds(MAX_DURATION_S)} (24 h) (got ${fmtSeconds(duration)})`,
    );
  }
  const warmup = fields.has('warmup')
    ? n.duration(fields.get('warmup'), 'warmup', false)
    : DEFAULT_PLAN.warmup;
  const referenceWindow = fields.has('reference')
    ? n.duration(fields.get('reference'), 'reference', true)
    : DEFAULT_PLAN.referenceWindow;

  let replicas = DEFAULT_PLAN.replicas;
  if (fields.has('replicas')) {
    const node = fields.get('replicas');
    const v = n.value(node);
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > maxReplicas) {
      const err = n.fail(
        n.lineOf(node),
        'replicas',
        `must be an integer from 1 to ${maxReplicas} (got ${describe(v)})`,
      );
      // A plan only a simulated cluster can run says so (the one hint of the parser).
      if (typeof v === 'number' && v > maxReplicas && v <= MAX_SIM_REPLICAS)
        throw new PlbError('PLAN_INVALID', err.message, {
          hint: `up to ${MAX_SIM_REPLICAS} with --driver sim`,
        });
      throw err;
    }
    replicas = v;
  }

  if (warmup + referenceWindow > duration) {
    throw n.fail(
      n.lineOf(fields.get('duration')),
      'duration',
      `must be at least warmup ${fmtSeconds(warmup)} + reference ${fmtSeconds(referenceWindow)} = ` +
        `${fmtSeconds(warmup + referenceWindow)} (got ${fmtSeconds(duration)})`,
    );
  }

  const positive = (v: unknown): number | undefined =>
    typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
  const weights = replicaMap(n, fields.get('weights'), 'weights', replicas, positive, 'a number > 0');
  const cpus = replicaMap(n, fields.get('cpus'), 'cpus', replicas, positive, 'a number of cores > 0');
  const zones = replicaMap(
    n,
    fields.get('zones'),
    'zones',
    replicas,
    (v) => (typeof v === 'string' && ZONE_RE.test(v) ? v : undefined),
    'a zone name (letters, digits, _ or -)',
  );
  if (zones !== undefined) {
    const missing = replicaIds(replicas).filter((id) => zones[id] === undefined);
    if (missing.length > 0)
      throw n.fail(
        n.lineOf(fields.get('zones')),
        'zones',
        `give every replica a zone, or none (missing: ${missing.join(', ')})`,
      );
  }
  const events = readEvents(n, fields.get('events'), {
    duration,
    warmup,
    referenceWindow,
    replicas,
    zones,
  });
  return {
    name: name.trim(),
    description: description.trim(),
    duration,
    warmup,
    referenceWindow,
    replicas,
    events,
    ...(weights ? { weights } : {}),
    ...(cpus ? { cpus } : {}),
    ...(zones ? { zones } : {}),
  };
}
/** A mapping r1..rK -> value (`weights`, `cpus`, `zones`); undefined when absent. */
function replicaMap<T>(
  n: PlanNodes,

  node: YamlNode | undefined,
  field: string,
  replicas: number,
  check: (v: unknown) => T | undefined,
  what: string,
): Record<string, T> | undefined {
  const resolved = n.resolve(node);
  if (resolved === undefined || (isScalar(resolved) && resolved.value === null)) return undefined;
  if (!isMap(resolved)) {
    throw n.fail(
      n.lineOf(resolved),
      field,
      `must be a mapping like {r1: ..., r2: ...} (got ${describe(resolved.toJSON())})`,
    );
  }
  const out: Record<string, T> = {};
  for (const pair of resolved.items) {
    const keyNode = pair.key as YamlNode | null;
    const key = isScalar(keyNode) ? keyNode.value : undefined;
    const rm = typeof key === 'string' ? /^r([1-9]\d*)$/.exec(key) : null;
    if (!rm || Number(rm[1]) > replicas)
      throw n.fail(
        n.lineOf(keyNode ?? resolved),
        field,
        `keys must be replicas r1..r${replicas} (got ${describe(key)})`,
      );
    const valueNode = (pair.value as YamlNode | null) ?? undefined;
    const v = check(n.value(valueNode));
    if (v === undefined)
      throw n.fail(
        n.lineOf(valueNode ?? keyNode),
        `${field}.${key as string}`,
        `must be ${what} (got ${describe(n.value(valueNode))})`,
      );
    out[key as string] = v;
  }
  return out;
}
