/**
 * The balancing guide's options of a bench run (reference: replica-load-balancing): static
 * weights, per-replica CPU quotas, zones and the client zone split, ProxySQL-style lag eviction.
 * The flags, their one check each, and how they combine with the plan live here; flags.ts
 * spreads them in, run.ts applies them.
 */
import { parseClientZones, parseMaxLag } from '../../cli/router-values.js';
import { Flags } from '@oclif/core';
import { PlbError } from '../../core/errors.js';
import type { FaultPlan } from '../../run-format/plan.js';
import { DEFAULT_ZONE_SPILL } from '../../router/zones.js';
import { durationMsFlag } from '../../cli/flags.js';

/** What a run balances by, beyond its strategy. Every field absent: as before. */
export interface BalanceOptions {
  /** Static weight per replica id (absent ids: 1): the plan's `weights`, overridden by `--weights`. */
  weights?: Record<string, number>;
  /** CPU quota per replica id set before the run (the plan's `cpus`). */
  cpus?: Record<string, number>;
  /** Zone per replica id (the plan's `zones`): sessions prefer their client's zone. */
  zones?: Record<string, string>;
  /** Share of clients per zone (`--client-zones`, sums to 1). */
  clientZones?: Record<string, number>;
  /** Spill threshold of the zone preference (`--zone-spill`). */
  zoneSpill?: number;
  /** `--max-lag`: a replica lagging more than this takes no new sessions (write runs only). */
  maxLagMs?: number;
}

const HELP = 'PLB ROUTER';

export const balanceFlags = {
  weights: Flags.string({
    description:
      "static replica weights (relative capacity), r1=2,r2=1 (others 1); overrides the plan's weights:; wlc and plb use them, rr, lc and static ignore them",
    helpGroup: HELP,
  }),
  'max-lag': Flags.string({
    description:
      'with --write-rate: a replica whose lag exceeds this (e.g. 1s) takes no new sessions until back under (ProxySQL max_replication_lag), or off; not with --lag-weights; acts through the weights, so wlc and plb only',
    default: 'off',
    helpGroup: HELP,
  }),
  'client-zones': Flags.string({
    description:
      "share of clients per zone, a:50,b:50 (needs the plan's zones:); sessions prefer replicas of their client's zone",
    helpGroup: HELP,
  }),
  'zone-spill': Flags.string({
    description: `with zones: a session goes to another zone when its own zone's best replica is this many times as loaded (>= 1)`,
    default: String(DEFAULT_ZONE_SPILL),
    helpGroup: HELP,
  }),
  'max-session-lifetime': Flags.string({
    description:
      'a session ends after this long (e.g. 10s) even with queries left, as a pool max lifetime would (HikariCP maxLifetime); default: none',
    helpGroup: 'WORKLOAD',
  }),
};

export interface BalanceFlagValues {
  weights?: string | undefined;
  'max-lag'?: string | undefined;
  'client-zones'?: string | undefined;
  'zone-spill'?: string | undefined;
  'max-session-lifetime'?: string | undefined;
}

/** `r1=2,r2=1` -> weights (> 0). */
export function parseWeights(text: string, field = '--weights'): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of text.split(',')) {
    const m = /^\s*(r[1-9]\d*)\s*=\s*(\d+(?:\.\d+)?)\s*$/.exec(part);
    if (!m)
      throw new PlbError(
        'BAD_INPUT',
        `${field}: expected replica=weight pairs like r1=2,r2=1 (got "${text}")`,
      );
    const w = Number(m[2]);
    if (!(w > 0)) throw new PlbError('BAD_INPUT', `${field}: weight of ${m[1]} must be > 0 (got ${m[2]})`);
    out[m[1] as string] = w;
  }
  return out;
}

function maxLagFlag(text: string): number | undefined {
  return text.trim() === 'off' ? undefined : parseMaxLag(text);
}

function zoneSpillFlag(text: string): number {
  const v = Number(text);
  if (!(v >= 1) || !Number.isFinite(v))
    throw new PlbError('BAD_INPUT', `--zone-spill: must be a number >= 1 (got "${text}")`);
  return v;
}

/** `--max-session-lifetime`: ms (> 0). */
export function parseSessionLifetime(text: string): number {
  return durationMsFlag('max-session-lifetime', text, { positive: true });
}

/** The checks by flag name (checks.ts BENCH_CHECKS). */
export const BALANCE_CHECKS: Record<string, (v: string | number) => unknown> = {
  weights: (v) => parseWeights(String(v)),
  'max-lag': (v) => maxLagFlag(String(v)),
  'client-zones': (v) => parseClientZones(String(v)),
  'zone-spill': (v) => zoneSpillFlag(String(v)),
  'max-session-lifetime': (v) => parseSessionLifetime(String(v)),
};

/** The balance group parsed (a flag left out takes its default). */
export interface BalanceSettings {
  weights?: Record<string, number>;
  maxLagMs?: number;
  clientZones?: Record<string, number>;
  zoneSpill: number;
  sessionLifetimeMs?: number;
}

/** The balance group from its text; BAD_INPUT naming the flag. */
export function parseBalanceFlags(flags: BalanceFlagValues): BalanceSettings {
  const maxLagMs = maxLagFlag(flags['max-lag'] ?? 'off');
  const lifetime = flags['max-session-lifetime'];
  return {
    ...(flags.weights === undefined ? {} : { weights: parseWeights(flags.weights) }),
    ...(maxLagMs === undefined ? {} : { maxLagMs }),
    ...(flags['client-zones'] === undefined ? {} : { clientZones: parseClientZones(flags['client-zones']) }),
    zoneSpill: zoneSpillFlag(flags['zone-spill'] ?? String(DEFAULT_ZONE_SPILL)),
    ...(lifetime === undefined ? {} : { sessionLifetimeMs: parseSessionLifetime(lifetime) }),
  };
}

/** resolveBalance from the flags' text (a direct caller's), through the same parsers. */
export function resolveBalance(
  flags: BalanceFlagValues & { 'lag-weights'?: string | undefined },
  plan: FaultPlan,
  writeRate: number,
): BalanceOptions {
  const lagWeights = (flags['lag-weights'] ?? 'off').trim() !== 'off';
  return balanceOptions(parseBalanceFlags(flags), { plan, writeRate, lagWeights });
}

/** The run's balance options from its group and the plan; every conflict is one line. */
export function balanceOptions(
  b: BalanceSettings,
  run: { plan: FaultPlan; writeRate: number; lagWeights: boolean },
): BalanceOptions {
  const { plan, writeRate } = run;
  const out: BalanceOptions = {};
  for (const id of Object.keys(b.weights ?? {}))
    if (Number(id.slice(1)) > plan.replicas)
      throw new PlbError(
        'BAD_INPUT',
        `--weights: ${id} is not a replica of plan ${plan.name} (r1..r${plan.replicas})`,
      );
  const weights = { ...plan.weights, ...b.weights };
  if (Object.keys(weights).length > 0) out.weights = weights;
  if (plan.cpus) out.cpus = { ...plan.cpus };
  if (b.maxLagMs !== undefined) {
    if (run.lagWeights)
      throw new PlbError('BAD_INPUT', '--max-lag: not with --lag-weights (eviction or weighting, pick one)');
    if (!(writeRate > 0))
      throw new PlbError('BAD_INPUT', '--max-lag: needs --write-rate (lag is measured only with writes on)');
    out.maxLagMs = b.maxLagMs;
  }
  if (b.clientZones !== undefined) {
    if (!plan.zones)
      throw new PlbError('BAD_INPUT', `--client-zones: plan ${plan.name} has no zones: mapping`);
    const known = new Set(Object.values(plan.zones));
    for (const z of Object.keys(b.clientZones))
      if (!known.has(z))
        throw new PlbError(
          'BAD_INPUT',
          `--client-zones: zone ${z} has no replica (plan zones: ${[...known].join(', ')})`,
        );
    out.clientZones = b.clientZones;
  }
  if (plan.zones) {
    out.zones = { ...plan.zones };
    out.zoneSpill = b.zoneSpill;
  }
  return out;
}

/** The router's replica list: ids with their static weights. */
export function weightedReplicas(
  ids: readonly string[],
  weights: Readonly<Record<string, number>> | undefined,
): Array<{ id: string; weight: number }> {
  return ids.map((id) => ({ id, weight: weights?.[id] ?? 1 }));
}
