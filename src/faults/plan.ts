/**
 * Fault-plan parser and validator. Plans are YAML; every error is one PlbError('PLAN_INVALID') whose
 * message reads `<file>:<line>: <field>: <what is wrong>` so the user can jump straight to it.
 */
import { readFileSync, statSync } from 'node:fs';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, Scalar } from 'yaml';
import type { Document, Node as YamlNode, YAMLMap } from 'yaml';
import { DEFAULT_CLUSTER } from '../cluster/driver.js';
import { replicaIds } from '../core/replica-ids.js';
import { PlbError } from '../core/errors.js';
import { escapeControl, hasControl } from '../core/text.js';
import { actionRequirement, computePhases, stateAfter, type PlanReplicaState } from './actions.js';
import type { FaultAction, FaultEvent, FaultPlan } from '../run-format/plan.js';
import { faultActionSchema } from '../run-format/plan.js';
import { parseDuration } from '../core/duration.js';
import { MAX_SIM_REPLICAS } from '../core/replica-ids.js';

// The one list of actions is the plan schema's.
export const FAULT_ACTIONS: readonly FaultAction[] = faultActionSchema.options;
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
export const MAX_REPLICAS = 64;

/** How large a plan may be: `maxReplicas` is MAX_SIM_REPLICAS for a simulated cluster. */
export interface PlanLimits {
  maxReplicas?: number;
}
/** Limits: a plan past them is a mistake (or hostile), and would only exhaust memory or the terminal. */
export const MAX_PLAN_BYTES = 1024 * 1024;
export const MAX_EVENTS = 10_000;
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
const EVENT_KEYS = ['at', 'replica', 'zone', 'action', 'cpus', 'weight'] as const;
/** File-only actions: every replica of a zone at once, expanded to one down/rejoin per replica. */
const ZONE_ACTIONS = { 'zone-down': 'down', 'zone-up': 'rejoin' } as const;
const ZONE_RE = /^[A-Za-z0-9_-]{1,32}$/;

/** Parses a plan from YAML text; `source` names the file in error messages. */
export function parsePlan(text: string, source: string, limits: PlanLimits = {}): FaultPlan {
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_PLAN_BYTES) {
    throw new PlbError(
      'PLAN_INVALID',
      `${source}: size: at most ${MAX_PLAN_BYTES} bytes (1 MiB), got ${bytes}`,
    );
  }
  return new PlanReader(text, source, limits.maxReplicas ?? MAX_REPLICAS).read();
}

/** Reads and parses a plan file. */
export function loadPlan(path: string, limits: PlanLimits = {}): FaultPlan {
  let text: string;
  try {
    // Checked before reading: a huge (or endless, like /dev/zero) file is never read whole.
    const st = statSync(path);
    if (st.isFile() && st.size > MAX_PLAN_BYTES) {
      throw new PlbError(
        'PLAN_INVALID',
        `${escapeControl(path)}: size: at most ${MAX_PLAN_BYTES} bytes (1 MiB), got ${st.size}`,
      );
    }
    if (!st.isFile() && !st.isDirectory()) {
      throw new PlbError('PLAN_INVALID', `${escapeControl(path)}: not a regular file`);
    }
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (err instanceof PlbError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : String(code ?? err);
    throw new PlbError('PLAN_INVALID', `${path}: cannot read plan (${why})`, {
      hint: 'pass the path of a YAML plan, e.g. plans/demo-cascade.yaml',
      cause: err,
    });
  }
  return parsePlan(text, path, limits);
}

export interface PlanPhase {
  name: string;
  startS: number;
  endS: number;
  /** K+: healthy replicas during the phase. */
  survivors: number;
  /** Replicas not healthy during the phase (down, stopped or paused), in r1..rK order. */
  down: string[];
}

/** The phases a plan will have if every event is injected on time (the same function as a run's). */
export function planPhases(plan: FaultPlan): PlanPhase[] {
  const replicas = replicaIds(plan.replicas);
  return computePhases({
    faults: plan.events.map((e) => ({ tMs: e.at * 1000, replica: e.replica, action: e.action })),
    endMs: plan.duration * 1000,
    refWindowMs: plan.referenceWindow * 1000,
    warmupMs: plan.warmup * 1000,
    replicas,
  }).map((p) => ({
    name: p.name,
    startS: p.startMs / 1000,
    endS: p.endMs / 1000,
    survivors: p.survivors,
    down: p.down,
  }));
}

/** Formats seconds for messages: 90 -> "90s", 0.5 -> "0.5s". */
export function fmtSeconds(s: number): string {
  return `${s}s`;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

class PlanReader {
  private readonly lc = new LineCounter();
  private readonly doc: Document.Parsed;

  constructor(
    text: string,
    private readonly source: string,
    private readonly maxReplicas: number,
  ) {
    this.doc = parseDocument(text, { lineCounter: this.lc, prettyErrors: false });
  }

  read(): FaultPlan {
    const syntax = this.doc.errors[0];
    if (syntax) {
      const line = syntax.linePos?.[0].line ?? this.lc.linePos(syntax.pos[0]).line;
      // The yaml message may carry " at line X, column Y:" and a code frame; keep the first sentence.
      const msg = syntax.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      throw this.fail(line, 'yaml', msg);
    }
    const root = this.doc.contents;
    if (!isMap(root)) {
      const line = root ? this.lineOf(root) : 1;
      throw this.fail(
        line,
        'plan',
        `must be a mapping with name, duration and events (got ${describe(root?.toJSON())})`,
      );
    }
    const fields = this.fields(root, PLAN_KEYS, '');

    const name = this.value(fields.get('name'));
    if (fields.get('name') === undefined) throw this.fail(this.lineOf(root), 'name', 'required');
    if (typeof name !== 'string' || name.trim() === '') {
      throw this.fail(
        this.lineOf(fields.get('name')),
        'name',
        `must be a non-empty string (got ${describe(name)})`,
      );
    }
    if (name.trim().length > MAX_NAME_LENGTH) {
      throw this.fail(
        this.lineOf(fields.get('name')),
        'name',
        `must be at most ${MAX_NAME_LENGTH} characters (got ${name.trim().length})`,
      );
    }
    // The name reaches terminals, file names and reports: no control characters.
    if (hasControl(name)) {
      throw this.fail(
        this.lineOf(fields.get('name')),
        'name',
        `must not contain control characters (got ${describe(name)})`,
      );
    }
    const descNode = fields.get('description');
    const description = this.value(descNode) ?? '';
    if (typeof description !== 'string') {
      throw this.fail(
        this.lineOf(descNode),
        'description',
        `must be a string (got ${describe(description)})`,
      );
    }

    if (fields.get('duration') === undefined) throw this.fail(this.lineOf(root), 'duration', 'required');
    const duration = this.duration(fields.get('duration'), 'duration', true);
    if (duration > MAX_DURATION_S) {
      throw this.fail(
        this.lineOf(fields.get('duration')),
        'duration',
        `must be at most ${fmtSeconds(MAX_DURATION_S)} (24 h) (got ${fmtSeconds(duration)})`,
      );
    }
    const warmup = fields.has('warmup')
      ? this.duration(fields.get('warmup'), 'warmup', false)
      : DEFAULT_PLAN.warmup;
    const referenceWindow = fields.has('reference')
      ? this.duration(fields.get('reference'), 'reference', true)
      : DEFAULT_PLAN.referenceWindow;

    let replicas = DEFAULT_PLAN.replicas;
    if (fields.has('replicas')) {
      const node = fields.get('replicas');
      const v = this.value(node);
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > this.maxReplicas) {
        const err = this.fail(
          this.lineOf(node),
          'replicas',
          `must be an integer from 1 to ${this.maxReplicas} (got ${describe(v)})`,
        );
        // A plan only a simulated cluster can run says so (the one hint of the parser).
        if (typeof v === 'number' && v > this.maxReplicas && v <= MAX_SIM_REPLICAS)
          throw new PlbError('PLAN_INVALID', err.message, {
            hint: `up to ${MAX_SIM_REPLICAS} with --driver sim`,
          });
        throw err;
      }
      replicas = v;
    }

    if (warmup + referenceWindow > duration) {
      throw this.fail(
        this.lineOf(fields.get('duration')),
        'duration',
        `must be at least warmup ${fmtSeconds(warmup)} + reference ${fmtSeconds(referenceWindow)} = ` +
          `${fmtSeconds(warmup + referenceWindow)} (got ${fmtSeconds(duration)})`,
      );
    }

    const positive = (v: unknown): number | undefined =>
      typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
    const weights = this.replicaMap(fields.get('weights'), 'weights', replicas, positive, 'a number > 0');
    const cpus = this.replicaMap(fields.get('cpus'), 'cpus', replicas, positive, 'a number of cores > 0');
    const zones = this.replicaMap(
      fields.get('zones'),
      'zones',
      replicas,
      (v) => (typeof v === 'string' && ZONE_RE.test(v) ? v : undefined),
      'a zone name (letters, digits, _ or -)',
    );
    if (zones !== undefined) {
      const missing = replicaIds(replicas).filter((id) => zones[id] === undefined);
      if (missing.length > 0)
        throw this.fail(
          this.lineOf(fields.get('zones')),
          'zones',
          `give every replica a zone, or none (missing: ${missing.join(', ')})`,
        );
    }
    const events = this.events(fields.get('events'), {
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
  private replicaMap<T>(
    node: YamlNode | undefined,
    field: string,
    replicas: number,
    check: (v: unknown) => T | undefined,
    what: string,
  ): Record<string, T> | undefined {
    const resolved = this.resolve(node);
    if (resolved === undefined || (isScalar(resolved) && resolved.value === null)) return undefined;
    if (!isMap(resolved)) {
      throw this.fail(
        this.lineOf(resolved),
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
        throw this.fail(
          this.lineOf(keyNode ?? resolved),
          field,
          `keys must be replicas r1..r${replicas} (got ${describe(key)})`,
        );
      const valueNode = (pair.value as YamlNode | null) ?? undefined;
      const v = check(this.value(valueNode));
      if (v === undefined)
        throw this.fail(
          this.lineOf(valueNode ?? keyNode),
          `${field}.${key as string}`,
          `must be ${what} (got ${describe(this.value(valueNode))})`,
        );
      out[key as string] = v;
    }
    return out;
  }

  private events(
    node: YamlNode | undefined,
    ctx: {
      duration: number;
      warmup: number;
      referenceWindow: number;
      replicas: number;
      zones: Record<string, string> | undefined;
    },
  ): FaultEvent[] {
    const resolved = this.resolve(node);
    if (resolved === undefined || (isScalar(resolved) && resolved.value === null)) return [];
    if (!isSeq(resolved)) {
      throw this.fail(this.lineOf(resolved), 'events', `must be a list (got ${describe(resolved.toJSON())})`);
    }
    if (resolved.items.length > MAX_EVENTS) {
      throw this.fail(
        this.lineOf(resolved.items[MAX_EVENTS] as YamlNode),
        'events',
        `at most ${MAX_EVENTS} events (got ${resolved.items.length})`,
      );
    }
    const out: FaultEvent[] = [];
    const states = new Map<string, { state: PlanReplicaState; since: number }>();
    resolved.items.forEach((raw, i) => {
      const path = `events[${i}]`;
      const item = this.resolve(raw as YamlNode);
      if (!isMap(item)) {
        throw this.fail(
          this.lineOf(item),
          path,
          `must be a mapping with at, replica, action (got ${describe(item?.toJSON())})`,
        );
      }
      const line = this.lineOf(item);
      const f = this.fields(item, EVENT_KEYS, `${path}.`);
      const zoneAction = this.value(f.get('action'));
      if (typeof zoneAction === 'string' && Object.hasOwn(ZONE_ACTIONS, zoneAction)) {
        this.zoneEvent(f, path, line, ctx, zoneAction as keyof typeof ZONE_ACTIONS, out, states);
        return;
      }
      for (const key of ['at', 'replica', 'action'] as const) {
        if (!f.has(key)) throw this.fail(line, `${path}.${key}`, 'required');
      }
      if (f.has('zone'))
        throw this.fail(
          this.lineOf(f.get('zone')),
          `${path}.zone`,
          'only allowed with action zone-down or zone-up',
        );

      const at = this.duration(f.get('at'), `${path}.at`, false);
      if (at >= ctx.duration) {
        throw this.fail(
          this.lineOf(f.get('at')),
          `${path}.at`,
          `must be before duration ${fmtSeconds(ctx.duration)} (got ${fmtSeconds(at)})`,
        );
      }

      const replicaNode = f.get('replica');
      const replica = this.value(replicaNode);
      const rm = typeof replica === 'string' ? /^r([1-9]\d*)$/.exec(replica) : null;
      if (!rm || Number(rm[1]) > ctx.replicas) {
        throw this.fail(
          this.lineOf(replicaNode),
          `${path}.replica`,
          `must be one of r1..r${ctx.replicas} (got ${describe(replica)})`,
        );
      }
      const replicaId = replica as string;

      const actionNode = f.get('action');
      const action = this.value(actionNode);
      if (typeof action !== 'string' || !(FAULT_ACTIONS as readonly string[]).includes(action)) {
        throw this.fail(
          this.lineOf(actionNode),
          `${path}.action`,
          `must be one of ${[...FAULT_ACTIONS, ...Object.keys(ZONE_ACTIONS)].join(', ')} (got ${describe(action)})`,
        );
      }
      const act = action as FaultAction;

      let cpus: number | undefined;
      if (act === 'throttle') {
        if (!f.has('cpus')) throw this.fail(line, `${path}.cpus`, 'required for action throttle');
        const v = this.value(f.get('cpus'));
        if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
          throw this.fail(
            this.lineOf(f.get('cpus')),
            `${path}.cpus`,
            `must be a number > 0 (got ${describe(v)})`,
          );
        }
        cpus = v;
      } else if (f.has('cpus')) {
        throw this.fail(
          this.lineOf(f.get('cpus')),
          `${path}.cpus`,
          `only allowed with action throttle (action is ${act})`,
        );
      }
      let weight: number | undefined;
      if (f.has('weight')) {
        const v = this.value(f.get('weight'));
        if (act !== 'throttle')
          throw this.fail(
            this.lineOf(f.get('weight')),
            `${path}.weight`,
            `only allowed with action throttle (action is ${act})`,
          );
        if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
          throw this.fail(
            this.lineOf(f.get('weight')),
            `${path}.weight`,
            `must be a number > 0 (got ${describe(v)})`,
          );
        weight = v;
      }

      // Semantic checks, reported at the line of the event.
      const prev = out[out.length - 1];
      this.checkEventTime(line, path, at, prev, `events[${i - 1}]`, ctx);
      const cur = states.get(replicaId) ?? { state: 'up' as PlanReplicaState, since: 0 };
      const need = actionRequirement(act, cur.state);
      if (need !== undefined) {
        const now = cur.state === 'up' ? 'up' : `${cur.state} since ${fmtSeconds(cur.since)}`;
        throw this.fail(line, `${path}.action`, `${act} ${replicaId} needs it ${need} (it is ${now})`);
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
  private checkEventTime(
    line: number,
    path: string,
    at: number,
    prev: FaultEvent | undefined,
    prevName: string,
    ctx: { warmup: number; referenceWindow: number },
  ): void {
    if (prev && at < prev.at)
      throw this.fail(
        line,
        `${path}.at`,
        `out of order: ${fmtSeconds(at)} is before ${prevName} at ${fmtSeconds(prev.at)} (events must be sorted by time)`,
      );
    if (!prev && at < ctx.warmup + ctx.referenceWindow)
      throw this.fail(
        line,
        `${path}.at`,
        `first fault at ${fmtSeconds(at)} leaves no full reference window; it must be at or after ` +
          `warmup ${fmtSeconds(ctx.warmup)} + reference ${fmtSeconds(ctx.referenceWindow)} = ` +
          fmtSeconds(ctx.warmup + ctx.referenceWindow),
      );
  }

  /** zone-down / zone-up: one down / rejoin per replica of the zone, at one time (one phase). */
  private zoneEvent(
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
      if (!f.has(key)) throw this.fail(line, `${path}.${key}`, `required for action ${zoneAction}`);
    for (const key of ['replica', 'cpus', 'weight'] as const)
      if (f.has(key))
        throw this.fail(this.lineOf(f.get(key)), `${path}.${key}`, `not allowed with action ${zoneAction}`);
    if (ctx.zones === undefined)
      throw this.fail(line, `${path}.action`, `${zoneAction} needs the plan's zones: mapping`);
    const zone = this.value(f.get('zone'));
    const members = Object.keys(ctx.zones)
      .filter((id) => ctx.zones?.[id] === zone)
      .sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
    if (members.length === 0)
      throw this.fail(
        this.lineOf(f.get('zone')),
        `${path}.zone`,
        `must be one of the plan's zones ${[...new Set(Object.values(ctx.zones))].join(', ')} (got ${describe(zone)})`,
      );
    const at = this.duration(f.get('at'), `${path}.at`, false);
    if (at >= ctx.duration)
      throw this.fail(
        this.lineOf(f.get('at')),
        `${path}.at`,
        `must be before duration ${fmtSeconds(ctx.duration)} (got ${fmtSeconds(at)})`,
      );
    this.checkEventTime(line, path, at, out[out.length - 1], 'the event before it', ctx);
    const act = ZONE_ACTIONS[zoneAction];
    for (const replica of members) {
      const cur = states.get(replica) ?? { state: 'up' as PlanReplicaState, since: 0 };
      const need = actionRequirement(act, cur.state);
      if (need !== undefined) {
        const now = cur.state === 'up' ? 'up' : `${cur.state} since ${fmtSeconds(cur.since)}`;
        throw this.fail(
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

  /** Checks the keys of a mapping (strings, known) and returns key -> value node. */
  private fields(
    map: YAMLMap,
    allowed: readonly string[],
    prefix: string,
  ): Map<string, YamlNode | undefined> {
    const out = new Map<string, YamlNode | undefined>();
    for (const pair of map.items) {
      const keyNode = pair.key as YamlNode | null;
      const key = isScalar(keyNode) ? keyNode.value : keyNode;
      if (typeof key !== 'string') {
        const line = keyNode ? this.lineOf(keyNode) : this.lineOf(map);
        throw this.fail(
          line,
          prefix ? prefix.slice(0, -1) : 'plan',
          `keys must be strings (got ${describe(key)})`,
        );
      }
      if (!allowed.includes(key)) {
        throw this.fail(
          this.lineOf(keyNode!),
          `${prefix}${key}`,
          `unknown field (allowed: ${allowed.join(', ')})`,
        );
      }
      // Flow `{at}` has no value node at all: stand in a null scalar at the key's position.
      let value = pair.value as YamlNode | null;
      if (!value) {
        const empty = new Scalar(null);
        empty.range = keyNode!.range;
        value = empty;
      }
      out.set(key, value);
    }
    return out;
  }

  private duration(node: YamlNode | undefined, field: string, positive: boolean): number {
    const v = this.value(node);
    const d = parseDuration(v);
    if (d === undefined) {
      throw this.fail(
        this.lineOf(node),
        field,
        `must be a duration like 90, "90s", "2m", "1m30s" or "500ms" (got ${describe(v)})`,
      );
    }
    if (positive ? d <= 0 : d < 0) {
      throw this.fail(this.lineOf(node), field, `must be ${positive ? '> 0' : '>= 0'} (got ${describe(v)})`);
    }
    return d;
  }

  /** The plain value of a node (scalar value, or JS form of a collection). */
  private value(node: YamlNode | undefined): unknown {
    const n = this.resolve(node);
    if (n === undefined) return undefined;
    return isScalar(n) ? n.value : n.toJSON();
  }

  private resolve(node: YamlNode | undefined | null): YamlNode | undefined {
    if (node === undefined || node === null) return undefined;
    if (isAlias(node)) {
      const target = node.resolve(this.doc);
      if (!target) throw this.fail(this.lineOf(node), 'yaml', `unknown alias *${node.source}`);
      return target as YamlNode;
    }
    return node;
  }

  private lineOf(node: YamlNode | undefined | null): number {
    const start = node?.range?.[0];
    if (start === undefined) return 1;
    return this.lc.linePos(start).line;
  }

  private fail(line: number, field: string, msg: string): PlbError {
    // No hint: the message already says where and what; a hint would only lengthen the line.
    return new PlbError('PLAN_INVALID', `${this.source}:${line}: ${field}: ${msg}`);
  }
}
