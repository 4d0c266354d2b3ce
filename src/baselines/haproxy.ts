/**
 * An HAProxy configuration for a cluster's replicas, as a baseline for `--strategy via`: TCP mode
 * (session-level, like plb), roundrobin or leastconn, slowstart, and health checks with plb's
 * interval, fall and rise. Pure: text in, text out (`plb haproxy-config` prints it).
 */
import type { ViaEndpoints } from '../bench/via.js';
import type { HostPort } from '../core/endpoint.js';
import { formatHostPort } from '../core/endpoint.js';
import { partitionFor } from '../router/role-vector.js';
import type { Partition } from '../router/types.js';

export const HAPROXY_BALANCES = ['leastconn', 'roundrobin'] as const;
export type HaproxyBalance = (typeof HAPROXY_BALANCES)[number];

export interface HaproxyConfigOptions {
  /** The cluster's name (a comment). */
  cluster: string;
  replicas: ReadonlyArray<{ id: string } & HostPort>;
  /** One listener for every session, or one per class with static partitions. */
  listen: HostPort | ViaEndpoints;
  balance: HaproxyBalance;
  /** A rejoining server's weight ramps over this (0: off). */
  slowStartMs: number;
  health: { intervalMs: number; fall: number; rise: number };
  /** The user of the pgsql-check startup packet (it never authenticates). */
  user: string;
  /** Per-class listeners: the first `premium` replicas serve premium, the rest freemium. */
  partition?: Partition;
}

const IND = '    ';

function ms(n: number): string {
  return n % 1000 === 0 ? `${n / 1000}s` : `${Math.round(n)}ms`;
}

function isPerClass(listen: HostPort | ViaEndpoints): listen is ViaEndpoints {
  return 'premium' in listen;
}

/** The configuration text (ends with a newline). */
export function haproxyConfig(o: HaproxyConfigOptions): string {
  const { health } = o;
  const server = [
    'check',
    `inter ${ms(health.intervalMs)}`,
    `fall ${health.fall}`,
    `rise ${health.rise}`,
    ...(o.slowStartMs > 0 ? [`slowstart ${ms(o.slowStartMs)}`] : []),
  ].join(' ');
  const lines = [
    `# written by plb haproxy-config: cluster ${o.cluster}, ${o.replicas.length} replicas, balance ${o.balance}`,
    '# run: haproxy -f <this file> -p <pid file> (add -D to run it in the background)',
    'global',
    `${IND}maxconn 4096`,
    '',
    'defaults',
    `${IND}mode tcp`,
    `${IND}timeout connect 5s`,
    // Sessions are long-lived and may sit idle between queries: only a dead peer should end them.
    `${IND}timeout client 1h`,
    `${IND}timeout server 1h`,
    `${IND}timeout check ${ms(health.intervalMs)}`,
    // A connect refused by a server not yet marked down is retried on another one.
    `${IND}option redispatch`,
    `${IND}default-server ${server}`,
  ];
  const backend = (name: string, members: HaproxyConfigOptions['replicas']): string[] => [
    '',
    `backend ${name}`,
    `${IND}balance ${o.balance}`,
    `${IND}option pgsql-check user ${o.user}`,
    ...members.map((r) => `${IND}server ${r.id} ${formatHostPort(r)}`),
  ];
  const frontend = (name: string, at: HostPort, to: string): string[] => [
    '',
    `frontend ${name}`,
    `${IND}bind ${formatHostPort(at)}`,
    `${IND}default_backend ${to}`,
  ];
  if (isPerClass(o.listen)) {
    const part = partitionFor(o.replicas.length, o.partition);
    const premium = o.replicas.slice(0, part.premium);
    const freemium = o.replicas.slice(part.premium);
    lines.push(
      `# static partitions ${part.premium}:${part.freemium}: premium ${premium.map((r) => r.id).join(',')}, freemium ${freemium.map((r) => r.id).join(',')}`,
      ...frontend('plb_premium', o.listen.premium, 'plb_premium_replicas'),
      ...frontend('plb_freemium', o.listen.freemium, 'plb_freemium_replicas'),
      ...backend('plb_premium_replicas', premium),
      ...backend('plb_freemium_replicas', freemium),
    );
  } else {
    lines.push(...frontend('plb_read', o.listen, 'plb_replicas'), ...backend('plb_replicas', o.replicas));
  }
  return `${lines.join('\n')}\n`;
}
