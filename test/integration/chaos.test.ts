/**
 * Chaos test of plb itself (issue 11, item 9): 20 benches of a tiny plan, each killed with SIGKILL
 * at a seeded random moment (during cluster up, the dataset load, a fault, the end). After each,
 * `plb cluster down --name` must leave no process, port, cgroup, data or container of that cluster,
 * another cluster running alongside must be untouched, and at the end `plb report` must render
 * every run directory. Mostly the local driver (cheap to bring up); two runs use the Docker driver
 * (the offline image) when an engine answers, and containers carrying the cluster's label are
 * checked after every run.
 * Bounded for CI: about 2-3 minutes on 2 cores. Also here: SIGTERM and SIGHUP on a real bench
 * (issue 11, item 3), on the same helper.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterDriver } from '../../src/cluster/driver.js';
import { dockerAvailable } from '../../src/cluster/docker/driver.js';
import { detectCgroupFs } from '../../src/cluster/local/cgroup.js';
import { withClusterLock } from '../../src/cluster/lock.js';
import { bringUp, clusterSpec, downCluster, removeOwned } from '../../src/cluster/select.js';
import { clusterDir, readClusterRecord } from '../../src/cluster/state.js';
import { RUN_FILES } from '../../src/metrics/store/run-writer.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { writeReports } from '../../src/report/report.js';
import { Rng } from '../../src/core/rng.js';
import { haveServerBinaries } from '../helpers/fixtures.js';

const RUNS = 20;
const SEED = 1101;
const suffix = randomBytes(3).toString('hex');
const NAME = `plbchaos-${suffix}`;
const OTHER = `plbchaos-other-${suffix}`;
const PORT = 31432;
const OTHER_PORT = 31532;
/** Runs on the Docker driver (when an engine answers): killed during up, and at the end. */
const DOCKER_RUNS = new Set([8, 19]);

/** Where a kill lands: after the first progress line matching `marker`, plus a seeded delay. */
const MOMENTS = [
  { stage: 'up', marker: /initdb primary|^image /m, delayMs: [0, 2500] },
  { stage: 'dataset', marker: /loading dataset/, delayMs: [0, 250] },
  { stage: 'fault', marker: /t=[\d.]+s down r1/, delayMs: [0, 1500] },
  // The plan ends 1.5 s after the rejoin; the ending (stop, restore, summary, report) then took
  // 0.4-0.8 s in clean-clone CI runs: a kill later than ~1.8 s may find the bench already gone.
  { stage: 'end', marker: /t=[\d.]+s rejoin r1/, delayMs: [1000, 1700] },
] as const;

const PLAN = `name: chaos
description: tiny plan for the chaos test
duration: 5s
warmup: 1s
reference: 1s
replicas: 1
events:
  - { at: 2s, replica: r1, action: down }
  - { at: 3.5s, replica: r1, action: rejoin }
`;

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/** Processes working in, or naming, the cluster's folder (postgres backends run in their data dir). */
function processesOf(dir: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      if (cwd === dir || cwd.startsWith(`${dir}/`) || cmd.includes(`${dir}/`)) out.push(`${pid} ${cmd}`);
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

function cgroupsOf(name: string): string[] {
  const fs = detectCgroupFs();
  if (!fs || !existsSync(fs.root)) return [];
  return readdirSync(fs.root).filter((d) => d.startsWith(`plb-${name}-`));
}

/** The postmaster pids of a local cluster (first line of postmaster.pid of each server). */
function postmasters(stateDir: string, name: string): string[] {
  const data = join(clusterDir(stateDir, name), 'data');
  if (!existsSync(data)) return [];
  return readdirSync(data)
    .sort()
    .map((s) => {
      const f = join(data, s, 'postmaster.pid');
      return existsSync(f) ? `${s}:${readFileSync(f, 'utf8').split('\n')[0]}` : `${s}:-`;
    });
}

describe.skipIf(!haveServerBinaries)('chaos: plb killed with SIGKILL at random moments', () => {
  const docker = new Docker();
  let engine = false;
  let work = '';
  let stateDir = '';
  let out = '';
  let plan = '';
  let other: ClusterDriver | undefined;
  let otherPids: string[] = [];

  beforeAll(async () => {
    engine = await dockerAvailable(3000);
    work = mkdtempSync(join(tmpdir(), 'plb-chaos-'));
    chmodSync(work, 0o755); // the postgres OS user must reach the state folder inside
    stateDir = join(work, 'state');
    out = join(work, 'runs');
    plan = join(work, 'chaos.yaml');
    writeFileSync(plan, PLAN);
    const up = await bringUp({
      driver: 'local',
      spec: clusterSpec({ name: OTHER, replicas: 1, basePort: OTHER_PORT, stateDir }),
    });
    other = up.driver;
    otherPids = postmasters(stateDir, OTHER);
  });

  afterAll(async () => {
    if (other) await removeOwned(other).catch(() => undefined);
    await downCluster(NAME, stateDir, { explicit: true }).catch(() => undefined);
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it(`${RUNS} kills; after each, down leaves nothing and the other cluster is untouched; every run reports`, async () => {
    const rng = new Rng(SEED);
    const t0 = Date.now();
    const log: string[] = [];
    let killed = 0;
    for (let i = 0; i < RUNS; i++) {
      const moment = MOMENTS[i % MOMENTS.length]!;
      const delay = rng.int(moment.delayMs[0], moment.delayMs[1]);
      const driver = engine && DOCKER_RUNS.has(i) ? 'docker' : 'local';
      const child: ChildProcess = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          join(import.meta.dirname, 'helpers', 'bench-local.ts'),
          NAME,
          String(PORT),
          out,
          plan,
          String(SEED + i),
          driver,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, PLB_STATE_DIR: stateDir } },
      );
      let stderr = '';
      let timer: NodeJS.Timeout | undefined;
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.stderr?.on('data', (b: Buffer) => {
        stderr += b.toString();
        if (timer === undefined && moment.marker.test(stderr))
          timer = setTimeout(() => child.kill('SIGKILL'), delay);
      });
      // A bench that never reaches its moment is a failure of its own: stop it, then say so.
      const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const code = await exited;
      clearTimeout(guard);
      clearTimeout(timer);
      expect(timer, `run ${i}: never reached "${moment.marker}"\n${stderr}`).toBeDefined();
      const wasKilled = code === null;
      if (wasKilled) killed++;
      const last = stderr.trim().split('\n').at(-1) ?? '';
      log.push(
        `${i} ${driver} ${moment.stage}+${delay}ms: ${wasKilled ? 'killed' : `exited ${code}`} after "${last}"`,
      );

      // `plb cluster down --name` (takes over the dead bench's lock).
      await withClusterLock(stateDir, NAME, () => downCluster(NAME, stateDir, { explicit: true }));
      const dir = clusterDir(stateDir, NAME);
      expect(processesOf(dir), `run ${i}: processes left`).toEqual([]);
      for (const p of [PORT, PORT + 1])
        expect(await portFree(p), `run ${i}: port ${p} still taken`).toBe(true);
      expect(cgroupsOf(NAME), `run ${i}: cgroups left`).toEqual([]);
      expect(readClusterRecord(stateDir, NAME), `run ${i}: record left`).toBeNull();
      expect(existsSync(join(dir, 'data')), `run ${i}: data left`).toBe(false);
      if (engine)
        expect(
          await docker.listContainers({ all: true, filters: { label: [`plb.cluster=${NAME}`] } }),
          `run ${i}: containers left`,
        ).toEqual([]);
      // The cluster alongside: same servers, same processes, all up.
      expect(postmasters(stateDir, OTHER), `run ${i}: the other cluster was touched`).toEqual(otherPids);
      expect((await other!.status()).map((s) => s.up)).toEqual([true, true]);
    }

    // Every run directory renders, killed ones included (rebuilt from their per-second files).
    const dirs = existsSync(out) ? readdirSync(out).filter((d) => !d.endsWith('.html')) : [];
    const report = await writeReports([out], { format: 'table' });
    expect(report.runs.map((r) => r.dir).sort()).toEqual(dirs.map((d) => join(out, d)).sort());
    for (const d of dirs) expect(existsSync(join(out, d, 'report.html')), d).toBe(true);
    const crashed = report.runs.filter((r) => r.summary.rebuilt).length;
    const running = dirs.filter((d) => existsSync(join(out, d, RUN_FILES.running))).length;
    expect(crashed).toBe(running);
    const secs = ((Date.now() - t0) / 1000).toFixed(0);
    console.log(
      `chaos: ${RUNS} runs in ${secs} s, ${killed} killed by SIGKILL; ${dirs.length} run directories ` +
        `(${crashed} rebuilt after a crash), all reported; nothing left behind\n${log.join('\n')}`,
    );
    expect(killed).toBeGreaterThanOrEqual(RUNS - 2);
  }, 400_000);
});

describe.skipIf(!haveServerBinaries)('every stop: SIGTERM and SIGHUP take the graceful path', () => {
  const name = `plbsig-${suffix}`;
  const port = 31452;
  let work = '';
  let stateDir = '';

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'plb-signals-'));
    chmodSync(work, 0o755);
    stateDir = join(work, 'state');
    writeFileSync(join(work, 'plan.yaml'), PLAN.replace('duration: 5s', 'duration: 20s'));
  });

  afterAll(async () => {
    await downCluster(name, stateDir, { explicit: true }).catch(() => undefined);
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** A bench sent `signals` (50 ms apart) half a second after it killed r1: exit code and stderr. */
  async function benchStopped(
    signals: NodeJS.Signals[],
    out: string,
  ): Promise<{ code: number | null; err: string }> {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(import.meta.dirname, 'helpers', 'bench-local.ts'),
        name,
        String(port),
        out,
        join(work, 'plan.yaml'),
        '5',
        'local',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, PLB_STATE_DIR: stateDir } },
    );
    let err = '';
    let sent = false;
    child.stderr?.on('data', (b: Buffer) => {
      err += b.toString();
      if (!sent && /t=[\d.]+s down r1/.test(err)) {
        sent = true;
        signals.forEach((s, i) => setTimeout(() => child.kill(s), 500 + 50 * i));
      }
    });
    const guard = setTimeout(() => child.kill('SIGKILL'), 90_000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    clearTimeout(guard);
    return { code, err };
  }

  it('SIGTERM: faults reverted, partial summary kept, exit 143', async () => {
    const out = join(work, 'term');
    const { code, err } = await benchStopped(['SIGTERM'], out);
    expect(code, err).toBe(143);
    expect(err).toMatch(/SIGTERM: stopping gracefully/);
    expect(err).toMatch(/restored: start r1/);
    const dir = /run directory: (\S+) \(incomplete\)/.exec(err)?.[1] ?? '';
    const s = JSON.parse(readFileSync(join(dir, RUN_FILES.summary), 'utf8')) as RunSummary;
    expect(s.complete).toBe(false);
    // Stopped early, and nothing else: the kill of r1 took (the driver's status showed it down).
    expect(s.errors?.length, s.errors?.join('\n')).toBe(1);
    expect(s.errors?.[0]).toMatch(/^stopped early at/);
    expect(s.phases.map((p) => p.name)).toEqual(['ref', 'down-1']);
    expect(existsSync(join(dir, RUN_FILES.running))).toBe(false);
    // The cluster the bench brought up is gone with it.
    expect(readClusterRecord(stateDir, name)).toBeNull();
  }, 120_000);

  it('SIGHUP twice: exit 129 at once, the run directory still marked incomplete and reportable', async () => {
    const out = join(work, 'hup');
    const { code, err } = await benchStopped(['SIGHUP', 'SIGHUP'], out);
    expect(code, err).toBe(129);
    expect(err).toMatch(/SIGHUP: stopping gracefully/);
    const [id] = readdirSync(out);
    const dir = join(out, id ?? '');
    expect(readFileSync(join(dir, RUN_FILES.incomplete), 'utf8')).toMatch(/second stop signal/);
    const report = await writeReports([dir], { format: 'table' });
    expect(report.runs[0]?.status).toBe('incomplete');
    expect(report.runs[0]?.summary.errors?.join('\n')).toMatch(/second stop signal/);
    // Exited at once: the cluster is still there for `cluster down` (afterAll) to remove.
  }, 120_000);
});
