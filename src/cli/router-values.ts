// The router's option values as written on a command line (`--reference 2:1:2`, `--readings paper`,
// `--lag-weights 200ms:800ms:10%`, ...): parsed here, so the router itself only takes typed options.
// Every error is one BAD_INPUT naming the flag.
import { PlbError } from '../core/errors.js';
import { READING_CHOICES, READING_PRESETS, resolveReadings } from '../router/readings.js';
import type { LagWeightOptions } from '../router/lag-weight.js';
import type { Partition, PlbReadings, RoleVector } from '../router/types.js';

function parseParts(text: string, count: number, flag: string, example: string): number[] {
  const parts = text.trim().split(':');
  const nums = parts.map((p) => (/^\d+$/.test(p.trim()) ? Number(p.trim()) : Number.NaN));
  if (parts.length !== count || nums.some((n) => !Number.isSafeInteger(n))) {
    throw new PlbError(
      'BAD_INPUT',
      `${flag} must be ${count} non-negative integers like ${example}, got '${text}'`,
      {
        hint: `e.g. ${flag} ${example}`,
      },
    );
  }
  if (nums.reduce((a, b) => a + b, 0) < 1) {
    throw new PlbError('BAD_INPUT', `${flag} must not be all zero, got '${text}'`, {
      hint: `e.g. ${flag} ${example}`,
    });
  }
  return nums;
}

/** Parse a premium:mixed:freemium reference like '2:1:2'. Throws BAD_INPUT naming `flag`. */
export function parseRoleVector(text: string, flag = '--reference'): RoleVector {
  const [premium = 0, mixed = 0, freemium = 0] = parseParts(text, 3, flag, '2:1:2');
  return { premium, mixed, freemium };
}

/** Parse a premium:freemium static partition like '3:2'. Throws BAD_INPUT naming `flag`. */
export function parsePartition(text: string, flag = '--partition'): Partition {
  const [premium = 0, freemium = 0] = parseParts(text, 2, flag, '3:2');
  return { premium, freemium };
}

const READING_KEYS = Object.keys(READING_CHOICES) as (keyof PlbReadings)[];

function presetNames(): string {
  return Object.keys(READING_PRESETS).join(', ');
}

/**
 * '--readings paper', '--readings donors=mixed-first,canonicalize=all', '--readings paper,repair=none':
 * an optional preset first, then key=value pairs over it (over DEFAULT_READINGS without a preset).
 * Throws BAD_INPUT naming `flag`, the bad key or value and the allowed ones.
 */
export function parseReadings(text: string, flag = '--readings'): PlbReadings {
  const items = text.split(',').map((s) => s.trim());
  if (items.some((s) => s === '')) {
    throw new PlbError(
      'BAD_INPUT',
      `${flag}: expected a preset (${presetNames()}) and/or key=value pairs like donors=mixed-first, got '${text}'`,
    );
  }
  let out: PlbReadings = resolveReadings({});
  const seen = new Set<string>();
  items.forEach((item, i) => {
    const eq = item.indexOf('=');
    if (eq < 0) {
      const preset = Object.hasOwn(READING_PRESETS, item)
        ? READING_PRESETS[item as keyof typeof READING_PRESETS]
        : undefined;
      if (preset === undefined) {
        throw new PlbError(
          'BAD_INPUT',
          `${flag}: unknown preset '${item}' (presets: ${presetNames()}; or key=value with ${READING_KEYS.join(', ')})`,
        );
      }
      if (i > 0) throw new PlbError('BAD_INPUT', `${flag}: the preset '${item}' must come first`);
      out = { ...preset };
      return;
    }
    const key = item.slice(0, eq).trim();
    if (seen.has(key)) throw new PlbError('BAD_INPUT', `${flag}: ${key} given twice`);
    seen.add(key);
    out = resolveReadings({ [key]: item.slice(eq + 1).trim() } as Partial<PlbReadings>, flag, out);
  });
  return out;
}

/** A replication lag as the lag flags write it: `200ms` or `1s` (units required); NaN otherwise. */
function lagValueMs(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*$/.exec(text);
  return m ? Number(m[1]) * (m[2] === 's' ? 1000 : 1) : Number.NaN;
}

function lagMs(text: string, field: string): number {
  const v = lagValueMs(text);
  if (Number.isNaN(v))
    throw new PlbError('BAD_INPUT', `${field}: expected a lag like 200ms or 1s (got "${text}")`);
  return v;
}

/** `200ms:800ms:10%` -> options; `low < high`, floor in (0, 100] %. */
export function parseLagWeights(text: string, field = '--lag-weights'): LagWeightOptions {
  const parts = text.split(':');
  if (parts.length !== 3)
    throw new PlbError('BAD_INPUT', `${field}: expected low:high:floor like 200ms:800ms:10% (got "${text}")`);
  const [low, high, floor] = parts as [string, string, string];
  const lowMs = lagMs(low, field);
  const highMs = lagMs(high, field);
  if (!(highMs > lowMs))
    throw new PlbError('BAD_INPUT', `${field}: the high threshold must be above the low one (got "${text}")`);
  const f = /^\s*(\d+(?:\.\d+)?)\s*%\s*$/.exec(floor);
  const pct = f ? Number(f[1]) : Number.NaN;
  if (!(pct > 0 && pct <= 100))
    throw new PlbError(
      'BAD_INPUT',
      `${field}: the floor must be a percentage in (0, 100] like 10% (got "${floor}")`,
    );
  return { lowMs, highMs, floor: pct / 100 };
}

/** `1s`, `500ms` -> ms (> 0). */
export function parseMaxLag(text: string, field = '--max-lag'): number {
  const v = lagValueMs(text);
  if (!(v > 0))
    throw new PlbError('BAD_INPUT', `${field}: expected a lag > 0 like 1s or 500ms (got "${text}")`);
  return v;
}

/** `a:50,b:50` -> zone shares summing to 1 (the share of clients per zone, `--client-zones`). */
export function parseClientZones(text: string, field = '--client-zones'): Record<string, number> {
  const out: Record<string, number> = {};
  let total = 0;
  for (const part of text.split(',')) {
    const m = /^\s*([A-Za-z0-9_-]+)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(part);
    if (!m)
      throw new PlbError('BAD_INPUT', `${field}: expected zone:share pairs like a:50,b:50 (got "${text}")`);
    const [, zone, share] = m as unknown as [string, string, string];
    if (zone in out) throw new PlbError('BAD_INPUT', `${field}: zone ${zone} given twice`);
    out[zone] = Number(share);
    total += Number(share);
  }
  if (!(total > 0)) throw new PlbError('BAD_INPUT', `${field}: the shares must not all be 0 (got "${text}")`);
  for (const z of Object.keys(out)) out[z] = (out[z] as number) / total;
  return out;
}

/** A share in [0, 1] (`--admission-min-share 0.25`, `--admission-premium-reserve 0.1`). */
export function parseShare(text: string, flag: string): number {
  const n = Number(text.trim());
  if (text.trim() === '' || !(n >= 0 && n <= 1))
    throw new PlbError('BAD_INPUT', `${flag}: expected a number in [0, 1] (got "${text}")`);
  return n;
}
