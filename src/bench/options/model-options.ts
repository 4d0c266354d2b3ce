/**
 * Options that change a model rather than a setting, to test a mechanism (docs/paper.md, "Fig. 6:
 * mechanisms tested"): what a closed-model client does after a failure (`--on-failure`), and how
 * the simulated replicas share the host (`--sim-cpu`). Both default to today's behaviour, which
 * config.json then leaves unsaid. The flags, their one check each and their parse live here;
 * flags.ts spreads them in.
 */
import { Flags } from '@oclif/core';
import { PlbError } from '../../core/errors.js';

const ON_FAILURE = ['retry', 'leave'] as const;
const SIM_CPU = ['quota', 'pooled'] as const;

export const modelFlags = {
  'on-failure': Flags.string({
    description:
      'closed model: after a failed session or connect a client retries (after a backoff) or leaves for the rest of the run (clients lost at a fault)',
    options: [...ON_FAILURE],
    default: 'retry',
    helpGroup: 'WORKLOAD',
  }),
  'sim-cpu': Flags.string({
    description:
      'with --driver sim: quota (each replica its own CPU quota) or pooled (the quota of a replica that is down or paused goes to those up, as on a shared host without per-replica quotas)',
    options: [...SIM_CPU],
    default: 'quota',
    helpGroup: 'CLUSTER',
  }),
};

export interface ModelFlagValues {
  'on-failure'?: string | undefined;
  'sim-cpu'?: string | undefined;
}

function oneOf<T extends string>(name: string, allowed: readonly T[], v: string): T {
  if (!(allowed as readonly string[]).includes(v))
    throw new PlbError('BAD_INPUT', `--${name}: must be ${allowed.join(' or ')} (got "${v}")`);
  return v as T;
}

/** The checks by flag name (checks.ts BENCH_CHECKS). */
export const MODEL_CHECKS: Record<string, (v: string | number) => unknown> = {
  'on-failure': (v) => oneOf('on-failure', ON_FAILURE, String(v)),
  'sim-cpu': (v) => oneOf('sim-cpu', SIM_CPU, String(v)),
};

/** The group parsed: only what differs from today's behaviour. */
export interface ModelSettings {
  onFailure?: 'leave';
  simCpu?: 'pooled';
}

export function parseModelFlags(flags: ModelFlagValues): ModelSettings {
  const onFailure = oneOf('on-failure', ON_FAILURE, flags['on-failure'] ?? 'retry');
  const simCpu = oneOf('sim-cpu', SIM_CPU, flags['sim-cpu'] ?? 'quota');
  return {
    ...(onFailure === 'leave' ? { onFailure } : {}),
    ...(simCpu === 'pooled' ? { simCpu } : {}),
  };
}

/** The combinations a bench refuses, each one line naming its flag. */
export function checkModelSettings(m: ModelSettings, run: { model: 'closed' | 'open'; sim: boolean }): void {
  if (m.onFailure !== undefined && run.model === 'open')
    throw new PlbError(
      'BAD_INPUT',
      '--on-failure: closed model only (an open model has no clients to lose: each session arrives on its own)',
    );
  if (m.simCpu !== undefined && !run.sim)
    throw new PlbError('BAD_INPUT', '--sim-cpu: only with --driver sim');
}
