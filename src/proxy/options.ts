/**
 * `plb proxy` flags and their validation. The router and health flags mean what they mean in
 * `plb bench run` and are parsed by the same functions (cli/router-flags.ts, cli/strategy-flags.ts).
 */
import { Flags } from '@oclif/core';
import {
  healthFlags,
  HELP_GROUPS,
  parseHealthFlags,
  parseRouterFlags,
  routerFlags,
  type HealthFlagValues,
  type RouterFlagSettings,
  type RouterFlagValues,
} from '../cli/router-flags.js';
import { parseRouterStrategy, routerStrategyFlag } from '../cli/strategy-flags.js';
import { strategyListText } from '../router/strategy-registry.js';
import { DEFAULT_CLUSTER_NAME } from '../cluster/state.js';
import { DEFAULT_HEALTH } from '../cluster/health.js';
import { type HealthOptions } from '../run-format/config.js';
import { checkedText, durationMsFlag } from '../cli/flags.js';
import { parseLagWeights, parseMaxLag } from '../cli/router-values.js';
import type { LagWeightOptions } from '../router/lag-weight.js';
import { PlbError } from '../core/errors.js';
import type { StrategyName } from '../router/types.js';
import { CLASS_FROM, type ClassFrom } from './protocol/startup-packet.js';
import {
  limitFlags,
  parseLimitFlags,
  type LimitConfig,
  type LimitFlagValues,
} from './admission/limit-options.js';
import { DEFAULT_RELAY_THREADS, type RelayChoice } from './native/native-relay.js';
import {
  parsePrimaryFlags,
  primaryFlags,
  type PrimaryFlagValues,
  type PrimaryPorts,
} from './primary/primary-options.js';
import {
  adminFlags,
  parseAdminFlags,
  type AdminConfig,
  type AdminFlagValues,
} from './admin/admin-options.js';
import { checkFleetChoice, type FleetChoice } from './fleet.js';

export const DEFAULT_PREMIUM_PORT = 6432;
export const DEFAULT_FREEMIUM_PORT = 6433;
const DEFAULT_PROXY_VIEW_INTERVAL_MS = 250;
const PROXY_GROUP = 'PROXY';

/**
 * `plb proxy` flags: its own (listeners, class, stats, stop) and the bench's router, health and
 * cluster flags as they are (same names, checks and help groups); each checked as it is read.
 */
export const proxyFlags = {
  host: Flags.string({
    description: 'address the listeners bind',
    default: '127.0.0.1',
    helpGroup: PROXY_GROUP,
  }),
  'premium-port': Flags.integer({
    description: 'listener for premium sessions (0: none)',
    default: DEFAULT_PREMIUM_PORT,
    min: 0,
    max: 65535,
    helpGroup: PROXY_GROUP,
  }),
  'freemium-port': Flags.integer({
    description: 'listener for freemium sessions (0: none)',
    default: DEFAULT_FREEMIUM_PORT,
    min: 0,
    max: 65535,
    helpGroup: PROXY_GROUP,
  }),
  ...primaryFlags,
  'class-from': Flags.string({
    description:
      'also take the class from the startup packet: application_name (premium|freemium), option (options=-c plb.class=premium), or off (the port decides)',
    options: [...CLASS_FROM],
    default: 'off',
    helpGroup: PROXY_GROUP,
  }),
  'metrics-port': Flags.integer({
    description:
      'serve Prometheus metrics on 127.0.0.1:<port>/metrics, the admin view (JSON) on /admin, and POST /drain',
    min: 1,
    max: 65535,
  }),
  'stats-every': Flags.integer({
    description: 'seconds between stats lines (0: none)',
    default: 5,
    min: 0,
    helpGroup: PROXY_GROUP,
  }),
  'stop-timeout': checkedText((v, flag) => durationMsFlag(flag, v))({
    description: 'on SIGINT/SIGTERM: how long open sessions may go on before they are closed',
    default: '30s',
    helpGroup: PROXY_GROUP,
  }),
  relay: Flags.string({
    description:
      "who serves clients: native (relay threads accept, connect and copy outside Node's event loop, where built; Node's sockets with TLS or a host name) or js",
    options: ['native', 'js'],
    default: 'native',
    helpGroup: PROXY_GROUP,
  }),
  'relay-threads': Flags.integer({
    description: 'threads of the native front door and relay (default: one per core, at most 2)',
    min: 1,
    max: 16,
    helpGroup: PROXY_GROUP,
  }),
  strategy: routerStrategyFlag('proxy')({
    description: `the router: ${strategyListText('proxy')}`,
    default: 'plb',
    helpGroup: HELP_GROUPS.router,
  }),
  ...routerFlags,
  ...healthFlags,
  // The health group's, with one more meaning here (and 0 allowed): the replica connections'.
  'hang-timeout': checkedText((v, flag) => durationMsFlag(flag, v))({
    description:
      'a replica that answers nothing this long is taken for down by the health checks, and a replica connection that hears nothing this long (TCP keepalive, TCP_USER_TIMEOUT) is ended, its client told 08006; 0: replica connections get neither (the checks keep 5s)',
    default: `${DEFAULT_HEALTH.hangMs}ms`,
    helpGroup: HELP_GROUPS.health,
  }),
  ...limitFlags,
  ...adminFlags,
  'router-view': Flags.string({
    description:
      "what this proxy knows of a replica's sessions: local (its own) or replica (every proxy's, read from pg_stat_activity every --view-interval, the class marked in application_name): several proxies in front of one cluster then share each replica's admission limit",
    options: ['local', 'replica'],
    default: 'local',
    helpGroup: PROXY_GROUP,
  }),
  'view-interval': checkedText((v, flag) => durationMsFlag(flag, v))({
    description: 'with --router-view replica: how often each replica is read (10ms..60s)',
    default: `${DEFAULT_PROXY_VIEW_INTERVAL_MS}ms`,
    helpGroup: PROXY_GROUP,
  }),
  name: Flags.string({
    description: `cluster name (brought up by \`plb cluster up\`; default ${DEFAULT_CLUSTER_NAME} when neither --cluster-file nor --replica is given)`,
    helpGroup: HELP_GROUPS.cluster,
  }),
  'cluster-file': Flags.string({
    description:
      'servers plb did not make: the primary, replicas (optional zone: and weight: each) and credentials, as --driver external reads them; not with --name or --replica',
    helpGroup: HELP_GROUPS.cluster,
  }),
  replica: Flags.string({
    description:
      'a replica by host:port (repeatable; r1..rK in the order given), credentials from PGUSER, PGPASSWORD, PGDATABASE, PGPASSFILE or ~/.pgpass as libpq reads them; not with --name or --cluster-file',
    multiple: true,
    helpGroup: HELP_GROUPS.cluster,
  }),
  zone: Flags.string({
    description:
      "this proxy's zone: with replicas in zones (the cluster file's zone:), sessions prefer this zone's replicas",
    helpGroup: HELP_GROUPS.router,
  }),
  'lag-weights': checkedText((v, flag) => lagWeightsValue(v, flag))({
    description:
      "replica weights follow each standby's replication lag (its own replay position and timestamp), low:high:floor (full weight up to low, linear to floor% at high, drained above), or off",
    default: 'off',
    helpGroup: HELP_GROUPS.router,
  }),
  'max-lag': checkedText((v, flag) => maxLagValue(v, flag))({
    description:
      'a replica whose replication lag exceeds this (e.g. 1s) takes no new sessions until back under it, or off; not with --lag-weights',
    default: 'off',
    helpGroup: HELP_GROUPS.router,
  }),
  config: Flags.string({
    description:
      'a YAML file of these flags (keys are the flag names: premium-port: 6432, cluster-file: fleet.yaml...); flags on the command line override it; SIGHUP reloads it and the cluster file (replicas removed drain, come back or are reweighted; sessions kept)',
    helpGroup: PROXY_GROUP,
  }),
  check: Flags.boolean({
    description:
      'check the flags and --config (and the cluster file it names), print a one-line summary and exit',
    default: false,
    helpGroup: PROXY_GROUP,
  }),
};

function lagWeightsValue(text: string, flag = '--lag-weights'): LagWeightOptions | undefined {
  return text.trim() === 'off'
    ? undefined
    : parseLagWeights(text, flag.startsWith('--') ? flag : `--${flag}`);
}

function maxLagValue(text: string, flag = '--max-lag'): number | undefined {
  return text.trim() === 'off' ? undefined : parseMaxLag(text, flag.startsWith('--') ? flag : `--${flag}`);
}

export interface ProxyFlagValues
  extends LimitFlagValues,
    RouterFlagValues,
    HealthFlagValues,
    PrimaryFlagValues,
    AdminFlagValues {
  name?: string | undefined;
  'cluster-file'?: string | undefined;
  replica?: string[] | undefined;
  zone?: string | undefined;
  'lag-weights'?: string | undefined;
  'max-lag'?: string | undefined;
  config?: string | undefined;
  check?: boolean | undefined;
  host: string;
  'premium-port': number;
  'freemium-port': number;
  'class-from': string;
  strategy: string;
  'stats-every': number;
  'stop-timeout': string;
  'metrics-port'?: number | undefined;
  relay?: string | undefined;
  'relay-threads'?: number | undefined;
  'router-view'?: string | undefined;
  'view-interval'?: string | undefined;
}

/** Lag-derived weights, or eviction over a budget (lag-source.ts applies either). */
export type LagRule = { weights: LagWeightOptions } | { maxLagMs: number };

export interface ProxyConfig extends LimitConfig, RouterFlagSettings, AdminConfig {
  /** Where the servers come from (fleet.ts resolves it). */
  fleet: FleetChoice;
  /** --zone: this proxy's zone (sessions prefer its replicas when they have zones). */
  zone?: string;
  /** --lag-weights or --max-lag: how a replica's lag sets its weight factor (absent: weights ignore lag). */
  lagRule?: LagRule;
  host: string;
  ports: { premium?: number; freemium?: number };
  /** The primary listener's ports (empty: none; primary/primary-listener.ts). */
  primaryPorts: PrimaryPorts;
  classFrom: ClassFrom;
  strategy: StrategyName;
  health: HealthOptions;
  /** --hang-timeout for the replica connections (0: no keepalive, no TCP_USER_TIMEOUT). */
  serverHangMs: number;
  statsEveryS: number;
  stopTimeoutMs: number;
  metricsPort?: number;
  relay: RelayChoice;
  /** --router-view replica: how often each replica's sessions are read (absent: local view). */
  viewIntervalMs?: number;
}

function port(flag: string, n: number): number | undefined {
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new PlbError('BAD_INPUT', `--${flag}: must be a port 1..65535, or 0 for no listener (got ${n})`);
  return n === 0 ? undefined : n;
}

/**
 * Every value checked before anything starts (the command line was checked as it was read; a
 * direct caller is checked here, by the same functions); one-line errors naming the flag.
 */
function metricsPort(n: number): number {
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw new PlbError('BAD_INPUT', `--metrics-port: must be a port from 1 to 65535 (got ${n})`);
  return n;
}

export function parseProxyFlags(f: ProxyFlagValues): ProxyConfig {
  const fleet: FleetChoice = { name: f.name, 'cluster-file': f['cluster-file'], replica: f.replica };
  checkFleetChoice(fleet);
  const lagWeights = lagWeightsValue(f['lag-weights'] ?? 'off');
  const maxLagMs = maxLagValue(f['max-lag'] ?? 'off');
  if (lagWeights && maxLagMs !== undefined)
    throw new PlbError('BAD_INPUT', '--max-lag: not with --lag-weights (eviction or weighting, pick one)');
  if (f.zone !== undefined && !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/.test(f.zone))
    throw new PlbError('BAD_INPUT', `--zone: "${f.zone}" must be a zone name like eu-west-1a`);
  const strategy = parseRouterStrategy(f.strategy, '--strategy', 'proxy');
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
  // 0 turns off the replica connections' timeouts; the checks cannot go without one (a check that
  // never answers would hold every later one): they keep the default.
  const serverHangMs = durationMsFlag('hang-timeout', f['hang-timeout']);
  const health = parseHealthFlags(
    serverHangMs === 0 ? { ...f, 'hang-timeout': `${DEFAULT_HEALTH.hangMs}ms` } : f,
  );
  const relay = f.relay ?? 'native';
  if (relay !== 'native' && relay !== 'js')
    throw new PlbError('BAD_INPUT', `--relay: must be native or js (got "${relay}")`);
  const threads = f['relay-threads'] ?? DEFAULT_RELAY_THREADS;
  if (!Number.isInteger(threads) || threads < 1 || threads > 16)
    throw new PlbError('BAD_INPUT', `--relay-threads: must be a whole number from 1 to 16 (got ${threads})`);
  const limits = parseLimitFlags(f, strategy);
  const view = f['router-view'] ?? 'local';
  if (view !== 'local' && view !== 'replica')
    throw new PlbError('BAD_INPUT', `--router-view: must be local or replica (got "${view}")`);
  const viewIntervalMs = durationMsFlag(
    'view-interval',
    f['view-interval'] ?? `${DEFAULT_PROXY_VIEW_INTERVAL_MS}ms`,
  );
  if (view === 'replica' && !(viewIntervalMs >= 10 && viewIntervalMs <= 60_000))
    throw new PlbError('BAD_INPUT', `--view-interval: must be from 10ms to 60s (got ${viewIntervalMs} ms)`);
  if (view === 'replica' && !limits.admission)
    throw new PlbError(
      'BAD_INPUT',
      '--router-view replica: needs admission limits (not --admission-limit off)',
    );
  return {
    fleet,
    ...(f.zone !== undefined ? { zone: f.zone } : {}),
    ...(lagWeights
      ? { lagRule: { weights: lagWeights } }
      : maxLagMs !== undefined
        ? { lagRule: { maxLagMs } }
        : {}),
    host: f.host,
    ports: {
      ...(premium !== undefined ? { premium } : {}),
      ...(freemium !== undefined ? { freemium } : {}),
    },
    primaryPorts: parsePrimaryFlags(f, { '--premium-port': premium, '--freemium-port': freemium }),
    classFrom: f['class-from'] as ClassFrom,
    strategy,
    ...parseRouterFlags(f),
    health,
    serverHangMs,
    statsEveryS: f['stats-every'],
    ...limits,
    ...(view === 'replica' ? { viewIntervalMs } : {}),
    stopTimeoutMs: durationMsFlag('stop-timeout', f['stop-timeout']),
    ...parseAdminFlags(f),
    relay: relay === 'js' ? { kind: 'js' } : { kind: 'native', threads },
    ...(f['metrics-port'] !== undefined ? { metricsPort: metricsPort(f['metrics-port']) } : {}),
  };
}
