/**
 * The admission flags of a bench run (the strategies that queue, router/strategy-registry.ts): the per-replica session limit, the
 * queue, and the SLO guard. Each flag has one check that names it; flags.ts spreads them in and
 * passes the resolved options to the router.
 */
import { Flags } from '@oclif/core';
import { PlbError } from '../../core/errors.js';
import { parseDuration } from '../../core/duration.js';
import { parseShare } from '../../cli/router-values.js';
import { durationMsFlag } from '../../cli/flags.js';
import { DEFAULT_PREMIUM_RESERVE } from '../../router/admission/admission-defaults.js';
import type { AdmissionOptions } from '../../router/admission/admission-types.js';
import type { SessionLimitOptions } from '../../router/admission/session-limits.js';
import { DEFAULT_MIN_SHARE, type SloTarget } from '../../router/admission/slo-guard.js';

// Help groups are upper-case words (cli-conventions.test.ts).
const HELP = 'ADMISSION';

export const admissionFlags = {
  'admission-limit': Flags.string({
    description:
      'sessions a replica holds at most: a number, Nx = N times its share of the clients (clients / replicas), or gradient[:start] (adapted from its latency, as concurrency-limits does)',
    default: '1.1x',
    helpGroup: HELP,
  }),
  'admission-queue': Flags.string({
    description: 'sessions that may wait for a slot at once (both classes); default: the clients',
    helpGroup: HELP,
  }),
  'admission-timeout': Flags.string({
    description: 'how long a session waits for a slot before it fails with an admission error',
    default: '10s',
    helpGroup: HELP,
  }),
  'admission-target': Flags.string({
    description:
      "the SLO guard of the admission strategies: premium p95 target, a duration (e.g. 40ms), Nx of premium's p95 before the first failure, or off",
    default: '1.2x',
    helpGroup: HELP,
  }),
  'admission-min-share': Flags.string({
    description:
      'the share of every own or mixed replica’s limit freemium always keeps while the guard tightens, and of every freemium replica premium may not take (0..1)',
    default: String(DEFAULT_MIN_SHARE),
    helpGroup: HELP,
  }),
  'admission-premium-reserve': Flags.string({
    description:
      'the share of every premium replica’s limit freemium may not take, borrowed or overflowing (0..1): premium finds a slot at once under a freemium flood',
    default: String(DEFAULT_PREMIUM_RESERVE),
    helpGroup: HELP,
  }),
};

export interface AdmissionFlagValues {
  'admission-limit'?: string | undefined;
  'admission-queue'?: string | undefined;
  'admission-timeout'?: string | undefined;
  'admission-target'?: string | undefined;
  'admission-min-share'?: string | undefined;
  'admission-premium-reserve'?: string | undefined;
}

/** The limit as written: absolute, relative to the fair share, or gradient (start absolute or relative). */
type LimitSpec =
  | { kind: 'absolute'; n: number }
  | { kind: 'share'; factor: number }
  | { kind: 'gradient'; start?: LimitSpec };

function bad(flag: string, what: string, got: string): PlbError {
  return new PlbError('BAD_INPUT', `--${flag}: ${what} (got "${got}")`);
}

function parseLimit(text: string, flag = 'admission-limit'): LimitSpec {
  const t = text.trim();
  if (t === 'gradient') return { kind: 'gradient' };
  if (t.startsWith('gradient:')) return { kind: 'gradient', start: parseLimit(t.slice(9), flag) };
  const share = /^(\d+(?:\.\d+)?)x$/.exec(t);
  if (share) {
    const factor = Number(share[1]);
    if (!(factor > 0)) throw bad(flag, 'a share must be > 0', text);
    return { kind: 'share', factor };
  }
  const n = Number(t);
  if (t === '' || !Number.isInteger(n) || n < 1)
    throw bad(flag, 'expected sessions per replica >= 1, Nx (of the fair share) or gradient[:start]', text);
  return { kind: 'absolute', n };
}

function parseTarget(text: string, flag = 'admission-target'): SloTarget | undefined {
  const t = text.trim();
  if (t === 'off') return undefined;
  const rel = /^(\d+(?:\.\d+)?)x$/.exec(t);
  if (rel) {
    const factor = Number(rel[1]);
    if (!(factor > 0)) throw bad(flag, 'a factor must be > 0', text);
    return { kind: 'relative', factor };
  }
  const s = parseDuration(t);
  if (s === undefined || !(s > 0))
    throw bad(flag, 'expected a duration like 40ms, a factor like 1.2x, or off', text);
  return { kind: 'absolute', ms: s * 1000 };
}

function parseTimeout(text: string, flag = 'admission-timeout'): number {
  return durationMsFlag(flag, text, { positive: true });
}

function parseQueue(text: string, flag = 'admission-queue'): number {
  const n = Number(text.trim());
  if (!Number.isInteger(n) || n < 1) throw bad(flag, 'expected an integer >= 1', text);
  return n;
}

/** The checks by flag name (checks.ts BENCH_CHECKS). */
export const ADMISSION_CHECKS: Record<string, (v: string | number) => unknown> = {
  'admission-limit': (v) => parseLimit(String(v)),
  'admission-queue': (v) => parseQueue(String(v)),
  'admission-timeout': (v) => parseTimeout(String(v)),
  'admission-target': (v) => parseTarget(String(v)),
  'admission-min-share': (v) => parseShare(String(v), '--admission-min-share'),
  'admission-premium-reserve': (v) => parseShare(String(v), '--admission-premium-reserve'),
};

/** The admission group parsed: what a run's admission is resolved from, with its load. */
export interface AdmissionSettings {
  limit: LimitSpec;
  /** Absent: the sessions the workload opens. */
  queue?: number;
  timeoutMs: number;
  /** Absent: the SLO guard is off. */
  target?: SloTarget;
  minShare: number;
  premiumReserve: number;
}

/** The admission group from its text (a flag left out takes its default); BAD_INPUT naming the flag. */
export function parseAdmissionFlags(flags: AdmissionFlagValues): AdmissionSettings {
  const limit = parseLimit(flags['admission-limit'] ?? '1.1x');
  const target = parseTarget(flags['admission-target'] ?? '1.2x');
  return {
    limit,
    ...(flags['admission-queue'] === undefined ? {} : { queue: parseQueue(flags['admission-queue']) }),
    timeoutMs: parseTimeout(flags['admission-timeout'] ?? '10s'),
    ...(target ? { target } : {}),
    minShare: parseShare(flags['admission-min-share'] ?? String(DEFAULT_MIN_SHARE), '--admission-min-share'),
    premiumReserve: parseShare(
      flags['admission-premium-reserve'] ?? String(DEFAULT_PREMIUM_RESERVE),
      '--admission-premium-reserve',
    ),
  };
}

function limitValue(spec: LimitSpec, fairShare: number): number {
  if (spec.kind === 'absolute') return spec.n;
  if (spec.kind === 'share') return Math.max(1, Math.ceil(spec.factor * fairShare));
  return spec.start ? limitValue(spec.start, fairShare) : Math.max(1, Math.ceil(fairShare));
}

/**
 * The admission options of a run (the router's slow start is added by the router). sessions: the
 * most concurrent sessions the workload opens (closed: the clients); replicas: the plan's K.
 */
export function resolveAdmission(
  a: AdmissionSettings,
  load: { sessions: number; replicas: number },
): Omit<AdmissionOptions, 'slowStartMs'> {
  const fairShare = load.sessions / Math.max(1, load.replicas);
  const limits: SessionLimitOptions = {
    mode: a.limit.kind === 'gradient' ? 'gradient' : 'fixed',
    limit: limitValue(a.limit, fairShare),
  };
  return {
    limits,
    queue: { capacity: a.queue ?? Math.max(1, load.sessions), timeoutMs: a.timeoutMs },
    premiumReserve: a.premiumReserve,
    freemiumReserve: a.minShare,
    ...(a.target ? { guard: { target: a.target, minShare: a.minShare } } : {}),
  };
}
