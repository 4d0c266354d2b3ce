/**
 * `plb proxy` flags and their validation. The router and health flags mean what they mean in
 * `plb bench run` and are parsed by the same functions (router/, bench/options.ts, faults/plan.ts).
 */
import { Flags } from '@oclif/core';
import { parseBorrowing } from '../bench/options.js';
import { DEFAULT_HEALTH, type HealthOptions } from '../cluster/health.js';
import { DEFAULT_CLUSTER_NAME } from '../cluster/state.js';
import { PlbError } from '../errors.js';
import { parseDuration } from '../faults/plan.js';
import { isStrategyName, parsePartition, parseRoleVector } from '../router/index.js';
import type { BorrowingOptions, Partition, RoleVector, StrategyName } from '../router/types.js';
import { CLASS_FROM, type ClassFrom } from './startup-packet.js';

export const DEFAULT_PREMIUM_PORT = 6432;
export const DEFAULT_FREEMIUM_PORT = 6433;

export const proxyFlags = {
  name: Flags.string({
    description: 'cluster name (a cluster brought up by `plb cluster up`)',
    default: DEFAULT_CLUSTER_NAME,
  }),
  host: Flags.string({ description: 'address the listeners bind', default: '127.0.0.1' }),
  'premium-port': Flags.integer({
    description: 'listener for premium sessions (0: none)',
    default: DEFAULT_PREMIUM_PORT,
  }),
  'freemium-port': Flags.integer({
    description: 'listener for freemium sessions (0: none)',
    default: DEFAULT_FREEMIUM_PORT,
  }),
  'class-from': Flags.string({
    description:
      'also take the class from the startup packet: application_name (premium|freemium), option (options=-c plb.class=premium), or off (the port decides)',
    options: [...CLASS_FROM],
    default: 'off',
  }),
  strategy: Flags.string({ description: 'plb, rr, static, lc or wlc', default: 'plb' }),
  reference: Flags.string({
    description: 'plb reference split premium:mixed:freemium (K=5)',
    default: '2:1:2',
  }),
  partition: Flags.string({ description: 'static partition premium:freemium', default: '3:2' }),
  borrow: Flags.string({
    description: 'plb borrowing: premium:freemium pressure ratios, or off',
    default: '1.5:2',
  }),
  'slow-start': Flags.string({
    description: 'plb/wlc slow-start ramp of a rejoining replica',
    default: '10s',
  }),
  'health-interval': Flags.string({
    description: 'health check interval',
    default: `${DEFAULT_HEALTH.intervalMs}ms`,
  }),
  fall: Flags.integer({
    description: 'failed checks that mark a replica down',
    default: DEFAULT_HEALTH.fall,
  }),
  rise: Flags.integer({ description: 'good checks that mark it up again', default: DEFAULT_HEALTH.rise }),
  'hang-timeout': Flags.string({
    description: 'a replica that answers nothing, not even its health check, this long is taken for down',
    default: `${DEFAULT_HEALTH.hangMs}ms`,
  }),
  'stats-every': Flags.integer({ description: 'seconds between stats lines (0: none)', default: 5 }),
  'stop-timeout': Flags.string({
    description: 'on SIGINT/SIGTERM: how long open sessions may go on before they are closed',
    default: '30s',
  }),
};

export interface ProxyFlagValues {
  name: string;
  host: string;
  'premium-port': number;
  'freemium-port': number;
  'class-from': string;
  strategy: string;
  reference: string;
  partition: string;
  borrow: string;
  'slow-start': string;
  'health-interval': string;
  fall: number;
  rise: number;
  'hang-timeout': string;
  'stats-every': number;
  'stop-timeout': string;
}

export interface ProxyConfig {
  name: string;
  host: string;
  ports: { premium?: number; freemium?: number };
  classFrom: ClassFrom;
  strategy: StrategyName;
  reference: RoleVector;
  partition: Partition;
  borrowing: BorrowingOptions | false;
  slowStartMs: number;
  health: HealthOptions;
  statsEveryS: number;
  stopTimeoutMs: number;
}

function durationMs(flag: string, value: string, positive: boolean): number {
  const s = parseDuration(value);
  if (s === undefined || !(positive ? s > 0 : s >= 0))
    throw new PlbError('BAD_INPUT', `--${flag}: expected a duration like 10s or 500ms (got "${value}")`);
  return s * 1000;
}

function port(flag: string, n: number): number | undefined {
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new PlbError('BAD_INPUT', `--${flag}: must be a port 1..65535, or 0 for no listener (got ${n})`);
  return n === 0 ? undefined : n;
}

function count(flag: string, n: number): number {
  if (!Number.isInteger(n) || n < 1 || n > 1000)
    throw new PlbError('BAD_INPUT', `--${flag}: must be an integer from 1 to 1000 (got ${n})`);
  return n;
}

/** Every flag checked before anything starts; one-line errors naming the flag. */
export function parseProxyFlags(f: ProxyFlagValues): ProxyConfig {
  if (!isStrategyName(f.strategy))
    throw new PlbError(
      'BAD_INPUT',
      `--strategy: unknown strategy "${f.strategy}" (plb, rr, static, lc, wlc)`,
    );
  if (!(CLASS_FROM as readonly string[]).includes(f['class-from']))
    throw new PlbError(
      'BAD_INPUT',
      `--class-from: must be application_name, option or off (got "${f['class-from']}")`,
    );
  const premium = port('premium-port', f['premium-port']);
  const freemium = port('freemium-port', f['freemium-port']);
  if (premium === undefined && freemium === undefined)
    throw new PlbError('BAD_INPUT', '--premium-port and --freemium-port are both 0: nothing to listen on');
  if (premium !== undefined && premium === freemium)
    throw new PlbError('BAD_INPUT', `--premium-port and --freemium-port are both ${premium}`);
  if (!Number.isInteger(f['stats-every']) || f['stats-every'] < 0)
    throw new PlbError(
      'BAD_INPUT',
      `--stats-every: must be a whole number of seconds >= 0 (got ${f['stats-every']})`,
    );
  const health: HealthOptions = {
    ...DEFAULT_HEALTH,
    intervalMs: durationMs('health-interval', f['health-interval'], true),
    fall: count('fall', f.fall),
    rise: count('rise', f.rise),
    hangMs: durationMs('hang-timeout', f['hang-timeout'], true),
  };
  health.timeoutMs = health.intervalMs;
  return {
    name: f.name,
    host: f.host,
    ports: {
      ...(premium !== undefined ? { premium } : {}),
      ...(freemium !== undefined ? { freemium } : {}),
    },
    classFrom: f['class-from'] as ClassFrom,
    strategy: f.strategy,
    reference: parseRoleVector(f.reference, '--reference'),
    partition: parsePartition(f.partition, '--partition'),
    borrowing: parseBorrowing(f.borrow),
    slowStartMs: durationMs('slow-start', f['slow-start'], false),
    health,
    statsEveryS: f['stats-every'],
    stopTimeoutMs: durationMs('stop-timeout', f['stop-timeout'], false),
  };
}
