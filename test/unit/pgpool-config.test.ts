import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { pgpoolConfig, pgpoolHealth, type PgpoolConfigOptions } from '../../src/baselines/pgpool.js';
import PgpoolConfigCommand from '../../src/commands/pgpool-config.js';
import { runCommand } from '../helpers/fixtures.js';

const replicas = [1, 2, 3].map((i) => ({
  id: `r${i}`,
  application: `plb-r${i}`,
  host: '127.0.0.1',
  port: 25432 + i,
}));
const base: PgpoolConfigOptions = {
  cluster: 'plb',
  primary: { host: '127.0.0.1', port: 25432 },
  replicas,
  listen: { host: '127.0.0.1', port: 25510 },
  children: 64,
  health: { intervalMs: 1000, hangMs: 5000, fall: 2 },
  user: 'plb',
  password: "it's secret",
  database: 'plb',
  runDir: '/run/pgpool-test',
};

const work = mkdtempSync(join(tmpdir(), 'plb-pgpool-config-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** name -> value of every setting (the last wins, as pgpool reads them). */
function settings(conf: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of conf.split('\n')) {
    const kv = /^([a-z_0-9]+) = (.*)$/.exec(line);
    if (kv) m.set(kv[1] as string, kv[2] as string);
  }
  return m;
}

describe('pgpool-config', () => {
  it('streaming replication: the primary at weight 0, the replicas at 1, balanced per session', () => {
    const s = settings(pgpoolConfig(base)['pgpool.conf']);
    expect(s.get('backend_clustering_mode')).toBe("'streaming_replication'");
    expect([0, 1, 2, 3].map((i) => `${s.get(`backend_port${i}`)}@${s.get(`backend_weight${i}`)}`)).toEqual([
      '25432@0',
      '25433@1',
      '25434@1',
      '25435@1',
    ]);
    expect(s.has('backend_port4')).toBe(false);
    expect(s.get('backend_application_name1')).toBe("'plb-r1'");
    expect(s.get('load_balance_mode')).toBe('on');
    expect(s.get('statement_level_load_balance')).toBe('off');
    expect(s.get('num_init_children')).toBe('64');
    expect(s.get('max_pool')).toBe('1');
    expect(s.get('listen_addresses')).toBe("'127.0.0.1'");
    expect(s.get('port')).toBe('25510');
    // No TCP port but the listener: pcp on a socket in the run folder, no watchdog.
    expect(s.get('pcp_listen_addresses')).toBe("''");
    expect(s.get('use_watchdog')).toBe('off');
    expect(s.get('pid_file_name')).toBe("'/run/pgpool-test/pgpool.pid'");
    expect(s.get('auto_failback')).toBe('on');
    expect(s.get('enable_pool_hba')).toBe('on');
  });

  it("plb's health options in pgpool's whole seconds; fall = the first failure + retries", () => {
    const s = settings(
      pgpoolConfig({ ...base, health: { intervalMs: 500, hangMs: 2500, fall: 3 } })['pgpool.conf'],
    );
    expect(s.get('health_check_period')).toBe('1');
    expect(s.get('health_check_timeout')).toBe('3');
    expect(s.get('health_check_max_retries')).toBe('2');
    expect(s.get('health_check_retry_delay')).toBe('1');
    expect(s.get('connect_timeout')).toBe('3000');
    expect(s.get('failover_on_backend_error')).toBe('off');
    expect(s.get('health_check_password')).toBe("''");
    expect(pgpoolHealth({ intervalMs: 2000, hangMs: 1, fall: 1 })).toEqual({
      periodS: 2,
      timeoutS: 1,
      retries: 0,
    });
  });

  it('SCRAM for the one user against pool_passwd (the password only there)', () => {
    const f = pgpoolConfig(base);
    expect(f.pool_passwd).toBe("plb:TEXTit's secret\n");
    expect(f['pgpool.conf']).not.toContain('secret');
    expect(f['pool_hba.conf']).toContain('host all plb 0.0.0.0/0 scram-sha-256\n');
  });

  it('without a primary (or application names): reads only, no failback, no wait for a primary', () => {
    const { primary: _, ...noPrimary } = base;
    const s = settings(
      pgpoolConfig({ ...noPrimary, replicas: replicas.map(({ application: _a, ...r }) => r) })['pgpool.conf'],
    );
    expect(s.get('backend_port0')).toBe('25433');
    expect(s.get('backend_weight0')).toBe('1');
    expect(s.get('auto_failback')).toBe('off');
    expect(s.get('search_primary_node_timeout')).toBe('1');
  });

  describe('the command', () => {
    const env = process.env['PGPASSWORD'];
    afterEach(() => {
      if (env === undefined) delete process.env['PGPASSWORD'];
      else process.env['PGPASSWORD'] = env;
    });

    it('writes the folder from --replica lists; pool_passwd is 0600', async () => {
      process.env['PGPASSWORD'] = 'pw';
      const dir = join(work, 'out');
      const ok = await runCommand(PgpoolConfigCommand, [
        '--dir',
        dir,
        '--replica',
        '127.0.0.1:25433,127.0.0.1:25434',
        '--primary',
        '127.0.0.1:25432',
        '--children',
        '8',
        '--user',
        'app',
      ]);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toContain(`run: pgpool -n -D -f ${join(dir, 'pgpool.conf')}`);
      const s = settings(readFileSync(join(dir, 'pgpool.conf'), 'utf8'));
      expect(s.get('backend_port2')).toBe('25434');
      expect(s.get('num_init_children')).toBe('8');
      expect(s.get('health_check_user')).toBe("'app'");
      expect(s.get('socket_dir')).toBe(`'${dir}'`);
      // --replica lists name no application: pgpool cannot tell a standby streams again.
      expect(s.get('auto_failback')).toBe('off');
      expect(readFileSync(join(dir, 'pool_passwd'), 'utf8')).toBe('app:TEXTpw\n');
      expect(statSync(join(dir, 'pool_passwd')).mode & 0o777).toBe(0o600);
    });

    it('bad input is one line naming the flag', async () => {
      process.env['PGPASSWORD'] = 'pw';
      const dir = join(work, 'bad');
      const line = async (args: string[]): Promise<string> =>
        (await runCommand(PgpoolConfigCommand, ['--dir', dir, ...args])).stderr.trim();
      expect(await line(['--replica', '127.0.0.1:1', '--listen', 'x'])).toMatch(
        /^Error: --listen: expected host:port/,
      );
      expect(await line(['--replica', '127.0.0.1:1', '--children', '0'])).toMatch(/^Error: --children: /);
      expect(await line(['--replica', '127.0.0.1:1', '--health-interval', 'x'])).toMatch(
        /^Error: --health-interval: /,
      );
      expect(await line(['--replica', '127.0.0.1:1', '--hang-timeout', '0s'])).toMatch(
        /^Error: --hang-timeout: /,
      );
      expect(await line(['--replica', '127.0.0.1:1', '--user', 'a b'])).toMatch(/^Error: --user: /);
      expect(await line(['--replica', '127.0.0.1:1', '--primary', 'nope'])).toMatch(/^Error: --primary: /);
      expect(await line(['--replica', 'nope'])).toMatch(/^Error: --replica: /);
      expect(await line(['--primary', '127.0.0.1:1'])).toMatch(/^Error: --primary: only with --replica/);
      delete process.env['PGPASSWORD'];
      expect(await line(['--replica', '127.0.0.1:1'])).toMatch(/^Error: --replica: set PGPASSWORD/);
    });
  });
});
