/**
 * Delay, bandwidth and the cut of a replica's WAL stream on the local driver, in the kernel: a
 * delayed replica's round trip grows by about twice the delay (each way), and a dead delayer is no
 * partition; a large result through a limited port takes at least its size over the rate; a replica
 * cut from its primary keeps answering while its received WAL stops, and catches up after the heal.
 * Every trace of them (iptables rules, lo's root qdisc, the delayer) is gone after a heal, a run's
 * restore, a SIGTERMed bench, and a SIGKILLed bench's `cluster down`. Lower bounds only, never an
 * upper one. Needs root, iptables, tc and the delayer: skipped without them, a failure in CI.
 * Traffic only to 127.0.0.1; bounded (a few minutes).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../src/clock/index.js';
import { createLocalDriver, type LocalDriver } from '../../src/cluster/local/index.js';
import { delayerPath, delayersOf } from '../../src/cluster/net/delayer.js';
import { removeNetFaults } from '../../src/cluster/net/net-faults.js';
import { checkNetFaultsPossible } from '../../src/cluster/net/preflight.js';
import { NETWORK_ACTIONS } from '../../src/run-format/fault-actions.js';
import { parseRootQdisc, qdiscHandle, rootOwner } from '../../src/cluster/net/tc.js';
import { connect, pollUntil } from '../../src/cluster/pg-util.js';
import { clusterSpec, downCluster } from '../../src/cluster/select.js';
import { readClusterRecord } from '../../src/cluster/state.js';
import type { Credentials } from '../../src/core/endpoint.js';
import { Injector } from '../../src/faults/injector.js';
import { haveServerBinaries } from '../helpers/fixtures.js';

const BASE_PORT = 23560;
const BENCH_PORT = 23570;
const ARGS = { cpus: 0.25 };

function have(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const canRun =
  haveServerBinaries &&
  process.getuid?.() === 0 &&
  have('iptables', ['-S', 'INPUT']) &&
  have('tc', ['qdisc', 'show', 'dev', 'lo']) &&
  existsSync(delayerPath());
if (process.env.CI === 'true' && haveServerBinaries && !canRun)
  throw new Error(
    'network faults need root, iptables, tc and the delayer in CI: apt-get install iptables iproute2 libnetfilter-queue-dev, npm run build',
  );

/** Lines of iptables-save that name plb. */
function plbRules(): string[] {
  return execFileSync('iptables-save', { encoding: 'utf8' })
    .split('\n')
    .filter((l) => /plb/i.test(l));
}

/** What the kernel holds of a cluster's: its rules, whether lo's root qdisc is its, its delayers. */
function traces(clusterId: string): { rules: number; qdisc: boolean; delayers: number[] } {
  const root = parseRootQdisc(execFileSync('tc', ['qdisc', 'show', 'dev', 'lo'], { encoding: 'utf8' }));
  return {
    rules: plbRules().filter((l) => l.includes(clusterId.slice(0, 8))).length,
    qdisc: rootOwner(root, qdiscHandle(clusterId)) === 'ours',
    delayers: delayersOf(clusterId),
  };
}
const NONE = { rules: 0, qdisc: false, delayers: [] };

/** Running: there and not a zombie (an orphan's parent may be slow to reap it). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

describe.skipIf(!canRun)('pre-flight', () => {
  it('says the mechanism of each action, and leaves no rule behind', () => {
    const lines = checkNetFaultsPossible(new Set(NETWORK_ACTIONS), 'local');
    expect(lines.map((l) => l.slice(0, l.indexOf(':')))).toEqual([...NETWORK_ACTIONS]);
    expect(lines.find((l) => l.startsWith('delay:'))).toContain('NFQUEUE');
    expect(lines.find((l) => l.startsWith('bandwidth:'))).toContain('htb');
    expect(lines.find((l) => l.startsWith('partition-replication:'))).toContain('cgroup');
    // Its scratch chain is gone (other clusters' rules may be in force on a shared machine).
    expect(plbRules().filter((l) => l.includes('PLBP-'))).toEqual([]);
  });

  it('refuses a delay without the delayer, in one line with the install hint', () => {
    const saved = process.env.PLB_DELAYER;
    process.env.PLB_DELAYER = '/nonexistent/plb-delayer';
    try {
      expect(() => checkNetFaultsPossible(new Set(['loss', 'delay'] as const))).toThrow(
        'delay: the delayer is not built (/nonexistent/plb-delayer)',
      );
      expect(checkNetFaultsPossible(new Set(['loss'] as const))).toHaveLength(1);
    } finally {
      if (saved === undefined) delete process.env.PLB_DELAYER;
      else process.env.PLB_DELAYER = saved;
    }
  });
});

describe.skipIf(!canRun)('delay, bandwidth and the WAL stream cut on the local driver', () => {
  let stateDir = '';
  let driver: LocalDriver;
  let creds: Credentials;
  let clusterId = '';
  const ep = (id: string) => driver.endpoints().find((e) => e.id === id)!;
  const netKernel = () =>
    readClusterRecord(stateDir, 'plbtest-netk')?.extra?.['netKernel'] as
      | { qdisc?: string; delayers: number[] }
      | undefined;

  beforeAll(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'plb-netk-it-'));
    driver = createLocalDriver(
      clusterSpec({ name: 'plbtest-netk', replicas: 2, basePort: BASE_PORT, stateDir }),
    );
    await driver.down();
    await driver.up();
    creds = await driver.credentials();
    clusterId = readClusterRecord(stateDir, 'plbtest-netk')!.id;
  }, 180_000);

  afterAll(async () => {
    await driver?.down();
    if (clusterId) expect(traces(clusterId)).toEqual(NONE);
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  }, 60_000);

  it('delay: each round trip grows by about twice the delay; a dead delayer is no partition', async () => {
    const c = await connect(ep('r1'), creds);
    try {
      const rtt = async () => {
        const t = performance.now();
        await c.query('select 1');
        return performance.now() - t;
      };
      await driver.faults.delay('r1', { ...ARGS, ms: 100 });
      const pid = netKernel()?.delayers[0];
      expect(pid !== undefined && alive(pid)).toBe(true);
      const times: number[] = [];
      for (let i = 0; i < 10; i++) times.push(await rtt());
      // Each way 100 ms: the query's round trip at least 0.8 x 200 ms.
      for (const t of times) expect(t).toBeGreaterThanOrEqual(0.8 * 2 * 100);
      // The delayer gone (SIGKILL: what it held is lost and retransmitted), the link still carries.
      process.kill(pid!, 'SIGKILL');
      await pollUntil('the delayer to go', async () => !alive(pid!), 5000);
      expect((await c.query('select 2 as two')).rows[0]).toEqual({ two: 2 });
      await driver.faults.heal('r1', ARGS);
      expect(traces(clusterId)).toEqual(NONE);
      expect(netKernel()?.delayers).toEqual([]);
    } finally {
      await c.end();
    }
  }, 60_000);

  it('bandwidth: a large result takes at least its size over the rate; a heal gives lo back', async () => {
    const c = await connect(ep('r1'), creds, { queryTimeoutMs: 30_000 });
    try {
      // Big next to lo's 64 KiB segments, the unit htb counts (one may go ahead of the rate).
      const bytes = 2_000_000;
      const rate = 8_000_000;
      await driver.faults.bandwidth('r1', { ...ARGS, rate });
      expect(traces(clusterId).qdisc).toBe(true);
      expect(netKernel()?.qdisc).toBe(qdiscHandle(clusterId));
      const t = performance.now();
      const res = await c.query(`select repeat('x', ${bytes}) as x`);
      const ms = performance.now() - t;
      expect((res.rows[0] as { x: string }).x).toHaveLength(bytes);
      expect(ms).toBeGreaterThanOrEqual(((0.8 * (bytes * 8)) / rate) * 1000);
      await driver.faults.heal('r1', { ...ARGS, what: 'bandwidth' });
      expect(traces(clusterId)).toEqual(NONE);
      expect(netKernel()?.qdisc).toBeUndefined();
    } finally {
      await c.end();
    }
  }, 60_000);

  it("bandwidth: refused, with the reason, when lo's root qdisc is another's", async () => {
    // Another owner's root (htb with every packet unshaped; a handle plb never takes).
    execFileSync('tc', ['qdisc', 'add', 'dev', 'lo', 'root', 'handle', 'ff:', 'htb', 'default', '0']);
    try {
      await expect(driver.faults.bandwidth('r2', { ...ARGS, rate: 1e6 })).rejects.toThrow(
        /^bandwidth r2: bandwidth: lo's root qdisc is htb ff:, not plb's for this cluster/,
      );
      expect(traces(clusterId)).toEqual(NONE);
    } finally {
      execFileSync('tc', ['qdisc', 'del', 'dev', 'lo', 'root', 'handle', 'ff:']);
    }
  }, 30_000);

  it('partition (link replication): the replica answers, its received WAL stops, and catches up after the heal', async () => {
    const primary = await connect(ep('primary'), creds);
    const r1 = await connect(ep('r1'), creds);
    const r2 = await connect(ep('r2'), creds);
    const received = async (c: typeof r1) =>
      ((await c.query('select pg_last_wal_receive_lsn()::text as l')).rows[0] as { l: string }).l;
    const diff = async (a: string, b: string) =>
      Number(
        (
          (await primary.query('select pg_wal_lsn_diff($1, $2)::bigint as d', [a, b])).rows[0] as {
            d: string;
          }
        ).d,
      );
    let writing = true;
    const writer = (async () => {
      await primary.query('create table if not exists netk_w (x int)');
      while (writing) {
        await primary.query('insert into netk_w select generate_series(1, 200)');
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      await driver.faults['partition-replication']('r1', ARGS);
      // The first flight the primary sent before the replica's next packet may still land.
      await new Promise((r) => setTimeout(r, 1000));
      const r1Before = await received(r1);
      const r2Before = await received(r2);
      await new Promise((r) => setTimeout(r, 3000));
      const current = (
        (await primary.query('select pg_current_wal_lsn()::text as l')).rows[0] as { l: string }
      ).l;
      expect(await received(r1)).toBe(r1Before);
      expect(await diff(current, r1Before)).toBeGreaterThan(0);
      expect(await diff(await received(r2), r2Before)).toBeGreaterThan(0);
      // It keeps serving its clients.
      expect((await r1.query('select count(*) > 0 as some from netk_w')).rows[0]).toEqual({ some: true });
      await driver.faults.heal('r1', ARGS);
      expect(traces(clusterId)).toEqual(NONE);
      await pollUntil('r1 to catch up', async () => (await diff(await received(r1), current)) >= 0, 60_000);
    } finally {
      writing = false;
      await writer.catch(() => undefined);
      await Promise.all([primary, r1, r2].map((c) => c.end()));
    }
  }, 120_000);

  it("a run's restore heals delay, bandwidth and the WAL stream's cut; another cluster's cleanup leaves them", async () => {
    const injector = new Injector({
      driver,
      events: [
        { at: 0, replica: 'r1', action: 'delay', ms: 20, line: 0 },
        { at: 0, replica: 'r1', action: 'bandwidth', rate: 10_000_000, line: 0 },
        { at: 0, replica: 'r2', action: 'partition-replication', line: 0 },
      ],
      clock: realClock(),
      defaultCpus: 0.25,
      onInjected: () => undefined,
    });
    injector.start();
    const inForce = () => readClusterRecord(stateDir, 'plbtest-netk')?.extra?.['netFaults'];
    await pollUntil(
      'the faults',
      async () =>
        JSON.stringify(inForce()) === JSON.stringify(['r1: delay, bandwidth', 'r2: partition-replication']),
      10_000,
    );
    await injector.stop();
    expect(traces(clusterId).delayers).toHaveLength(1);
    // Another cluster's cleanup (whose id gives the same qdisc handle) leaves all of it.
    const other = clusterId.slice(0, 4) + (clusterId.endsWith('0') ? '11111111' : '00000000');
    const before = traces(clusterId);
    await removeNetFaults(other, { netKernel: { delayers: before.delayers } });
    expect(traces(clusterId)).toEqual(before);
    expect(await injector.restore()).toEqual(['heal r1', 'heal r2']);
    expect(traces(clusterId)).toEqual(NONE);
  }, 30_000);
});

describe.skipIf(!canRun)('delay, bandwidth and the WAL stream cut after a bench ends early', () => {
  const name = `plbnetk-${randomBytes(3).toString('hex')}`;
  let work = '';
  let stateDir = '';
  const idOf = () => readClusterRecord(stateDir, name)!.id;

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'plb-netk-bench-'));
    chmodSync(work, 0o755);
    stateDir = join(work, 'state');
    writeFileSync(
      join(work, 'plan.yaml'),
      'name: netk\nduration: 30s\nwarmup: 1s\nreference: 1s\nreplicas: 1\nevents:\n' +
        '  - { at: 2s, replica: r1, action: delay, ms: 20, jitter: 5 }\n' +
        '  - { at: 2.5s, replica: r1, action: bandwidth, rate: 10mbit }\n' +
        '  - { at: 3s, replica: r1, action: partition, link: replication }\n',
    );
  });

  afterAll(async () => {
    const id = existsSync(stateDir) ? readClusterRecord(stateDir, name)?.id : undefined;
    await downCluster(name, stateDir, { explicit: true }).catch(() => undefined);
    if (id) expect(traces(id)).toEqual(NONE);
    if (work) rmSync(work, { recursive: true, force: true });
  }, 60_000);

  /** A bench sent `signal` half a second after its last fault: its stderr, and the traces then. */
  async function benchStopped(signal: NodeJS.Signals, out: string) {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(import.meta.dirname, 'helpers', 'bench-local.ts'),
        name,
        String(BENCH_PORT),
        out,
        join(work, 'plan.yaml'),
        '5',
        'local',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, PLB_STATE_DIR: stateDir } },
    );
    let err = '';
    let during: ReturnType<typeof traces> | undefined;
    let id = '';
    let seen = false;
    child.stderr?.on('data', (b: Buffer) => {
      err += b.toString();
      if (!seen && /t=[\d.]+s partition\S* r1/.test(err)) {
        seen = true;
        setTimeout(() => {
          id = idOf();
          during = traces(id);
          child.kill(signal);
        }, 500);
      }
    });
    const guard = setTimeout(() => child.kill('SIGKILL'), 120_000);
    await new Promise((resolve) => child.once('exit', resolve));
    clearTimeout(guard);
    return { err, during, id };
  }

  it('SIGTERM: the restore heals, nothing is left', async () => {
    const { err, during, id } = await benchStopped('SIGTERM', join(work, 'term'));
    expect(during, err).toMatchObject({ qdisc: true, delayers: [expect.any(Number)] });
    expect(during?.rules, err).toBeGreaterThanOrEqual(5);
    expect(err).toMatch(/restored: heal r1/);
    expect(traces(id)).toEqual(NONE);
  }, 150_000);

  it('SIGKILL: the rules, the qdisc and the delayer stay until the next cluster down, which removes them', async () => {
    const { err, during, id } = await benchStopped('SIGKILL', join(work, 'kill'));
    expect(during, err).toMatchObject({ qdisc: true, delayers: [expect.any(Number)] });
    const left = traces(id);
    expect(left.rules).toBeGreaterThanOrEqual(5);
    expect(left.qdisc).toBe(true);
    expect(left.delayers).toHaveLength(1);
    await downCluster(name, stateDir, { explicit: true });
    expect(traces(id)).toEqual(NONE);
    for (const pid of left.delayers) expect(alive(pid)).toBe(false);
  }, 150_000);
});
