/**
 * `plb proxy` flags that bound it under floods: the client limit and the per-replica session
 * limit with its queue (router/admission/admission.ts). Each checked as it is read, one line naming the flag.
 */
import { Flags } from '@oclif/core';
import { PlbError } from '../../core/errors.js';
import { QUEUEING_STRATEGY_NAMES, strategyQueues } from '../../router/strategy-registry.js';
import { checkedText, durationMsFlag } from '../../cli/flags.js';
import { parseDuration } from '../../core/duration.js';
import { DEFAULT_PREMIUM_RESERVE } from '../../router/admission/admission-defaults.js';
import { DEFAULT_ADMISSION_RESERVE, DEFAULT_FREEMIUM_RESERVE } from './default-limit.js';
import { DEFAULT_STARTUP_TIMEOUT_MS } from '../session/session-core.js';
import { DEFAULT_STARTUP_YIELD_MS } from './host-share.js';
import { parseShare } from '../../cli/router-values.js';
import type { SecureContext } from 'node:tls';
import { defaultMaxClientConn } from '../process-usage.js';
import { loadTls } from '../protocol/tls-client.js';
import { parseServerTls, type ServerTlsMode } from '../protocol/tls-server.js';
import { loadServerCa } from '../protocol/server-verify.js';

const GROUP = 'PROXY LIMITS';

export const limitFlags = {
  'max-client-conn': Flags.integer({
    description:
      'client connections at once, any phase; beyond it a client gets 53300 at its first packet, after an SSLRequest is answered (default: (open-file limit - 64) / 2)',
    min: 1,
    helpGroup: GROUP,
  }),
  'admission-limit': Flags.string({
    description: `sessions a replica holds at most; a session that finds its class full waits (premium first): a number, auto (each replica's max_connections less its reserved slots and --admission-reserve), or off (no limit; ${QUEUEING_STRATEGY_NAMES.join('/')} keep 1000)`,
    default: 'auto',
    helpGroup: GROUP,
  }),
  'admission-reserve': Flags.integer({
    description: `with --admission-limit auto: slots of each replica kept for connections that are not sessions (this proxy's checks and view reader, operators); with P proxies 3 + 3P`,
    default: DEFAULT_ADMISSION_RESERVE,
    min: 0,
    helpGroup: GROUP,
  }),
  'admission-queue': Flags.integer({
    description:
      'sessions of each class that may wait for a slot at once (each class its own places: a flood of one never refuses the other’s); beyond it 53300',
    default: 1000,
    min: 1,
    helpGroup: GROUP,
  }),
  'admission-timeout': Flags.string({
    description: 'how long a session waits for a slot before it gets 53300',
    default: '10s',
    helpGroup: GROUP,
  }),
  'admission-premium-reserve': Flags.string({
    description:
      'the share of every premium replica’s limit freemium may not take (0..1): a premium client finds a slot at once under a freemium flood',
    default: String(DEFAULT_PREMIUM_RESERVE),
    helpGroup: GROUP,
  }),
  'admission-freemium-reserve': Flags.string({
    description:
      'the share of every freemium replica’s limit premium may not take (0..1): a freemium client finds a slot at once under a premium flood',
    default: String(DEFAULT_FREEMIUM_RESERVE),
    helpGroup: GROUP,
  }),
  'startup-timeout': checkedText((v, flag) => durationMsFlag(flag, v, { positive: true }))({
    description:
      'a client must send its startup packet within this, and a session holding a replica slot must finish authenticating within this (else 57014, the slot freed)',
    default: `${DEFAULT_STARTUP_TIMEOUT_MS / 1000}s`,
    helpGroup: GROUP,
  }),
  'startup-yield': checkedText((v, flag) => startupYieldMs(v, flag))({
    description:
      'a session still authenticating that has held its replica slot this long is cut (57014) when a client from another host waits for a slot of its class (the host holding the most such slots first): a flood from one host cannot keep a client from another waiting; 0 or off: never',
    default: `${DEFAULT_STARTUP_YIELD_MS}ms`,
    helpGroup: GROUP,
  }),
  'startup-pacing': Flags.string({
    description:
      'under a flood, route at most 64 freemium startups a loop turn (8 after a slow turn) and hold the rest up to 5 s, so premium is served first: on or off',
    default: 'on',
    options: ['on', 'off'],
    helpGroup: GROUP,
  }),
  'early-connect': Flags.string({
    description:
      'connect to the replica at the client’s SSLRequest, so the server starts while the client goes on (on Node’s sockets, with --class-from off and --server-tls disable): on or off',
    default: 'on',
    options: ['on', 'off'],
    helpGroup: GROUP,
  }),
  'tls-cert': Flags.string({
    description:
      'PEM certificate: clients may use TLS (sslmode=require); the proxy ends it, replicas get plain TCP',
    helpGroup: GROUP,
  }),
  'tls-key': Flags.string({ description: 'PEM private key of --tls-cert', helpGroup: GROUP }),
  'server-tls': Flags.string({
    description:
      'TLS to the replicas, as libpq sslmode: disable (plain TCP), prefer (TLS when offered), require (certificate not verified), verify-ca (certificate signed by --server-ca) or verify-full (verify-ca, and the replica’s host in the certificate); the health checks verify alike',
    default: 'disable',
    helpGroup: GROUP,
  }),
  'server-ca': Flags.string({
    description:
      'PEM file of the CA(s) the replicas’ certificates must chain to (--server-tls verify-ca/verify-full)',
    helpGroup: GROUP,
  }),
};

export interface LimitFlagValues {
  'max-client-conn'?: number | undefined;
  'admission-limit'?: number | string | undefined;
  'admission-reserve'?: number | undefined;
  'admission-queue'?: number | undefined;
  'admission-timeout'?: string | undefined;
  'admission-premium-reserve'?: string | undefined;
  'admission-freemium-reserve'?: string | undefined;
  'startup-pacing'?: string | undefined;
  'startup-timeout'?: string | undefined;
  'startup-yield'?: string | undefined;
  'early-connect'?: string | undefined;
  'tls-cert'?: string | undefined;
  'tls-key'?: string | undefined;
  'server-tls'?: string | undefined;
  'server-ca'?: string | undefined;
}

export interface LimitConfig {
  maxClientConn: number;
  /** --startup-timeout: to the startup packet, and from a slot to ReadyForQuery. */
  startupTimeoutMs: number;
  /** --startup-yield (0: off): a slot held before ReadyForQuery yields to another host's waiter (host-share.ts). */
  startupYieldMs: number;
  /** Freemium startups paced under a flood (paced-intake.ts). */
  startupPacing: boolean;
  /** Replica connections opened at the SSLRequest (early-connect.ts). */
  earlyConnect: boolean;
  admission?: {
    /** auto: from each replica's max_connections less `reserve` (default-limit.ts). */
    limit: number | 'auto';
    reserve: number;
    queue: number;
    timeoutMs: number;
    premiumReserve: number;
    freemiumReserve: number;
  };
  tls?: SecureContext;
  serverTls: ServerTlsMode;
  /** --server-ca, read (only with verify-ca/verify-full). */
  serverCa?: Buffer;
}

function positiveInt(flag: string, n: number | undefined): number | undefined {
  if (n === undefined) return undefined;
  if (!Number.isInteger(n) || n < 1)
    throw new PlbError('BAD_INPUT', `--${flag}: must be a whole number >= 1 (got ${n})`);
  return n;
}

/** --startup-yield: a duration, 0 or off (0). */
function startupYieldMs(v: string, flag = '--startup-yield'): number {
  if (v.trim() === 'off') return 0;
  const s = parseDuration(v);
  if (s === undefined || !(s >= 0))
    throw new PlbError('BAD_INPUT', `${flag}: expected a duration like 500ms, 0 or off (got "${v}")`);
  return s * 1000;
}

function onOff(f: LimitFlagValues, flag: 'startup-pacing' | 'early-connect'): boolean {
  const v = f[flag] ?? 'on';
  if (v !== 'on' && v !== 'off')
    throw new PlbError('BAD_INPUT', `--${flag}: expected on or off (got "${v}")`);
  return v === 'on';
}

/** --admission-limit: a number, auto (the default) or off. */
function admissionLimit(v: number | string | undefined): number | 'auto' | 'off' {
  if (v === undefined || v === 'auto' || v === 'off') return v ?? 'auto';
  const n = typeof v === 'number' ? v : /^\d+$/.test(v.trim()) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < 1)
    throw new PlbError(
      'BAD_INPUT',
      `--admission-limit: must be a whole number >= 1, auto or off (got "${String(v)}")`,
    );
  return n;
}

/**
 * The limits, checked. Admission is on unless --admission-limit off (and then only for a strategy
 * that queues by itself); auto, the default, sizes each replica from its max_connections.
 */
export function parseLimitFlags(f: LimitFlagValues, strategy: string): LimitConfig {
  const maxClientConn = positiveInt('max-client-conn', f['max-client-conn']) ?? defaultMaxClientConn();
  const given = admissionLimit(f['admission-limit']);
  const reserve = f['admission-reserve'] ?? DEFAULT_ADMISSION_RESERVE;
  if (!Number.isInteger(reserve) || reserve < 0)
    throw new PlbError('BAD_INPUT', `--admission-reserve: must be a whole number >= 0 (got ${reserve})`);
  const queue = positiveInt('admission-queue', f['admission-queue']) ?? 1000;
  const timeoutMs = durationMsFlag('admission-timeout', f['admission-timeout'] ?? '10s', {
    positive: true,
  });
  const premiumReserve = parseShare(
    f['admission-premium-reserve'] ?? String(DEFAULT_PREMIUM_RESERVE),
    '--admission-premium-reserve',
  );
  const freemiumReserve = parseShare(
    f['admission-freemium-reserve'] ?? String(DEFAULT_FREEMIUM_RESERVE),
    '--admission-freemium-reserve',
  );
  const tls = loadTls(f['tls-cert'], f['tls-key']);
  const serverTls = parseServerTls(f['server-tls']);
  const serverCa = loadServerCa(f['server-ca'], serverTls);
  const startupTimeoutMs = durationMsFlag(
    'startup-timeout',
    f['startup-timeout'] ?? `${DEFAULT_STARTUP_TIMEOUT_MS / 1000}s`,
    { positive: true },
  );
  const base = {
    maxClientConn,
    startupTimeoutMs,
    startupYieldMs: startupYieldMs(f['startup-yield'] ?? `${DEFAULT_STARTUP_YIELD_MS}ms`),
    startupPacing: onOff(f, 'startup-pacing'),
    earlyConnect: onOff(f, 'early-connect'),
    serverTls,
    ...(serverCa ? { serverCa } : {}),
    ...(tls ? { tls } : {}),
  };
  if (given === 'off' && !strategyQueues(strategy)) return base;
  const limit = given === 'off' ? 1000 : given;
  return { ...base, admission: { limit, reserve, queue, timeoutMs, premiumReserve, freemiumReserve } };
}
