/**
 * The settings that make runs repeats of one another: everything in config.json but the seed
 * (and the strategy, plan name and mix, which group keys name already). Each has a readable value
 * for labels and a canonical one for comparing; a field an older plb did not write is "unknown",
 * equal only to another unknown.
 */
import { templateMix } from './tables/templates-table.js';
import { createHash } from 'node:crypto';
import type { RunConfig } from '../run-format/config.js';
import type { ClassWorkload } from '../run-format/config.js';
import { readingsName } from '../router/readings.js';

/** Setting names in display order (the report's words). */
export const SETTING_NAMES = [
  'driver',
  'cpus',
  'model',
  'clients',
  'rate',
  'think time',
  'queries/session',
  'query mix',
  'readings',
  'reference',
  'partition',
  'borrow',
  'slow start',
  'oracle',
  'shutdown sessions',
  'on failure',
  'sim cpu',
  'routers',
  'plan',
] as const;
export type SettingName = (typeof SETTING_NAMES)[number];

/** A value every group shares that is not said (a default older runs had too, without the setting). */
export const UNSAID_SHARED: Partial<Record<SettingName, string>> = {
  'shutdown sessions': 'off',
  'on failure': 'retry',
  'sim cpu': 'quota',
  routers: '1',
};

const UNKNOWN = 'unknown';
/** Canonical value of a missing field: no written value can equal it. */
const MISSING = '\u0000missing';

export interface SettingValue {
  label: string;
  canonical: string;
}

/** JSON with object keys sorted: equal values, equal text. */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

export function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 6);
}

/** `250ms`, `1.5s`. */
function fmtMs(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${Math.round(ms) / 1000}s`;
}

const num = (v: number): string => String(Math.round(v * 1000) / 1000);
const missing: SettingValue = { label: UNKNOWN, canonical: MISSING };
const of = (label: string, canonical: unknown = label): SettingValue => ({
  label,
  canonical: canonicalJson(canonical),
});

/** `10` for both classes, `premium 5, freemium 30` when they differ. */
function perClass(
  classes: Record<'premium' | 'freemium', ClassWorkload> | undefined,
  pick: (c: ClassWorkload) => string,
): SettingValue {
  if (!classes) return missing;
  const p = pick(classes.premium);
  const f = pick(classes.freemium);
  return of(p === f ? p : `premium ${p}, freemium ${f}`, [p, f]);
}

/** Weights as shares of 1 (0.5:0.3:0.2 and 5:3:2 are the same mix). */
function weightsLabel(c: ClassWorkload): string {
  const w = c.queryWeights;
  const sum = w.point + w.range + w.scan || 1;
  return [w.point, w.range, w.scan].map((v) => num(v / sum)).join(':');
}

/** `1` (one router sees every session), `4 local`, `4 replica 1s`. */
function routersLabel(r: RunConfig['routers']): string {
  if (r === undefined || (r.count === 1 && r.view !== 'replica')) return '1';
  return `${r.count} ${r.view}${r.view === 'replica' ? ` ${fmtMs(r.viewIntervalMs)}` : ''}`;
}

/** A run's settings from its config.json (all unknown without one). */
export function runSettings(cfg: RunConfig | undefined, planName: string): Record<SettingName, SettingValue> {
  const c = cfg ?? {};
  const w = c.workload;
  const cal = c.calibration as { targetCpu?: unknown } | undefined;
  const b = c.borrowing;
  const cpus = c.replicaCpus ?? c.cluster?.cpus;
  const plan = c.plan;
  return {
    driver: c.driver !== undefined ? of(c.driver) : missing,
    cpus: cpus !== undefined ? of(num(cpus)) : missing,
    model: w ? of(w.model) : missing,
    clients: (w?.clients ?? c.clients) !== undefined ? of(String(w?.clients ?? c.clients)) : missing,
    // The rate matters to the open model only.
    rate: w ? of(w.model === 'open' ? `${num(w.rate)}/s` : 'n/a') : missing,
    // auto: the think time is what a calibration measured for the target; the target is the setting.
    'think time': cal
      ? of(typeof cal.targetCpu === 'number' ? `auto (${Math.round(cal.targetCpu * 100)}% CPU)` : 'auto')
      : perClass(w?.classes, (x) => fmtMs(x.thinkTimeMs)),
    'queries/session': perClass(w?.classes, (x) => num(x.queriesPerSession)),
    // A workload's own templates: their names and weights say the mix, their SQL is in the key.
    'query mix': w?.templates ? of(...templateMix(w.templates)) : perClass(w?.classes, weightsLabel),
    readings: c.readings
      ? { label: readingsName(c.readings), canonical: canonicalJson(c.readings) }
      : missing,
    reference: c.reference
      ? of(`${c.reference.premium}:${c.reference.mixed}:${c.reference.freemium}`)
      : missing,
    partition: c.partition ? of(`${c.partition.premium}:${c.partition.freemium}`) : missing,
    borrow: b
      ? of(
          !b.premium.enabled && !b.freemium.enabled
            ? 'off'
            : [b.premium, b.freemium].map((x) => (x.enabled ? num(x.pressureRatio) : 'off')).join(':'),
          b,
        )
      : missing,
    'slow start': c.slowStartMs !== undefined ? of(fmtMs(c.slowStartMs)) : missing,
    oracle: c.oracle !== undefined ? of(c.oracle ? 'on' : 'off') : missing,
    // Off unless asked: runs from before the flag are runs without it.
    'shutdown sessions': of(c.shutdownSessions === true ? 'on' : 'off'),
    // Models chosen to test a mechanism (model-options.ts): today's unless config.json says so.
    'on failure': of(w?.onFailure ?? 'retry'),
    'sim cpu': of(c.simCpu ?? 'quota'),
    // One router that sees every session unless config.json says more (older runs: one).
    routers: of(routersLabel(c.routers)),
    // The name alone is not the plan: its events and duration are.
    plan: plan
      ? of(plan.name, {
          ...plan,
          path: undefined,
          events: plan.events.map((e) => ({ ...e, line: undefined })),
        })
      : { label: planName, canonical: `${JSON.stringify(planName)}${MISSING}` },
  };
}

/** The canonical text of all settings: equal for runs that may be repeats. */
export function settingsKeyOf(s: Record<SettingName, SettingValue>): string {
  return canonicalJson(Object.fromEntries(SETTING_NAMES.map((n) => [n, s[n].canonical])));
}

export interface SettingsDiff {
  /** Settings whose value is not the same in every group, with the values in group order. */
  differ: { name: string; values: string[] }[];
  /** Settings every group shares (known ones), readable. */
  shared: { name: string; value: string }[];
}

/** `groups differ in: think time (250ms vs 1s), readings (plb vs paper)` (null: nothing differs). */
export function differLine(d: SettingsDiff): string | null {
  if (d.differ.length === 0) return null;
  return `groups differ in: ${d.differ.map((x) => `${x.name} (${x.values.join(' vs ')})`).join(', ')}`;
}

/** `settings: driver sim · cpus 0.25 · clients 32 · ...` (null: none known). */
export function sharedLine(d: SettingsDiff): string | null {
  const shown = d.shared.filter((s) => s.name !== 'plan' && s.value !== 'n/a');
  if (shown.length === 0) return null;
  return `settings: ${shown.map((s) => `${s.name} ${s.value}`).join(' · ')}`;
}
