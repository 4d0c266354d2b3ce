/**
 * A Pgpool-II (4.3) setup for a cluster's replicas, as a baseline for `--strategy via`: streaming
 * replication mode with the primary as backend 0 at weight 0 (pgpool finds the primary by asking
 * each backend, sends it what must write, and falls back to it when no standby is up) and the
 * replicas at weight 1, so every read session is balanced over the replicas. The choice is made
 * when the session starts and kept (statement_level_load_balance off): session-level, like plb; it
 * is a weighted random draw, not least connections. Health checks with plb's interval and fall
 * (pgpool counts whole seconds); a standby that comes back is attached again by auto_failback once
 * the primary sees it streaming. Clients log in with SCRAM against pool_passwd, which holds the
 * password pgpool also uses for the servers. Pure: text in, text out (`plb pgpool-config`).
 */
import type { HostPort } from '../core/endpoint.js';
import { PlbError } from '../core/errors.js';

export interface PgpoolConfigOptions {
  /** The cluster's name (a comment). */
  cluster: string;
  /** Backend 0 at weight 0: writes, and reads when no replica is up. Optional (`--replica` lists). */
  primary?: HostPort;
  /** At weight 1; `application` is the walreceiver's application_name the primary lists. */
  replicas: ReadonlyArray<{ id: string; application?: string } & HostPort>;
  listen: HostPort;
  /** num_init_children: client sessions served at once; more wait in the listen backlog. */
  children: number;
  /**
   * plb's check interval and fall; its hang timeout is pgpool's check timeout: plb never marks a
   * replica down for a slow check shorter than that, and pgpool detaches on a timed-out check.
   */
  health: { intervalMs: number; hangMs: number; fall: number };
  /** Logs in to the servers (checks) and is the one user in pool_passwd and pool_hba.conf. */
  user: string;
  password: string;
  database: string;
  /** Where pgpool keeps its pid file, sockets and node status (an absolute folder). */
  runDir: string;
}

/** The files pgpool reads, by name in the configuration folder. pool_passwd must be 0600. */
export interface PgpoolFiles {
  'pgpool.conf': string;
  'pool_hba.conf': string;
  pool_passwd: string;
  'pcp.conf': string;
}

/** Whole seconds, at least one (pgpool's health and replication checks count seconds). */
function seconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** A quoted configuration value (pgpool reads '' as one quote inside a string). */
function q(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/** The health and failback settings, as pgpool counts them (also for the docs' mapping). */
export function pgpoolHealth(h: PgpoolConfigOptions['health']): {
  periodS: number;
  timeoutS: number;
  retries: number;
} {
  return { periodS: seconds(h.intervalMs), timeoutS: seconds(h.hangMs), retries: Math.max(0, h.fall - 1) };
}

export function pgpoolConfig(o: PgpoolConfigOptions): PgpoolFiles {
  if (o.replicas.length === 0) throw new PlbError('BAD_INPUT', 'pgpool: no replicas to balance over');
  // pool_passwd is one user:password a line.
  if (/[\r\n]/.test(o.password)) throw new PlbError('BAD_INPUT', 'pgpool: the password has a line break');
  const h = pgpoolHealth(o.health);
  // auto_failback finds a standby in the primary's pg_stat_replication by its application_name.
  const failback = o.primary !== undefined && o.replicas.every((r) => r.application !== undefined);
  const backends = [
    ...(o.primary ? [{ at: o.primary, weight: 0, name: 'primary', application: undefined }] : []),
    ...o.replicas.map((r) => ({ at: r, weight: 1, name: r.id, application: r.application })),
  ];
  const lines = [
    `# written by plb pgpool-config: cluster ${o.cluster}, ${o.replicas.length} replicas${o.primary ? ' and the primary (weight 0)' : ''}`,
    '# run: pgpool -n -D -f <folder>/pgpool.conf -F <folder>/pcp.conf -a <folder>/pool_hba.conf (foreground; -D forgets old node states)',
    "backend_clustering_mode = 'streaming_replication'",
    `listen_addresses = ${q(o.listen.host)}`,
    `port = ${o.listen.port}`,
    `socket_dir = ${q(o.runDir)}`,
    // pcp (the admin protocol) on a socket in runDir only: no second TCP port to collide with.
    "pcp_listen_addresses = ''",
    `pcp_socket_dir = ${q(o.runDir)}`,
    `pid_file_name = ${q(`${o.runDir}/pgpool.pid`)}`,
    // pgpool_status (which nodes were down) lives here; -D at start discards it.
    `logdir = ${q(o.runDir)}`,
    "log_destination = 'stderr'",
    'logging_collector = off',
    'use_watchdog = off',
    '',
    ...backends.flatMap((b, i) => [
      `# node ${i}: ${b.name}`,
      `backend_hostname${i} = ${q(b.at.host)}`,
      `backend_port${i} = ${b.at.port}`,
      `backend_weight${i} = ${b.weight}`,
      `backend_flag${i} = 'ALLOW_TO_FAILOVER'`,
      ...(b.application !== undefined ? [`backend_application_name${i} = ${q(b.application)}`] : []),
    ]),
    '',
    // One child a client session; each keeps one cached connection to every backend (max_pool 1).
    `num_init_children = ${o.children}`,
    'max_pool = 1',
    'reserved_connections = 0',
    'listen_backlog_multiplier = 4',
    'connection_cache = on',
    // Children live as long as pgpool (sessions are long; no periodic restart skews a run).
    'child_life_time = 0',
    'child_max_connections = 0',
    'connection_life_time = 0',
    '',
    'load_balance_mode = on',
    'statement_level_load_balance = off',
    '',
    'enable_pool_hba = on',
    "pool_passwd = 'pool_passwd'",
    'allow_clear_text_frontend_auth = off',
    '',
    // Health: plb's interval and hang timeout in whole seconds; fall = the first failure + retries.
    // A timed-out check ends every session (pgpool's docs): a loaded server must not look dead.
    `health_check_period = ${h.periodS}`,
    `health_check_timeout = ${h.timeoutS}`,
    `health_check_max_retries = ${h.retries}`,
    `health_check_retry_delay = ${h.periodS}`,
    `health_check_user = ${q(o.user)}`,
    // Empty: the password is read from pool_passwd (kept out of this file).
    "health_check_password = ''",
    `health_check_database = ${q(o.database)}`,
    `connect_timeout = ${h.timeoutS * 1000}`,
    // A session's error is the session's: only the checks (with their retries) detach a node, as
    // plb counts failures (pgpool's docs ask for this with health_check_max_retries).
    'failover_on_backend_error = off',
    "failover_command = ''",
    // The primary is found by asking the servers; with none among the backends, do not wait for one.
    `search_primary_node_timeout = ${o.primary ? 300 : 1}`,
    `sr_check_period = ${h.periodS}`,
    `sr_check_user = ${q(o.user)}`,
    "sr_check_password = ''",
    `sr_check_database = ${q(o.database)}`,
    // A standby that streams from the primary again is attached again (plb's rise, as pgpool has
    // it); without it a detached node stays detached until pgpool restarts with -D.
    `auto_failback = ${failback ? 'on' : 'off'}`,
    `auto_failback_interval = ${h.periodS}`,
    '',
  ];
  return {
    'pgpool.conf': `${lines.join('\n')}\n`,
    'pool_hba.conf': [
      '# written by plb pgpool-config: SCRAM over TCP for the one user, as the servers ask',
      `host all ${o.user} 0.0.0.0/0 scram-sha-256`,
      `host all ${o.user} ::/0 scram-sha-256`,
      '',
    ].join('\n'),
    // TEXT: pgpool needs the password itself to answer the servers' SCRAM (pg_enc turns it into AES).
    pool_passwd: `${o.user}:TEXT${o.password}\n`,
    'pcp.conf': '# written by plb pgpool-config: no pcp users (the admin socket accepts none)\n',
  };
}
