import { PlbError } from '../core/errors.js';
import type { ServiceClass } from '../core/service-class.js';
import type { QueryKind, WorkloadSpec } from '../run-format/config.js';

const DEFAULT_WEIGHTS: Record<QueryKind, number> = { point: 0.5, range: 0.3, scan: 0.2 };

/**
 * Sized for 5 replicas at 0.25 CPU each: busy in `ref`, overloaded with two replicas down, and
 * sessions short enough that routing turns over several times in a demo phase. The load they give
 * depends on the host (docs/bench.md#workload); `--think-time auto` sets it instead.
 */
export const DEFAULT_WORKLOAD: WorkloadSpec = {
  model: 'closed',
  clients: 32,
  rate: 20,
  mix: { premium: 25, freemium: 75 },
  rampUpS: null,
  datasetRows: 100_000,
  queryTimeoutMs: 15_000,
  // pgJDBC's default connectTimeout: a busy replica's fork + SCRAM can take seconds at T=1000.
  connectTimeoutMs: 10_000,
  maxOpenSessions: 400,
  classes: {
    premium: { queriesPerSession: 10, thinkTimeMs: 250, queryWeights: { ...DEFAULT_WEIGHTS } },
    freemium: { queriesPerSession: 10, thinkTimeMs: 250, queryWeights: { ...DEFAULT_WEIGHTS } },
  },
};

/** '25:75' -> {premium: 25, freemium: 75}. */
export function parseMix(text: string, field = '--mix'): Record<ServiceClass, number> {
  const m = /^\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(text);
  if (!m) throw new PlbError('BAD_INPUT', `${field}: expected premium:freemium like 25:75 (got "${text}")`);
  const premium = Number(m[1]);
  const freemium = Number(m[2]);
  if (premium + freemium <= 0) throw new PlbError('BAD_INPUT', `${field}: the two shares must not both be 0`);
  return { premium, freemium };
}

/** Splits `total` clients between the classes by the mix (largest remainder, deterministic). */
export function splitByMix(total: number, mix: Record<ServiceClass, number>): Record<ServiceClass, number> {
  const sum = mix.premium + mix.freemium;
  const premium = Math.round((total * mix.premium) / sum);
  return { premium, freemium: total - premium };
}

export const QUERY_KINDS: readonly QueryKind[] = ['point', 'range', 'scan'];

/** Per-class values: one for both classes, or some classes by name (the rest keep theirs). */
export type PerClass<T> = Partial<Record<ServiceClass, T>>;

/**
 * `10` -> both classes; `premium=10,freemium=40` -> each named class (a class left out keeps its
 * value). `one` parses a single value and throws naming the field.
 */
export function parsePerClass<T>(text: string, field: string, one: (v: string) => T): PerClass<T> {
  if (!text.includes('=')) {
    const v = one(text.trim());
    return { premium: v, freemium: v };
  }
  const out: PerClass<T> = {};
  for (const part of text.split(',')) {
    const m = /^\s*([a-z]+)\s*=\s*(.*?)\s*$/.exec(part);
    const cls = m?.[1];
    if (!m || (cls !== 'premium' && cls !== 'freemium'))
      throw new PlbError(
        'BAD_INPUT',
        `${field}: expected one value or premium=<value>,freemium=<value> (got "${text}")`,
      );
    if (out[cls] !== undefined) throw new PlbError('BAD_INPUT', `${field}: ${cls} given twice`);
    out[cls] = one(m[2] ?? '');
  }
  return out;
}

/** `0.5:0.3:0.2` -> point, range and scan weights (relative; at least one above 0). */
export function parseQueryWeights(text: string, field = '--query-mix'): Record<QueryKind, number> {
  const parts = text.split(':').map((s) => s.trim());
  const nums = parts.map((s) => (/^\d+(\.\d+)?$/.test(s) ? Number(s) : NaN));
  if (parts.length !== 3 || nums.some((n) => !Number.isFinite(n)))
    throw new PlbError(
      'BAD_INPUT',
      `${field}: expected point:range:scan weights like 0.5:0.3:0.2 (got "${text}")`,
    );
  const [point, range, scan] = nums as [number, number, number];
  return checkQueryWeights({ point, range, scan }, field);
}

/** Weights must be finite, >= 0, and not all 0. */
export function checkQueryWeights(w: Record<QueryKind, number>, field: string): Record<QueryKind, number> {
  for (const k of QUERY_KINDS)
    if (!(Number.isFinite(w[k]) && w[k] >= 0))
      throw new PlbError('BAD_INPUT', `${field}: the ${k} weight must be a number >= 0 (got ${w[k]})`);
  if (QUERY_KINDS.every((k) => w[k] === 0))
    throw new PlbError('BAD_INPUT', `${field}: the weights must not all be 0`);
  return w;
}

/** `0.5:0.3:0.2`, the form --query-mix takes. */
export function queryWeightsLabel(w: Record<QueryKind, number>): string {
  return QUERY_KINDS.map((k) => String(w[k])).join(':');
}
