import { parsePartition } from '../cli/router-values.js';
import { Flags } from '@oclif/core';
import { HAPROXY_BALANCES, haproxyConfig, type HaproxyBalance } from '../baselines/haproxy.js';
import { benchFlags } from '../bench/options/flags.js';
import { parseHostPort, parseVia } from '../bench/via.js';
import { checkedText } from '../cli/flags.js';
import { DEFAULT_HEALTH } from '../cluster/health.js';
import { openCluster } from '../cluster/select.js';
import { DEFAULT_CLUSTER_NAME, PLB_USER } from '../cluster/state.js';
import { PlbError } from '../core/errors.js';
import { durationMsFlag } from '../cli/flags.js';
import { PlbCommand } from '../cli/plb-command.js';
import { DEFAULT_SLOW_START_MS } from '../router/slow-start.js';

export const DEFAULT_HAPROXY_LISTEN = '127.0.0.1:25500';

function checkMaxconn(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new PlbError('BAD_INPUT', `${flag}: sessions per server, an integer >= 1 (got "${text}")`);
  return n;
}

export function checkUser(text: string, flag: string): string {
  if (!/^[A-Za-z0-9_.-]{1,63}$/.test(text))
    throw new PlbError(
      'BAD_INPUT',
      `${flag}: a PostgreSQL user name of letters, digits and _ . - (got "${text}")`,
    );
  return text;
}

export default class HaproxyConfig extends PlbCommand {
  static override description =
    "Print an HAProxy configuration for the cluster's replicas (a baseline for bench --strategy via)";

  static override examples = [
    '<%= config.bin %> haproxy-config > haproxy.cfg && haproxy -f haproxy.cfg -p haproxy.pid -D',
    '<%= config.bin %> haproxy-config --balance roundrobin --listen 127.0.0.1:25501',
    '<%= config.bin %> haproxy-config --listen premium=127.0.0.1:25501,freemium=127.0.0.1:25502 --partition 3:2',
    '<%= config.bin %> haproxy-config --replica 127.0.0.1:25433,127.0.0.1:25434',
    '<%= config.bin %> haproxy-config --maxconn 220 --queue-timeout 10s',
    '<%= config.bin %> haproxy-config --maxconn 220 --priority --listen premium=127.0.0.1:25501,freemium=127.0.0.1:25502',
  ];

  static override flags = {
    name: Flags.string({
      description: 'cluster name (its replicas, as `plb cluster status` lists them)',
      default: DEFAULT_CLUSTER_NAME,
    }),
    replica: Flags.string({
      description: 'replica host:port (r1, r2, ... in order) instead of a cluster record',
      multiple: true,
      delimiter: ',',
    }),
    listen: checkedText((v, flag) => parseVia(v, flag))({
      description:
        'where HAProxy listens: host:port, or premium=host:port,freemium=host:port for one frontend per class over static partitions (--partition)',
      default: DEFAULT_HAPROXY_LISTEN,
    }),
    balance: Flags.string({
      description: 'HAProxy balance algorithm',
      options: [...HAPROXY_BALANCES],
      default: 'leastconn',
    }),
    'slow-start': checkedText((v, flag) => durationMsFlag(flag, v))({
      description: "a rejoining server's weight ramps over this (0s: off); plb's default",
      default: `${DEFAULT_SLOW_START_MS / 1000}s`,
    }),
    'health-interval': checkedText((v, flag) => durationMsFlag(flag, v, { positive: true }))({
      description: "health check interval (inter); plb's default",
      default: `${DEFAULT_HEALTH.intervalMs}ms`,
    }),
    fall: Flags.integer({
      description: 'failed checks that mark a server down',
      default: DEFAULT_HEALTH.fall,
      min: 1,
    }),
    rise: Flags.integer({
      description: 'good checks that mark it up again',
      default: DEFAULT_HEALTH.rise,
      min: 1,
    }),
    partition: checkedText((v, flag) => parsePartition(v, flag))({
      description: 'with per-class --listen: replicas premium:freemium (the first serve premium)',
      default: benchFlags.partition.default as string,
    }),
    maxconn: checkedText((v, flag) => checkMaxconn(v, flag))({
      description:
        'sessions per server at most; the rest wait in the queue (--queue-timeout): the baseline of plb-admit',
    }),
    'queue-timeout': checkedText((v, flag) => durationMsFlag(flag, v, { positive: true }))({
      description: 'with --maxconn: how long a session waits in the queue (timeout queue)',
      default: '10s',
    }),
    priority: Flags.boolean({
      description:
        'with --maxconn and per-class --listen: one shared backend, premium queued ahead of freemium (set-priority-class)',
      default: false,
    }),
    user: checkedText((v, flag) => checkUser(v, flag))({
      description: 'user named in the pgsql-check startup packet',
      default: PLB_USER,
    }),
  };

  async run(): Promise<{ config: string } | void> {
    const { flags } = await this.parse(HaproxyConfig);
    const replicas = flags.replica
      ? flags.replica.map((r, i) => ({ id: `r${i + 1}`, ...parseHostPort(r, '--replica') }))
      : (await openCluster(flags.name)).endpoints().filter((e) => e.kind === 'replica');
    const listen = parseVia(flags.listen, '--listen');
    const perClass = flags.listen.includes('=');
    if (flags.priority && (flags.maxconn === undefined || !perClass))
      throw new PlbError(
        'BAD_INPUT',
        '--priority: needs --maxconn and a per-class --listen premium=...,freemium=...',
      );
    const config = haproxyConfig({
      cluster: flags.replica ? '(--replica)' : flags.name,
      replicas,
      listen: perClass ? listen : listen.premium,
      balance: flags.balance as HaproxyBalance,
      slowStartMs: durationMsFlag('--slow-start', flags['slow-start']),
      health: {
        intervalMs: durationMsFlag('--health-interval', flags['health-interval'], { positive: true }),
        fall: flags.fall,
        rise: flags.rise,
      },
      user: flags.user,
      ...(perClass ? { partition: parsePartition(flags.partition, '--partition') } : {}),
      ...(flags.maxconn !== undefined
        ? {
            queue: {
              maxconn: checkMaxconn(flags.maxconn, '--maxconn'),
              timeoutMs: durationMsFlag('--queue-timeout', flags['queue-timeout'], { positive: true }),
              priority: flags.priority,
            },
          }
        : {}),
    });
    if (this.jsonEnabled()) return { config };
    process.stdout.write(config);
  }
}
