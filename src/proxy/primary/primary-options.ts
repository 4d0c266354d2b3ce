/** The primary listener's flags (`plb proxy --primary-port`) and their checks. */
import { Flags } from '@oclif/core';
import { PlbError } from '../../core/errors.js';
import type { ServiceClass } from '../../core/service-class.js';

const PRIMARY_GROUP = 'PRIMARY';

export const primaryFlags = {
  'primary-port': Flags.integer({
    description:
      'listener for sessions that must write: they go to the primary (the server not in recovery, followed through a switchover or failover), as premium, or as the startup packet says with --class-from (0: none)',
    default: 0,
    min: 0,
    max: 65535,
    helpGroup: PRIMARY_GROUP,
  }),
  'primary-freemium-port': Flags.integer({
    description: 'listener for freemium sessions that must write (0: none)',
    default: 0,
    min: 0,
    max: 65535,
    helpGroup: PRIMARY_GROUP,
  }),
};

export interface PrimaryFlagValues {
  'primary-port'?: number | undefined;
  'primary-freemium-port'?: number | undefined;
}

/** The primary listener's ports per class (empty: no primary listener). */
export type PrimaryPorts = Partial<Record<ServiceClass, number>>;

function port(flag: string, n: number | undefined): number | undefined {
  if (n === undefined || n === 0) return undefined;
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw new PlbError('BAD_INPUT', `--${flag}: must be a port 1..65535, or 0 for no listener (got ${n})`);
  return n;
}

/** The ports, each checked, none the same as another listener's (`taken`: the replica ports). */
export function parsePrimaryFlags(
  f: PrimaryFlagValues,
  taken: Record<string, number | undefined>,
): PrimaryPorts {
  const premium = port('primary-port', f['primary-port']);
  const freemium = port('primary-freemium-port', f['primary-freemium-port']);
  const mine: [string, number | undefined][] = [
    ['--primary-port', premium],
    ['--primary-freemium-port', freemium],
  ];
  const seen = new Map(Object.entries(taken).filter((e): e is [string, number] => e[1] !== undefined));
  for (const [flag, n] of mine) {
    if (n === undefined) continue;
    const other = [...seen].find(([, m]) => m === n);
    if (other) throw new PlbError('BAD_INPUT', `${flag} and ${other[0]} are both ${n}`);
    seen.set(flag, n);
  }
  return {
    ...(premium !== undefined ? { premium } : {}),
    ...(freemium !== undefined ? { freemium } : {}),
  };
}
