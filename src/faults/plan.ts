/**
 * The fault-plan reader. Plans are YAML, read by core/user-file.ts and checked by one zod schema
 * (faults/plan-rules.ts' planSchema: the file's fields, then the plan's rules, into a FaultPlan);
 * every error is one PlbError('PLAN_INVALID') whose message reads `<file>:<line>: <field>: <what is
 * wrong>` so the user can jump straight to it.
 */
import { replicaIds } from '../core/replica-ids.js';
import { PlbError } from '../core/errors.js';
import { readUserFile, YamlFile } from '../core/user-file.js';
import { fieldPath, reportOwnMessage } from '../core/zod-issue.js';
import { computePhases } from './actions.js';
import { describeValue, MAX_PLAN_REPLICAS, type FaultPlan } from '../run-format/plan.js';
import { planSchema } from './plan-rules.js';

export const MAX_REPLICAS = MAX_PLAN_REPLICAS;

/** How large a plan may be: `maxReplicas` is MAX_SIM_REPLICAS for a simulated cluster. */
export interface PlanLimits {
  maxReplicas?: number;
}
/** Limits: a plan past them is a mistake (or hostile), and would only exhaust memory or the terminal. */
const MAX_PLAN_BYTES = 1024 * 1024;

/** Parses a plan from YAML text; `source` names the file in error messages. */
export function parsePlan(text: string, source: string, limits: PlanLimits = {}): FaultPlan {
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_PLAN_BYTES) {
    throw new PlbError(
      'PLAN_INVALID',
      `${source}: size: at most ${MAX_PLAN_BYTES} bytes (1 MiB), got ${bytes}`,
    );
  }
  const file = new YamlFile(text, source, 'PLAN_INVALID');
  // As JS, `1: x` would be the field "1": a plan's keys are names.
  const key = file.nonStringKey();
  if (key)
    throw file.fail(
      key.line,
      `${fieldPath(key.path) || 'plan'}: keys must be strings (got ${describeValue(key.key)})`,
    );
  const schema = planSchema(limits.maxReplicas ?? MAX_REPLICAS, (i) => file.lineAt(['events', i]));
  // No hint: the message already says where and what; a hint would only lengthen the line.
  return file.check(schema, undefined, reportOwnMessage('plan'));
}

/** Reads and parses a plan file. */
export function loadPlan(path: string, limits: PlanLimits = {}): FaultPlan {
  const text = readUserFile(path, {
    code: 'PLAN_INVALID',
    maxBytes: MAX_PLAN_BYTES,
    noun: 'plan',
    hint: 'pass the path of a YAML plan, e.g. plans/demo-cascade.yaml',
  });
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
