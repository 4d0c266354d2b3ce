/**
 * Network faults on the local driver, in the kernel (iptables on lo): each rule is seen by a
 * client (a partition hangs a connect, a reset refuses it, a lossy link still answers), and every
 * rule of plb's is gone after a heal, after a run's restore, after SIGTERM, and after a SIGKILLed
 * bench's `cluster down`. Needs root and iptables: skipped without them, a failure in CI.
 * Traffic only to 127.0.0.1; bounded (about a minute).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../src/clock/index.js';
import { createLocalDriver, type LocalDriver } from '../../src/cluster/local/index.js';
import { withClient } from '../../src/cluster/pg-util.js';
import { clusterSpec, downCluster } from '../../src/cluster/select.js';
import type { Credentials } from '../../src/core/endpoint.js';
import { Injector } from '../../src/faults/injector.js';
import { haveServerBinaries } from '../helpers/fixtures.js';

const BASE_PORT = 23532;
const BENCH_PORT = 23552;

function haveIptables(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('iptables', ['-S', 'INPUT'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const canRun = haveServerBinaries && haveIptables();
if (process.env.CI === 'true' && haveServerBinaries && !canRun)
  throw new Error('network faults need root and iptables in CI: apt-get install iptables');

/** Lines of iptables-save that name plb. */
function plbRules(): string[] {
  return execFileSync('iptables-save', { encoding: 'utf8' })
    .split('\n')
    .filter((l) => /plb/i.test(l));
}

/** What a TCP connect to 127.0.0.1:port does within `ms`: connected, refused/reset, or timeout. */
function connectOutcome(port: number, ms = 1500): Promise<'connected' | 'timeout' | string> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port });
    const timer = setTimeout(() => {
      s.destroy();
      resolve('timeout');
    }, ms);
    s.once('connect', () => {
      clearTimeout(timer);
      s.destroy();
      resolve('connected');
    });
    s.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(err.code ?? 'error');
    });
  });
}

const ARGS = { cpus: 0.25 };

describe.skipIf(!canRun)('network faults on the local driver', () => {
  let stateDir = '';
  let driver: LocalDriver;
  let creds: Credentials;
  const r1 = BASE_PORT + 1;
  const r2 = BASE_PORT + 2;

  beforeAll(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'plb-net-it-'));
    driver = createLocalDriver(
      clusterSpec({ name: 'plbtest-net', replicas: 2, basePort: BASE_PORT, stateDir }),
    );
    await driver.down();
    await driver.up();
    creds = await driver.credentials();
  }, 180_000);

  afterAll(async () => {
    await driver?.down();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
    expect(plbRules()).toEqual([]);
  }, 60_000);

  it.each(['both', 'in', 'out'] as const)(
    'partition %s: a connect hangs; the other replica answers',
    async (direction) => {
      await driver.faults.partition('r1', { ...ARGS, direction });
      expect(plbRules().length).toBeGreaterThan(0);
      expect(await connectOutcome(r1)).toBe('timeout');
      expect(await connectOutcome(r2)).toBe('connected');
      await driver.faults.heal('r1', ARGS);
      expect(plbRules()).toEqual([]);
      expect(await connectOutcome(r1)).toBe('connected');
    },
  );

  it('reset: an idle connection ends at once, a new connect is reset', async () => {
    const ep = driver.endpoints().find((e) => e.id === 'r1')!;
    const ended = withClient(ep, creds, async (c) => {
      await c.query('select 1');
      const closed = new Promise<void>((resolve) =>
        c.on('error', () => resolve()).once('end', () => resolve()),
      );
      await driver.faults.reset('r1', ARGS);
      await closed;
      return 'ended';
    }).catch(() => 'ended');
    expect(await ended).toBe('ended');
    expect(['ECONNRESET', 'ECONNREFUSED']).toContain(await connectOutcome(r1));
    await driver.faults.heal('r1', { ...ARGS, what: 'reset' });
    expect(plbRules()).toEqual([]);
    expect(await connectOutcome(r1)).toBe('connected');
  }, 30_000);

  it('loss: the replica still answers; a heal of one kind leaves the others', async () => {
    const ep = driver.endpoints().find((e) => e.id === 'r2')!;
    await driver.faults.loss('r2', { ...ARGS, percent: 20 });
    await driver.faults.partition('r1', ARGS);
    const rows = await withClient(ep, creds, (c) => c.query('select 1 as one'));
    expect(rows.rows[0]).toEqual({ one: 1 });
    // `cluster status` lists what is in force, from the cluster's record.
    const status = JSON.parse(
      execFileSync(process.execPath, ['bin/run.js', 'cluster', 'status', '--name', 'plbtest-net', '--json'], {
        encoding: 'utf8',
        env: { ...process.env, PLB_STATE_DIR: stateDir },
      }),
    ) as { netFaults: string[] };
    expect([...status.netFaults].sort()).toEqual(['r1: partition', 'r2: loss']);
    await driver.faults.heal('r2', { ...ARGS, what: 'loss' });
    expect(await connectOutcome(r1)).toBe('timeout');
    await driver.faults.heal('r1', ARGS);
    expect(plbRules()).toEqual([]);
  }, 30_000);

  it("a run's restore heals what the plan left in force", async () => {
    let injected = 0;
    const injector = new Injector({
      driver,
      events: [
        { at: 0, replica: 'r1', action: 'partition', line: 0 },
        { at: 0, replica: 'r2', action: 'loss', percent: 10, line: 0 },
      ],
      clock: realClock(),
      defaultCpus: 0.25,
      onInjected: () => void (injected += 1),
    });
    injector.start();
    // Both taken (iptables and tc take their time on a busy host): then the run ends.
    for (const t0 = Date.now(); injected < 2 && Date.now() - t0 < 20_000; )
      await new Promise((r) => setTimeout(r, 50));
    expect(injected).toBe(2);
    await injector.stop();
    expect(plbRules().length).toBeGreaterThan(0);
    expect(await injector.restore()).toEqual(['heal r1', 'heal r2']);
    expect(plbRules()).toEqual([]);
  }, 30_000);
});

describe.skipIf(!canRun)('network faults after a bench ends early', () => {
  const name = `plbnet-${randomBytes(3).toString('hex')}`;
  let work = '';
  let stateDir = '';

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'plb-net-bench-'));
    chmodSync(work, 0o755);
    stateDir = join(work, 'state');
    writeFileSync(
      join(work, 'plan.yaml'),
      'name: net\nduration: 30s\nwarmup: 1s\nreference: 1s\nreplicas: 1\nevents:\n' +
        '  - { at: 2s, replica: r1, action: partition }\n',
    );
  });

  afterAll(async () => {
    await downCluster(name, stateDir, { explicit: true }).catch(() => undefined);
    if (work) rmSync(work, { recursive: true, force: true });
    expect(plbRules()).toEqual([]);
  }, 60_000);

  /** A bench sent `signal` half a second after it partitioned r1: its stderr, and the rules then. */
  async function benchStopped(signal: NodeJS.Signals, out: string): Promise<{ err: string; during: number }> {
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
    let during = -1;
    child.stderr?.on('data', (b: Buffer) => {
      err += b.toString();
      if (during < 0 && /t=[\d.]+s partition r1/.test(err)) {
        during = 0;
        setTimeout(() => {
          during = plbRules().length;
          child.kill(signal);
        }, 500);
      }
    });
    const guard = setTimeout(() => child.kill('SIGKILL'), 120_000);
    await new Promise((resolve) => child.once('exit', resolve));
    clearTimeout(guard);
    return { err, during };
  }

  it('SIGTERM: the restore heals, nothing is left', async () => {
    const { err, during } = await benchStopped('SIGTERM', join(work, 'term'));
    expect(during, err).toBeGreaterThan(0);
    expect(err).toMatch(/restored: heal r1/);
    expect(plbRules()).toEqual([]);
  }, 150_000);

  it('SIGKILL: the rules stay until the next cluster down, which removes them', async () => {
    const { err, during } = await benchStopped('SIGKILL', join(work, 'kill'));
    expect(during, err).toBeGreaterThan(0);
    expect(plbRules().length).toBeGreaterThan(0);
    await downCluster(name, stateDir, { explicit: true });
    expect(plbRules()).toEqual([]);
  }, 150_000);
});
