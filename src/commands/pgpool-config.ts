import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { pgpoolConfig, type PgpoolFiles } from '../baselines/pgpool.js';
import { parseHostPort } from '../bench/via.js';
import { checkedText, durationMsFlag } from '../cli/flags.js';
import { PlbCommand } from '../cli/plb-command.js';
import { DEFAULT_HEALTH } from '../cluster/health.js';
import { openCluster } from '../cluster/select.js';
import { DEFAULT_CLUSTER_NAME, PLB_DATABASE, PLB_USER } from '../cluster/state.js';
import { PlbError } from '../core/errors.js';
import { DEFAULT_WORKLOAD } from '../workload/spec.js';
import { checkUser } from './haproxy-config.js';

export const DEFAULT_PGPOOL_LISTEN = '127.0.0.1:25510';

function checkChildren(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 10_000)
    throw new PlbError('BAD_INPUT', `${flag}: client sessions at once, an integer 1..10000 (got "${text}")`);
  return n;
}

function checkDatabase(text: string, flag: string): string {
  if (!/^[A-Za-z0-9_.-]{1,63}$/.test(text))
    throw new PlbError('BAD_INPUT', `${flag}: a database name of letters, digits and _ . - (got "${text}")`);
  return text;
}

/** The servers and how to log in to them: the cluster's record, or --replica/--primary and libpq's environment. */
async function target(flags: {
  name: string;
  replica?: string[];
  primary?: string;
  user?: string;
  database?: string;
}): Promise<
  Pick<Parameters<typeof pgpoolConfig>[0], 'primary' | 'replicas' | 'user' | 'password' | 'database'>
> {
  if (flags.replica) {
    const password = process.env['PGPASSWORD'];
    if (password === undefined || password === '')
      throw new PlbError(
        'BAD_INPUT',
        '--replica: set PGPASSWORD to the password pgpool logs in to the servers with',
      );
    return {
      replicas: flags.replica.map((r, i) => ({ id: `r${i + 1}`, ...parseHostPort(r, '--replica') })),
      ...(flags.primary ? { primary: parseHostPort(flags.primary, '--primary') } : {}),
      user: flags.user ?? process.env['PGUSER'] ?? PLB_USER,
      password,
      database: flags.database ?? process.env['PGDATABASE'] ?? PLB_DATABASE,
    };
  }
  if (flags.primary)
    throw new PlbError('BAD_INPUT', '--primary: only with --replica (a cluster names its own)');
  const driver = await openCluster(flags.name);
  const creds = await driver.credentials();
  const eps = driver.endpoints();
  const primary = eps.find((e) => e.kind === 'primary');
  return {
    ...(primary ? { primary: { host: primary.host, port: primary.port } } : {}),
    // plb's servers set cluster_name plb-<id>: the standby's application_name on the primary.
    replicas: eps
      .filter((e) => e.kind === 'replica')
      .map((e) => ({ id: e.id, host: e.host, port: e.port, application: `plb-${e.id}` })),
    user: flags.user ?? creds.user,
    password: creds.password,
    database: flags.database ?? creds.database,
  };
}

export default class PgpoolConfig extends PlbCommand {
  static override description =
    "Write a Pgpool-II configuration for the cluster's replicas into a folder (a baseline for bench --strategy via)";

  static override examples = [
    '<%= config.bin %> pgpool-config --dir pgpool && pgpool -n -D -f pgpool/pgpool.conf -F pgpool/pcp.conf -a pgpool/pool_hba.conf',
    '<%= config.bin %> pgpool-config --dir pgpool --listen 127.0.0.1:25511 --children 64',
    'PGPASSWORD=secret <%= config.bin %> pgpool-config --dir pgpool --replica 10.0.0.2:5432,10.0.0.3:5432 --primary 10.0.0.1:5432 --user app',
  ];

  static override flags = {
    dir: Flags.string({
      description:
        'folder to write pgpool.conf, pool_hba.conf, pool_passwd (0600) and pcp.conf into; pgpool keeps its pid file, sockets and node status there',
      required: true,
    }),
    name: Flags.string({
      description: 'cluster name (its primary and replicas, as `plb cluster status` lists them)',
      default: DEFAULT_CLUSTER_NAME,
    }),
    replica: Flags.string({
      description:
        'replica host:port (r1, r2, ... in order) instead of a cluster record; the password from PGPASSWORD',
      multiple: true,
      delimiter: ',',
    }),
    primary: checkedText((v, flag) => parseHostPort(v, flag))({
      description:
        'with --replica: the primary host:port (backend 0, weight 0: it takes writes, and reads only when no replica is up)',
    }),
    listen: checkedText((v, flag) => parseHostPort(v, flag))({
      description: 'where pgpool listens: host:port',
      default: DEFAULT_PGPOOL_LISTEN,
    }),
    children: checkedText((v, flag) => checkChildren(v, flag))({
      description:
        "num_init_children: client sessions served at once (the rest wait), and each child's connection to every server; at least the bench's --clients",
      default: String(2 * DEFAULT_WORKLOAD.clients),
    }),
    'health-interval': checkedText((v, flag) => durationMsFlag(flag, v, { positive: true }))({
      description: "health_check_period (whole seconds, at least 1); plb's default",
      default: `${DEFAULT_HEALTH.intervalMs}ms`,
    }),
    'hang-timeout': checkedText((v, flag) => durationMsFlag(flag, v, { positive: true }))({
      description:
        "health_check_timeout and connect_timeout (whole seconds): a check slower than this detaches the server; plb's hang timeout",
      default: `${DEFAULT_HEALTH.hangMs / 1000}s`,
    }),
    fall: Flags.integer({
      description: 'failed checks that detach a server (health_check_max_retries = fall - 1)',
      default: DEFAULT_HEALTH.fall,
      min: 1,
    }),
    user: checkedText((v, flag) => checkUser(v, flag))({
      description:
        "user pgpool checks the servers as and clients log in as (default: the cluster's; with --replica PGUSER, else plb)",
    }),
    database: checkedText((v, flag) => checkDatabase(v, flag))({
      description:
        "database of the health checks (default: the cluster's; with --replica PGDATABASE, else plb)",
    }),
  };

  async run(): Promise<{ dir: string; files: string[] } | void> {
    const { flags } = await this.parse(PgpoolConfig);
    const dir = resolve(flags.dir);
    const files: PgpoolFiles = pgpoolConfig({
      cluster: flags.replica ? '(--replica)' : flags.name,
      ...(await target(flags)),
      listen: parseHostPort(flags.listen, '--listen'),
      children: checkChildren(flags.children, '--children'),
      health: {
        intervalMs: durationMsFlag('--health-interval', flags['health-interval'], { positive: true }),
        hangMs: durationMsFlag('--hang-timeout', flags['hang-timeout'], { positive: true }),
        fall: flags.fall,
      },
      runDir: dir,
    });
    mkdirSync(dir, { recursive: true });
    // The password file for pgpool's eyes only (pgpool warns about a looser one).
    for (const [name, text] of Object.entries(files))
      writeFileSync(join(dir, name), text, { mode: name === 'pool_passwd' ? 0o600 : 0o644 });
    const names = Object.keys(files).map((n) => join(dir, n));
    if (this.jsonEnabled()) return { dir, files: names };
    process.stdout.write(
      `wrote ${names.join(', ')}\n` +
        `run: pgpool -n -D -f ${join(dir, 'pgpool.conf')} -F ${join(dir, 'pcp.conf')} -a ${join(dir, 'pool_hba.conf')}\n`,
    );
  }
}
