/**
 * --driver external against real postgres: a local-driver cluster stands in for the user's, and a
 * cluster file drives it with pg_ctl hooks (plb knows its data folders). One short plan (r1 down,
 * then rejoin) runs through `executeBench`; the fault must come from the hook, be detected, and
 * be recorded in events.jsonl with the hook's exit code and output; no run file may hold the
 * password; and the external run leaves the cluster as it found it (up, nothing removed). Skips
 * when the server binaries are absent, except with CI=true, where that fails.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import type { ClusterDriver } from '../../src/cluster/driver.js';
import { findBinDir, serverUser } from '../../src/cluster/local/binaries.js';
import { bringUp, clusterSpec, removeOwned } from '../../src/cluster/select.js';
import { clusterDir, dataDir, loadCredentials, passwordFile } from '../../src/cluster/state.js';
import { configSchema, runEventSchema } from '../../src/run-format/index.js';
import { benchFlagValues, haveServerBinaries } from '../helpers/fixtures.js';

const ci = process.env.CI === 'true';
const NAME = 'plbtest-ext';
const BASE_PORT = 32440;

describe.skipIf(!haveServerBinaries && !ci)(
  '--driver external on a local cluster driven by pg_ctl hooks',
  () => {
    let stateDir = '';
    let tmp = '';
    let driver: ClusterDriver | undefined;
    let savedStateDir: string | undefined;
    let password = '';
    const lines: string[] = [];

    beforeAll(async () => {
      if (!haveServerBinaries)
        throw new Error('CI=true and no postgres server binaries: this test must run in CI');
      savedStateDir = process.env.PLB_STATE_DIR;
      stateDir = mkdtempSync(join(tmpdir(), 'plb-ext-it-'));
      tmp = mkdtempSync(join(tmpdir(), 'plb-ext-files-'));
      process.env.PLB_STATE_DIR = stateDir;
      const spec = clusterSpec({
        name: NAME,
        replicas: 2,
        basePort: BASE_PORT,
        stateDir,
        maxConnections: 50,
      });
      driver = (await bringUp({ driver: 'local', spec })).driver;
      password = (await loadCredentials(stateDir, NAME)).password;

      // The hooks a user would write for this cluster: pg_ctl on each replica's data folder (as the
      // postgres user when we are root, as the local driver runs it).
      const pgCtl = join(findBinDir(), 'pg_ctl');
      const as = serverUser() ? ['runuser', '-u', 'postgres', '--'] : [];
      const dir = dataDir(stateDir, NAME, 'r0').replace(/r0$/, '{replica}');
      const log = join(clusterDir(stateDir, NAME), 'data', '{replica}.log');
      // r2 only: its postmaster's CPU seconds and its reaped children's (clock ticks of 1/100 s).
      const pidFile = join(dataDir(stateDir, NAME, 'r2'), 'postmaster.pid');
      const cpuHook = ['sh', '-c', `awk '{print ($14+$15+$16+$17)/100}' /proc/$(head -1 ${pidFile})/stat`];
      const yaml = [
        'name: plbtest-ext-file',
        'user: plb',
        'dbname: plb',
        `password: { file: ${JSON.stringify(passwordFile(stateDir, NAME))} }`,
        'prepare: true',
        `primary: { host: 127.0.0.1, port: ${BASE_PORT} }`,
        'replicas:',
        `  r1: { host: 127.0.0.1, port: ${BASE_PORT + 1} }`,
        `  r2: { host: 127.0.0.1, port: ${BASE_PORT + 2}, hooks: { cpu: ${JSON.stringify(cpuHook)} } }`,
        'hookTimeout: 60s',
        'hooks:',
        `  down: ${JSON.stringify([...as, pgCtl, 'stop', '-m', 'immediate', '-D', dir])}`,
        `  rejoin: ${JSON.stringify([...as, pgCtl, 'start', '-w', '-t', '60', '-D', dir, '-l', log])}`,
        '',
      ].join('\n');
      writeFileSync(join(tmp, 'cluster.yaml'), yaml);
      writeFileSync(
        join(tmp, 'plan.yaml'),
        [
          'name: ext-one-down',
          'duration: 16',
          'warmup: 2',
          'reference: 3',
          'replicas: 2',
          'events:',
          '  - { at: 6, replica: r1, action: down }',
          '  - { at: 10, replica: r1, action: rejoin }',
          '',
        ].join('\n'),
      );
    });

    afterAll(async () => {
      if (driver) await removeOwned(driver);
      if (savedStateDir === undefined) delete process.env.PLB_STATE_DIR;
      else process.env.PLB_STATE_DIR = savedStateDir;
      for (const d of [stateDir, tmp]) if (d) rmSync(d, { recursive: true, force: true });
    });

    it('injects the fault by the hook, detects it, records the hook, and never writes the password', async () => {
      const out = join(tmp, 'runs');
      const code = await executeBench(
        benchFlagValues(out, NAME, BASE_PORT, {
          driver: 'external',
          'cluster-file': join(tmp, 'cluster.yaml'),
          plan: join(tmp, 'plan.yaml'),
          seed: 7,
          clients: 4,
        }),
        { log: (l) => lines.push(l), warn: (l) => lines.push(l) },
      );
      expect(code, lines.join('\n')).toBe(0);
      expect(lines.join('\n')).toMatch(/external cluster plbtest-ext-file .*CPU from its cpu hooks/);
      expect(lines.some((l) => /^hook down r1: exit 0 \(\d+ ms\)$/.test(l))).toBe(true);

      const [runDir] = readdirSync(out).map((d) => join(out, d));
      expect(runDir).toBeDefined();
      const events = readFileSync(join(runDir!, 'events.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => runEventSchema.parse(JSON.parse(l)) as Record<string, unknown>);
      const hooks = events.filter((e) => e['type'] === 'hook');
      expect(
        hooks.map((e) => `${String(e['hook'])} ${String(e['replica'])} ${String(e['exitCode'])}`),
      ).toEqual(['down r1 0', 'rejoin r1 0']);
      // pg_ctl's own words, as the hook printed them.
      expect(String(hooks[0]?.['stdout'])).toMatch(/server stopped|waiting for server to shut down/);
      expect(String(hooks[1]?.['stdout'])).toMatch(/server started/);
      const faults = events.filter((e) => e['type'] === 'fault');
      expect(
        faults.map((e) => `${String(e['action'])} ${String(e['replica'])} ${String(e['error'] ?? 'ok')}`),
      ).toEqual(['down r1 ok', 'rejoin r1 ok']);
      const detected = events.filter((e) => e['type'] === 'detect' && e['replica'] === 'r1');
      expect(detected.map((e) => e['state'])).toEqual(['down', 'up']);

      const config = configSchema.parse(JSON.parse(readFileSync(join(runDir!, 'config.json'), 'utf8')));
      expect(config.driver).toBe('external');
      expect(config.external?.file).toBe(join(tmp, 'cluster.yaml'));
      expect(config.external?.servers['r1']).toBe(`postgresql://plb@127.0.0.1:${BASE_PORT + 1}/plb`);
      expect(config.external?.hooks['r1']?.['down']).toContain('immediate');
      expect(config.external?.cpuMeasured).toBe(true);
      // CPU: measured where a cpu hook says (r2), not measured (empty) where none does (r1).
      const [header, ...rows] = readFileSync(join(runDir!, 'timeline.csv'), 'utf8').trim().split('\n');
      const col = (name: string): string[] => {
        const i = header!.split(',').indexOf(name);
        return rows.map((r) => r.split(',')[i] ?? '');
      };
      expect(col('r1_cpu').every((v) => v === '')).toBe(true);
      expect(col('r2_cpu').some((v) => v !== '' && Number(v) >= 0)).toBe(true);
      const summary = JSON.parse(readFileSync(join(runDir!, 'summary.json'), 'utf8')) as {
        complete: boolean;
      };
      expect(summary.complete).toBe(true);

      // No file of the run, nor anything printed, holds the password.
      expect(password.length).toBeGreaterThan(8);
      for (const f of readdirSync(runDir!, { recursive: true, withFileTypes: true }))
        if (f.isFile()) expect(readFileSync(join(f.parentPath, f.name), 'utf8')).not.toContain(password);
      expect(lines.join('\n')).not.toContain(password);

      // The cluster is the user's: still there, every replica up again.
      expect(existsSync(dataDir(stateDir, NAME, 'r1'))).toBe(true);
      const status = await driver!.status();
      expect(status.map((s) => `${s.id}:${s.up}`)).toEqual(['primary:true', 'r1:true', 'r2:true']);
    });

    it('a plan needing a hook the file lacks is refused before anything starts', async () => {
      writeFileSync(
        join(tmp, 'pause.yaml'),
        'name: p\nduration: 10\nwarmup: 2\nreference: 3\nreplicas: 2\nevents:\n  - { at: 5, replica: r2, action: pause }\n',
      );
      const out: string[] = [];
      const code = await executeBench(
        benchFlagValues(join(tmp, 'runs-refused'), NAME, BASE_PORT, {
          driver: 'external',
          'cluster-file': join(tmp, 'cluster.yaml'),
          plan: join(tmp, 'pause.yaml'),
        }),
        { log: (l) => out.push(l), warn: (l) => out.push(l) },
      );
      expect(code).toBe(1);
      expect(out.join('\n')).toMatch(/hooks\.pause: no hook for pause of r2, which plan p \(line 7\) needs/);
      expect(existsSync(join(tmp, 'runs-refused'))).toBe(false);
    });

    it('a failed hook is a failed fault: recorded with its exit code, the phase invalid, no crash', async () => {
      const file = readFileSync(join(tmp, 'cluster.yaml'), 'utf8').replace(
        /^ {2}r2: .*$/m,
        `  r2: { host: 127.0.0.1, port: ${BASE_PORT + 2}, hooks: { down: [sh, -c, 'echo cannot reach r2 >&2; exit 4'] } }`,
      );
      writeFileSync(join(tmp, 'failing.yaml'), file);
      writeFileSync(
        join(tmp, 'fail-plan.yaml'),
        'name: f\nduration: 10\nwarmup: 2\nreference: 3\nreplicas: 2\nevents:\n  - { at: 6, replica: r2, action: down }\n',
      );
      const out = join(tmp, 'runs-failing');
      const printed: string[] = [];
      const code = await executeBench(
        benchFlagValues(out, NAME, BASE_PORT, {
          driver: 'external',
          'cluster-file': join(tmp, 'failing.yaml'),
          plan: join(tmp, 'fail-plan.yaml'),
          seed: 7,
        }),
        { log: (l) => printed.push(l), warn: (l) => printed.push(l) },
      );
      expect(code, printed.join('\n')).toBe(0);
      const [runDir] = readdirSync(out).map((d) => join(out, d));
      const events = readFileSync(join(runDir!, 'events.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const hook = events.find((e) => e['type'] === 'hook');
      expect(hook).toMatchObject({ hook: 'down', replica: 'r2', exitCode: 4, stderr: 'cannot reach r2\n' });
      expect(events.find((e) => e['type'] === 'fault')?.['error']).toBe(
        'down hook of r2: exit code 4: cannot reach r2',
      );
      const summary = JSON.parse(readFileSync(join(runDir!, 'summary.json'), 'utf8')) as {
        complete: boolean;
        phases: { name: string; invalid?: string }[];
      };
      expect(summary.complete).toBe(false);
      expect(summary.phases.find((p) => p.name === 'down-1')?.invalid).toBeDefined();
    });
  },
);
