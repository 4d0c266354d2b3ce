// The router and health flag groups, shared by `plb bench` and `plb proxy`: their flags, the one
// check of each value, and the typed settings a command gets from them.
import { parsePartition, parseRoleVector } from './router-values.js';
import { Flags } from '@oclif/core';
import { PlbError } from '../core/errors.js';
import { DEFAULT_HEALTH } from '../cluster/health.js';
import { DEFAULT_BORROWING, DEFAULT_SLOW_START_MS, resolveBorrowing } from '../router/index.js';
import type { BorrowingOptions, Partition, RoleVector } from '../router/types.js';
import type { HealthOptions } from '../run-format/config.js';
import { durationMsFlag } from './flags.js';

/** Help sections of the bench and proxy flags (oclif `helpGroup`). */
export const HELP_GROUPS = {
  workload: 'WORKLOAD',
  router: 'PLB ROUTER',
  health: 'HEALTH',
  cluster: 'CLUSTER',
  output: 'OUTPUT',
} as const;

/** A positive number (an integer unless told), at most max; the error names the flag. */
export function positive(name: string, n: number, integer = true, max = Infinity): number {
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new PlbError(
      'BAD_INPUT',
      `--${name}: must be a positive ${integer ? 'integer' : 'number'} (got ${n})`,
    );
  }
  if (n > max) throw new PlbError('BAD_INPUT', `--${name}: must be at most ${max} (got ${n})`);
  return n;
}

/**
 * '1.5:2' -> pressure ratios for premium and freemium (return ratios follow), 'off' -> false, and
 * one direction off: '1.5:off' (only premium borrows), 'off:2' (only freemium borrows).
 */
export function parseBorrowing(text: string): BorrowingOptions | false {
  if (text.trim() === 'off') return false;
  const m = /^\s*(\d+(?:\.\d+)?|off)\s*:\s*(\d+(?:\.\d+)?|off)\s*$/.exec(text);
  if (!m)
    throw new PlbError(
      'BAD_INPUT',
      `--borrow: expected premium:freemium ratios like 1.5:2 (either may be off, as in 1.5:off), or off (got "${text}")`,
    );
  const ratio = (cls: 'premium' | 'freemium', part: string) => {
    if (part === 'off') return { enabled: false };
    const v = Number(part);
    if (!(v > 1)) throw new PlbError('BAD_INPUT', `--borrow: the ${cls} ratio must be > 1 (got ${v})`);
    // Keep a band between borrowing and returning: returnRatio * pressureRatio > 1.
    return { pressureRatio: v, returnRatio: Math.max(DEFAULT_BORROWING[cls].returnRatio, 1.25 / v) };
  };
  const options: BorrowingOptions = {
    premium: ratio('premium', m[1] ?? ''),
    freemium: ratio('freemium', m[2] ?? ''),
  };
  if (options.premium?.enabled === false && options.freemium?.enabled === false) return false;
  resolveBorrowing(options);
  return options;
}

/** The one check of each router and health value, by flag name; throws BAD_INPUT naming the flag. */
export const ROUTER_CHECKS: Record<string, (v: string | number) => unknown> = {
  reference: (v) => parseRoleVector(String(v), '--reference'),
  partition: (v) => parsePartition(String(v), '--partition'),
  borrow: (v) => parseBorrowing(String(v)),
  'slow-start': (v) => durationMsFlag('slow-start', String(v)),
  'health-interval': (v) => positive('health-interval', durationMsFlag('health-interval', String(v)), false),
  fall: (v) => positive('fall', Number(v)),
  rise: (v) => positive('rise', Number(v)),
  'hang-timeout': (v) => positive('hang-timeout', durationMsFlag('hang-timeout', String(v)), false),
};

function checkRouterValue(name: string, value: string | number): unknown {
  const check = ROUTER_CHECKS[name];
  return check ? check(value) : value;
}

// Checked when the command line is read, by the same functions executeBench uses.
const checkedString = Flags.custom<string>({
  parse: async (input, _ctx, opts) => {
    checkRouterValue(opts.name, input);
    return input;
  },
});
const checkedNumber = Flags.custom<number>({
  parse: async (input, _ctx, opts) => {
    const n = input.trim() === '' ? NaN : Number(input);
    checkRouterValue(opts.name, n);
    return n;
  },
});

/** The router's flags a bench and the proxy share. */
export const routerFlags = {
  reference: checkedString({
    description: 'plb reference split premium:mixed:freemium (K=5)',
    default: '2:1:2',
    helpGroup: HELP_GROUPS.router,
  }),
  partition: checkedString({
    description: 'static partition premium:freemium',
    default: '3:2',
    helpGroup: HELP_GROUPS.router,
  }),
  borrow: checkedString({
    description:
      'plb borrowing: premium:freemium pressure ratios (a class borrows a replica of the other role when its own best replica is that many times as loaded); either may be off (1.5:off: only premium borrows), or off',
    default: '1.5:2',
    helpGroup: HELP_GROUPS.router,
  }),
  'slow-start': checkedString({
    description: 'plb/wlc slow-start ramp of a rejoining replica',
    default: `${DEFAULT_SLOW_START_MS / 1000}s`,
    helpGroup: HELP_GROUPS.router,
  }),
};

/** The health checker's flags. */
export const healthFlags = {
  'health-interval': checkedString({
    description: 'health check interval',
    default: `${DEFAULT_HEALTH.intervalMs}ms`,
    helpGroup: HELP_GROUPS.health,
  }),
  fall: checkedNumber({
    description: 'failed checks that mark a replica down',
    default: DEFAULT_HEALTH.fall,
    helpGroup: HELP_GROUPS.health,
  }),
  rise: checkedNumber({
    description: 'good checks that mark it up again',
    default: DEFAULT_HEALTH.rise,
    helpGroup: HELP_GROUPS.health,
  }),
  'hang-timeout': checkedString({
    description:
      'a replica that answers nothing, not even its health check, this long is taken for down (overload and slowness never are)',
    default: `${DEFAULT_HEALTH.hangMs}ms`,
    helpGroup: HELP_GROUPS.health,
  }),
};

/** The router group's values as the command line (or a direct caller) gives them. */
export interface RouterFlagValues {
  reference: string;
  partition: string;
  'slow-start': string;
  borrow: string;
}

/** The router group's values parsed (borrowing as given: false for off). */
export interface RouterFlagSettings {
  reference: RoleVector;
  partition: Partition;
  slowStartMs: number;
  borrowing: BorrowingOptions | false;
}

/** The router group, parsed by the checks above; throws BAD_INPUT naming the flag. */
export function parseRouterFlags(f: RouterFlagValues): RouterFlagSettings {
  return {
    reference: parseRoleVector(f.reference, '--reference'),
    partition: parsePartition(f.partition, '--partition'),
    slowStartMs: durationMsFlag('slow-start', f['slow-start']),
    borrowing: parseBorrowing(f.borrow),
  };
}

export interface HealthFlagValues {
  'health-interval': string;
  fall: number;
  rise: number;
  'hang-timeout': string;
}

/** The health checker's options from its group (a check times out after one interval). */
export function parseHealthFlags(f: HealthFlagValues): HealthOptions {
  const intervalMs = positive(
    'health-interval',
    durationMsFlag('health-interval', f['health-interval']),
    false,
  );
  return {
    ...DEFAULT_HEALTH,
    intervalMs,
    timeoutMs: intervalMs,
    fall: positive('fall', f.fall),
    rise: positive('rise', f.rise),
    hangMs: positive('hang-timeout', durationMsFlag('hang-timeout', f['hang-timeout']), false),
  };
}
