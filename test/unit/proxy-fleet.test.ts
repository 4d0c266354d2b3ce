import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  checkFleetChoice,
  credentialsFromEnv,
  describeFleet,
  fleetFromAddresses,
  fleetFromClusterFile,
  parseReplicaAddress,
  resolveFleet,
} from '../../src/proxy/fleet.js';
import {
  flagsNotDefault,
  mergeProxyFlags,
  parseProxyConfigFile,
  type ProxyConfigFile,
} from '../../src/proxy/config-file.js';
import { planReload, resolveSettings, unapplied } from '../../src/proxy/fleet-reload.js';
import { parseProxyFlags, proxyFlags, type ProxyFlagValues } from '../../src/proxy/options.js';
import { parseClusterFile } from '../../src/cluster/external/file.js';
import { parseLsn, PositionHistory } from '../../src/cluster/replay-lag.js';

const dir = mkdtempSync(join(tmpdir(), 'plb-fleet-unit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const FLEET = `user: app
dbname: shop
password: { env: SHOP_PW }
primary: { host: db0.internal, port: 5432 }
replicas:
  r1: { host: db1.internal, zone: a, weight: 2 }
  r2: { host: db2.internal, port: 5433, zone: b }
`;
const ENV = { SHOP_PW: 'secret' };

function write(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

function defaults(over: Partial<ProxyFlagValues> = {}): ProxyFlagValues {
  const out: Record<string, unknown> = {};
  for (const [k, f] of Object.entries(proxyFlags)) {
    const d = (f as { default?: unknown }).default;
    if (d !== undefined && typeof d !== 'function') out[k] = d;
  }
  return { ...out, ...over } as ProxyFlagValues;
}

const messageOf = async (p: Promise<unknown> | (() => unknown)): Promise<string> => {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('did not throw');
};

describe('fleet resolution', () => {
  it('a cluster file: primary, replicas, zones, weights (1 left out), credentials from where it points', () => {
    const f = fleetFromClusterFile(write('fleet.yaml', FLEET), ENV);
    expect(f.primary).toEqual({ id: 'primary', kind: 'primary', host: 'db0.internal', port: 5432 });
    expect(f.replicas.map((r) => `${r.id} ${r.host}:${r.port}`)).toEqual([
      'r1 db1.internal:5432',
      'r2 db2.internal:5433',
    ]);
    expect(f.servers.map((s) => s.id)).toEqual(['primary', 'r1', 'r2']);
    expect(f.zones).toEqual({ r1: 'a', r2: 'b' });
    expect(f.weights).toEqual({ r1: 2 });
    expect(f.credentials).toEqual({ user: 'app', password: 'secret', database: 'shop' });
    expect(describeFleet(f)).toBe(
      'r1 db1.internal:5432 (zone a, weight 2), r2 db2.internal:5433 (zone b); primary db0.internal:5432',
    );
    // A fleet's psql line never reads plb's password file.
    expect(f.connectLine('127.0.0.1', 6432)).toBe(`psql 'host=127.0.0.1 port=6432 user=app dbname=shop'`);
  });

  it('zones: every replica or none, named at the line of the one without', async () => {
    const text = FLEET.replace(', zone: b', '');
    expect(await messageOf(() => parseClusterFile(text, 'f.yaml', ENV))).toBe(
      'f.yaml:7: replicas.r2 has no zone: give every replica one, or none',
    );
    expect(
      await messageOf(() => parseClusterFile(FLEET.replace('weight: 2', 'weight: 0'), 'f.yaml', ENV)),
    ).toMatch(/^f\.yaml:6: replicas\.r1\.weight /);
  });

  it('--replica: r1..rK in order, libpq environment for credentials, IPv6 in brackets', () => {
    const f = fleetFromAddresses(['10.0.0.5:5432', '[::1]:6000', 'db3'], {
      PGUSER: 'u',
      PGDATABASE: 'd',
      PGPASSWORD: 'p',
    });
    expect(f.primary).toBeUndefined();
    expect(f.replicas.map((r) => `${r.id}=${r.host}:${r.port}`)).toEqual([
      'r1=10.0.0.5:5432',
      'r2=::1:6000',
      'r3=db3:5432',
    ]);
    expect(f.credentials).toEqual({ user: 'u', password: 'p', database: 'd' });
    // No PGPASSWORD: empty, so pg reads PGPASSFILE or ~/.pgpass; the database defaults to the user.
    expect(credentialsFromEnv({ PGUSER: 'x' })).toEqual({ user: 'x', password: '', database: 'x' });
    expect(() => parseReplicaAddress('db:port')).toThrow(/^--replica: "db:port" must be host:port/);
    expect(() => parseReplicaAddress('db:70000')).toThrow(/must be host:port/);
    expect(() => fleetFromAddresses(['a:1', 'a:1'])).toThrow('--replica: a:1 is given twice (r1 and r2)');
  });

  it('the three sources are exclusive, refused in one line', async () => {
    expect(() => checkFleetChoice({ name: 'x', replica: ['a:1'] })).toThrow(
      /^--name and --replica: give one of --name, --cluster-file or --replica/,
    );
    expect(await messageOf(resolveFleet({ 'cluster-file': 'f', replica: ['a:1'] }))).toMatch(
      /^--cluster-file and --replica: /,
    );
    expect(() => checkFleetChoice({ replica: [] })).not.toThrow();
  });
});

describe('config file', () => {
  it('keys are flag names, checked by the flag; paths relative to the file', async () => {
    const f = await parseProxyConfigFile(
      'premium-port: 7432\ncluster-file: fleet.yaml\nreplica: []\nstrategy: wlc\n'.replace(
        'replica: []\n',
        '',
      ),
      join(dir, 'proxy.yaml'),
    );
    expect(f.values).toEqual({
      'premium-port': 7432,
      'cluster-file': join(dir, 'fleet.yaml'),
      strategy: 'wlc',
    });
    expect(f.lines.get('strategy')).toBe(3);
    const tls = await parseProxyConfigFile(
      'server-tls: verify-full\nserver-ca: ca.crt\n',
      join(dir, 'p.yaml'),
    );
    expect(tls.values['server-ca']).toBe(join(dir, 'ca.crt'));
  });

  it.each([
    ['premum-port: 1\n', "p.yaml:1: premum-port: unknown key (keys are plb proxy's flag names)"],
    ['host: a\ncheck: true\n', 'p.yaml:2: check: not in a config file (a command-line flag only)'],
    [
      'strategy: fast\n',
      'p.yaml:1: strategy: must be one of plb, rr, static, lc, wlc, plb-admit, lc-queue (got "fast")',
    ],
    [
      '\n\nstop-timeout: soon\n',
      'p.yaml:3: stop-timeout: expected a duration like 10s or 500ms (got "soon")',
    ],
    ['premium-port: [1, 2]\n', 'p.yaml:1: premium-port: must be a single value (a string or a number)'],
    ['- 1\n', 'p.yaml:1: must be a mapping of flag names to values, like premium-port: 6432'],
  ])('%j -> %s', async (text, message) => {
    expect(await messageOf(parseProxyConfigFile(text, 'p.yaml'))).toBe(message);
  });

  it('precedence: the command line over the file over the defaults; one source of servers', async () => {
    const file: ProxyConfigFile = await parseProxyConfigFile(
      'premium-port: 7432\nfreemium-port: 7433\ncluster-file: /etc/fleet.yaml\n',
      '/etc/proxy.yaml',
    );
    const cli = defaults({ 'premium-port': 9000, config: '/etc/proxy.yaml' });
    const merged = mergeProxyFlags(cli, new Set(['premium-port', 'config']), file);
    expect(merged['premium-port']).toBe(9000);
    expect(merged['freemium-port']).toBe(7433);
    expect(merged['stats-every']).toBe(5);
    expect(merged['cluster-file']).toBe('/etc/fleet.yaml');
    // --replica on the command line replaces the file's cluster-file.
    const other = mergeProxyFlags(defaults({ replica: ['a:1'] }), new Set(['replica']), file);
    expect(other['cluster-file']).toBeUndefined();
    expect(other.replica).toEqual(['a:1']);
    // A caller that cannot say what was given: what differs from the defaults.
    expect(flagsNotDefault(defaults({ 'premium-port': 1 }))).toEqual(new Set(['premium-port']));
  });

  it('--check errors: a value from the file is named by its key and line, a flag by its name', async () => {
    const fleet = write('f2.yaml', FLEET);
    const cfg = write('p2.yaml', `cluster-file: f2.yaml\n\nfreemium-port: 7432\npremium-port: 7432\n`);
    expect(await messageOf(resolveSettings(defaults({ config: cfg }), new Set(['config']), ENV))).toBe(
      `${cfg}:4: premium-port and freemium-port are both 7432`,
    );
    const bad = write('p3.yaml', `cluster-file: f2.yaml\nzone: c\n`);
    expect(await messageOf(resolveSettings(defaults({ config: bad }), new Set(['config']), ENV))).toBe(
      `${bad}:2: zone: no replica is in zone c (zones: a, b)`,
    );
    const ok = await resolveSettings(defaults({ config: bad, zone: 'b' }), new Set(['config', 'zone']), ENV);
    expect(ok.config.zone).toBe('b');
    expect(ok.fleet.label).toBe(fleet);
    // An error inside the cluster file names that file and line.
    write('f3.yaml', FLEET.replace('user: app', 'user: app\ncolour: blue'));
    const p4 = write('p4.yaml', 'cluster-file: f3.yaml\n');
    expect(await messageOf(resolveSettings(defaults({ config: p4 }), new Set(['config']), ENV))).toMatch(
      new RegExp(`^${join(dir, 'f3.yaml')}:2: .*colour`),
    );
    // The primary listener needs a primary: --replica names none (refused here, so in --check too).
    const p5 = write('p5.yaml', 'replica: [127.0.0.1:5433]\nprimary-port: 7434\n');
    expect(await messageOf(resolveSettings(defaults({ config: p5 }), new Set(['config']), ENV))).toBe(
      `${p5}:2: primary-port: the servers must name exactly one primary (got 0): --replica names replicas only; name the primary in a --cluster-file`,
    );
  });
});

describe('reload plan', () => {
  const now = () => {
    const f = fleetFromClusterFile(write('now.yaml', FLEET), ENV);
    return { replicas: f.replicas, retired: new Set<string>(), weights: { r1: 2 }, zones: f.zones };
  };

  it('removed replicas drain, known ones come back, weights change; matched by address', () => {
    const dropped = fleetFromClusterFile(
      write('n1.yaml', FLEET.replace(/ {2}r1: .*\n/, '').replace('r2:', 'r1:')),
      ENV,
    );
    // The file renumbered: db2 is its r1 now, still the proxy's r2.
    expect(planReload(now(), dropped)).toEqual({ add: [], retire: ['r1'], restore: [], reweight: [] });
    const back = { ...now(), retired: new Set(['r1']) };
    const reweighted = fleetFromClusterFile(write('n2.yaml', FLEET.replace('weight: 2', 'weight: 3')), ENV);
    expect(planReload(back, reweighted)).toEqual({
      add: [],
      retire: [],
      restore: ['r1'],
      reweight: [{ id: 'r1', weight: 3 }],
    });
  });

  it('a new address is added: its zone and weight, its file id unless the proxy has that id', () => {
    const added = fleetFromClusterFile(
      write('n3.yaml', `${FLEET}  r3: { host: db9.internal, zone: a, weight: 2 }\n`),
      ENV,
    );
    expect(planReload(now(), added)).toEqual({
      add: [
        {
          endpoint: { id: 'r3', kind: 'replica', host: 'db9.internal', port: 5432 },
          fileId: 'r3',
          weight: 2,
          zone: 'a',
        },
      ],
      retire: [],
      restore: [],
      reweight: [],
    });
    // r1 gone, a new server under the file's r1: the proxy's r1 drains, the new one is r1-2.
    const swapped = fleetFromClusterFile(
      write('n5.yaml', FLEET.replace(/(r1: \{ host: )[^,]+/, '$1db7.internal')),
      ENV,
    );
    const plan = planReload(now(), swapped);
    expect(plan.add.map((a) => [a.endpoint.id, a.fileId, a.endpoint.host])).toEqual([
      ['r1-2', 'r1', 'db7.internal'],
    ]);
    expect(plan.retire).toEqual(['r1']);
  });

  it('refused in one line: a new zone, a zone where there are none, no replica left', () => {
    const rezoned = fleetFromClusterFile(write('n4.yaml', FLEET.replace('zone: b', 'zone: a')), ENV);
    expect(() => planReload(now(), rezoned)).toThrow(
      /r2 db2\.internal:5433: zone a, was b: zones change with a restart/,
    );
    const unzoned = { ...now(), zones: undefined };
    const all = fleetFromClusterFile(
      write('n6.yaml', `${FLEET}  r3: { host: db9.internal, zone: a }\n`),
      ENV,
    );
    expect(() => planReload({ ...unzoned, replicas: [] }, all)).toThrow(
      /r1 db1\.internal:5432: zone a, but the replicas have no zones/,
    );
  });

  it('settings a reload cannot apply are listed', () => {
    const a = parseProxyFlags(defaults());
    const b = parseProxyFlags(defaults({ 'premium-port': 7000, 'cluster-file': 'x' }));
    expect(unapplied(a, b)).toEqual(['ports']);
  });
});

describe('replay lag from positions', () => {
  it('parses pg_lsn text', () => {
    expect(parseLsn('0/0')).toBe(0n);
    expect(parseLsn('16/B374D848')).toBe((0x16n << 32n) + 0xb374d848n);
    expect(parseLsn(null)).toBeNull();
    expect(parseLsn('x')).toBeNull();
  });

  it('how long ago the primary was where the standby is', () => {
    const h = new PositionHistory();
    expect(h.lagMs(5n, 0)).toBeNull();
    h.add(1000, 100n);
    h.add(2000, 200n);
    h.add(3000, 300n);
    expect(h.lagMs(300n, 3100)).toBe(0);
    expect(h.lagMs(350n, 3100)).toBe(0);
    // Past 200, not 300: caught up no later than the sample after 200's.
    expect(h.lagMs(250n, 3100)).toBe(100);
    expect(h.lagMs(150n, 3100)).toBe(1100);
    expect(h.lagMs(50n, 3100)).toBe(2100);
  });
});
