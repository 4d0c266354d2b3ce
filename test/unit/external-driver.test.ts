/**
 * --driver external without a server: the cluster file (fields, lines, password sources), the
 * redaction of everything recorded, the plan's hooks, and running hooks (exit code, timeout,
 * output). test/integration/external-driver.test.ts runs it against real postgres.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  checkPlanHooks,
  externalConfig,
  parseClusterFile,
  redact,
  redactedDsn,
} from '../../src/cluster/external/file.js';
import { hookFailure, OUTPUT_KEEP_BYTES, runHook } from '../../src/cluster/external/hooks.js';
import { ExternalDriver, type HookRecord } from '../../src/cluster/external/index.js';
import { parseDriverChoice, upCluster, clusterSpec } from '../../src/cluster/select.js';
import { isPlbError } from '../../src/core/errors.js';
import { parsePlan } from '../../src/faults/plan.js';
import { externalConfigSchema } from '../../src/run-format/cluster-file.js';
import { executeBench } from '../../src/bench/execute.js';
import { type BenchFlagValues } from '../../src/bench/options/flags.js';
import { benchFlagValues } from '../helpers/fixtures.js';
import { createRunWriter } from '../../src/metrics/store/run-writer.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { aggregateRuns } from '../../src/report/aggregate.js';
import { renderReport } from '../../src/report/tables/render.js';

const SECRET = 's3cr3t-Pa55';
const ENV = { PLB_TEST_PW: SECRET };

const BASE = `user: plb
dbname: bench
password: { env: PLB_TEST_PW }
primary: { host: db0.example, port: 5432 }
replicas:
  r1: { host: db1.example }
  r2:
    host: db2.example
    port: 6432
    hooks:
      down: [ssh, '{host}', kill-it, '{replica}']
hooks:
  down: [docker, kill, 'pg-{replica}']
  rejoin: { run: [docker, start, 'pg-{index}'], timeout: 5s }
  throttle: [docker, update, '--cpus={cpus}', 'pg-{replica}']
`;

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return isPlbError(err) ? err.message : `not a PlbError: ${String(err)}`;
  }
  return 'no error';
}

const tmp = mkdtempSync(join(tmpdir(), 'plb-ext-unit-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('cluster file', () => {
  it('reads servers, hooks with their placeholders filled in, and defaults', () => {
    const c = parseClusterFile(BASE, '/etc/plb/prod-east.yaml', ENV);
    expect(c.name).toBe('prod-east');
    expect(c.servers.map((s) => `${s.id}=${s.host}:${s.port}`)).toEqual([
      'primary=db0.example:5432',
      'r1=db1.example:5432',
      'r2=db2.example:6432',
    ]);
    expect(c.password).toBe(SECRET);
    expect(c.prepare).toBe(false);
    expect(c.cpus).toBe(1);
    expect(c.hooks.get('r1')?.get('down')).toEqual({ argv: ['docker', 'kill', 'pg-r1'], timeoutMs: 60_000 });
    // A replica's own hook wins over the shared one.
    expect(c.hooks.get('r2')?.get('down')?.argv).toEqual(['ssh', 'db2.example', 'kill-it', 'r2']);
    expect(c.hooks.get('r2')?.get('rejoin')).toEqual({ argv: ['docker', 'start', 'pg-2'], timeoutMs: 5000 });
    // {cpus} is the throttle's own, filled in when it runs.
    expect(c.hooks.get('r1')?.get('throttle')?.argv[2]).toBe('--cpus={cpus}');
  });

  it('names the file, line and field of a bad value', () => {
    expect(errorOf(() => parseClusterFile(BASE.replace('port: 6432', 'port: high'), 'c.yaml', ENV))).toBe(
      'c.yaml:9: replicas.r2.port must be a number (got "high")',
    );
    expect(errorOf(() => parseClusterFile(`${BASE}color: red\n`, 'c.yaml', ENV))).toMatch(
      /^c\.yaml:\d+: has unknown field "color"$/,
    );
    expect(
      errorOf(() => parseClusterFile(BASE.replace('  down: [docker', '  dwn: [docker'), 'c.yaml', ENV)),
    ).toBe('c.yaml:13: hooks has unknown field "dwn"');
    expect(errorOf(() => parseClusterFile(BASE.replace('user: plb\n', ''), 'c.yaml', ENV))).toBe(
      'c.yaml:1: user is missing',
    );
    expect(errorOf(() => parseClusterFile(BASE.replace('  r2:', '  r3:'), 'c.yaml', ENV))).toBe(
      'c.yaml:7: replicas.r3 must be r2 (replicas are r1..rK in order)',
    );
    expect(errorOf(() => parseClusterFile('user: [', 'c.yaml', ENV))).toMatch(/^c\.yaml:1: yaml: /);
    expect(errorOf(() => parseClusterFile(BASE.replace('timeout: 5s', 'timeout: soon'), 'c.yaml', ENV))).toBe(
      'c.yaml:14: hooks.rejoin timeout must be a duration like 30s',
    );
  });

  it('reads the password from an environment variable or a file, never from the file itself', () => {
    expect(errorOf(() => parseClusterFile(BASE, 'c.yaml', {}))).toBe(
      'c.yaml:3: password.env names PLB_TEST_PW, which is not set',
    );
    writeFileSync(join(tmp, 'pw'), `${SECRET}\n`);
    const fromFile = parseClusterFile(
      BASE.replace('{ env: PLB_TEST_PW }', '{ file: pw }'),
      join(tmp, 'c.yaml'),
      {},
    );
    expect(fromFile.password).toBe(SECRET);
    const missing = errorOf(() =>
      parseClusterFile(BASE.replace('{ env: PLB_TEST_PW }', '{ file: nope }'), join(tmp, 'c.yaml'), {}),
    );
    expect(missing).toMatch(/:3: password\.file cannot read .*nope \(ENOENT\)$/);
    expect(
      errorOf(() => parseClusterFile(BASE.replace('{ env: PLB_TEST_PW }', SECRET), 'c.yaml', ENV)),
    ).toMatch(/^c\.yaml:3: password /);
    // Even refused, the literal is not echoed back.
    expect(
      errorOf(() => parseClusterFile(BASE.replace('{ env: PLB_TEST_PW }', SECRET), 'c.yaml', ENV)),
    ).not.toContain(SECRET);
  });
});

describe('redaction', () => {
  const c = parseClusterFile(BASE, 'c.yaml', ENV);

  it('DSNs carry user, host, port and database, no password', () => {
    expect(redactedDsn(c, c.servers[2]!)).toBe('postgresql://plb@db2.example:6432/bench');
    expect(redactedDsn(c, { id: 'x', kind: 'replica', host: '::1', port: 5 })).toBe(
      'postgresql://plb@[::1]:5/bench',
    );
  });

  it('cuts the password out of any text', () => {
    expect(redact(c, `password=${SECRET} and ${SECRET}`)).toBe('password=*** and ***');
    expect(redact({ password: '' }, 'nothing to cut')).toBe('nothing to cut');
  });

  it('config.json gets servers, hooks and the file, never the password', () => {
    const withSecretArg = parseClusterFile(
      BASE.replace("[docker, kill, 'pg-{replica}']", `[docker, kill, '${SECRET}']`),
      'c.yaml',
      ENV,
    );
    const cfg = externalConfig(withSecretArg);
    expect(externalConfigSchema.parse(cfg)).toEqual(cfg);
    expect(cfg.servers['r1']).toBe('postgresql://plb@db1.example:5432/bench');
    expect(cfg.hooks['r1']?.['down']).toEqual(['docker', 'kill', '***']);
    expect(cfg.cpuMeasured).toBe(false);
    expect(JSON.stringify(cfg)).not.toContain(SECRET);
  });
});

describe('the plan and the hooks', () => {
  const plan = (events: string): ReturnType<typeof parsePlan> =>
    parsePlan(`name: p\nduration: 60\nwarmup: 5\nreference: 10\nreplicas: 2\nevents:\n${events}`, 'p.yaml');

  it('accepts a plan whose every action (and its undo) has a hook', () => {
    const c = parseClusterFile(BASE, 'c.yaml', ENV);
    expect(() =>
      checkPlanHooks(
        c,
        plan('  - { at: 20, replica: r2, action: down }\n  - { at: 30, replica: r2, action: rejoin }\n'),
      ),
    ).not.toThrow();
  });

  it('names the action, the replica and the plan line of a missing hook', () => {
    const c = parseClusterFile(BASE, 'c.yaml', ENV);
    expect(errorOf(() => checkPlanHooks(c, plan('  - { at: 20, replica: r1, action: pause }\n')))).toBe(
      'c.yaml: hooks.pause: no hook for pause of r1, which plan p (line 7) needs',
    );
    const noRejoin = parseClusterFile(BASE.replace(/ {2}rejoin:.*\n/, ''), 'c.yaml', ENV);
    expect(errorOf(() => checkPlanHooks(noRejoin, plan('  - { at: 20, replica: r1, action: down }\n')))).toBe(
      "c.yaml: hooks.rejoin: no hook for rejoin of r1, which plan p (line 7) needs (it undoes the plan's down when a run ends early)",
    );
  });

  it('refuses a plan for more replicas than the file has', () => {
    const c = parseClusterFile(BASE, 'c.yaml', ENV);
    const big = parsePlan('name: p\nduration: 60\nreplicas: 3\nevents: []\n', 'p.yaml');
    expect(errorOf(() => checkPlanHooks(c, big))).toBe(
      'c.yaml: replicas: plan p needs 3 replicas, the file has 2',
    );
  });
});

describe('runHook', () => {
  it('keeps the exit code, duration and output', async () => {
    const r = await runHook(['sh', '-c', 'echo out; echo err >&2; exit 3'], 5000);
    expect(r).toMatchObject({ exitCode: 3, timedOut: false, stdout: 'out\n', stderr: 'err\n' });
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
    expect(hookFailure(r)).toBe('exit code 3: err');
    expect(hookFailure(await runHook(['true'], 5000))).toBeUndefined();
  });

  it('runs no shell: metacharacters are plain arguments', async () => {
    const r = await runHook(['echo', '$HOME;', '`id`'], 5000);
    expect(r.stdout).toBe('$HOME; `id`\n');
  });

  it('a command that does not exist is a failure, not a crash', async () => {
    const r = await runHook(['/nonexistent/plb-hook'], 5000);
    expect(r.exitCode).toBeNull();
    expect(hookFailure(r)).toBe('could not start /nonexistent/plb-hook (ENOENT)');
  });

  it('kills a hook past its timeout', async () => {
    const r = await runHook(['sleep', '30'], 200);
    expect(r.timedOut).toBe(true);
    expect(hookFailure(r)).toMatch(/^timed out after \d+ ms$/);
  });

  it('keeps the start and the end of a long output', async () => {
    const r = await runHook(['sh', '-c', 'echo FIRST; seq 1 20000; echo LAST'], 5000);
    expect(r.stdout.startsWith('FIRST\n')).toBe(true);
    expect(r.stdout.trimEnd().endsWith('LAST')).toBe(true);
    expect(r.stdout).toMatch(/\[\.\.\. \d+ characters cut \.\.\.\]/);
    expect(r.stdout.length).toBeLessThan(2 * OUTPUT_KEEP_BYTES + 100);
  });
});

describe('ExternalDriver', () => {
  function driverWith(hooks: string): { driver: ExternalDriver; records: HookRecord[] } {
    const c = parseClusterFile(
      `user: plb\ndbname: plb\npassword: { env: PLB_TEST_PW }\nprimary: { host: 127.0.0.1, port: 1 }\nreplicas:\n  r1: { host: 127.0.0.1, port: 2 }\nhooks:\n${hooks}`,
      'c.yaml',
      ENV,
    );
    const driver = new ExternalDriver(c);
    const records: HookRecord[] = [];
    driver.onHook = (r) => records.push(r);
    return { driver, records };
  }

  it('a failed hook is a failed fault: one line, its record has exit code and output, no password', async () => {
    const { driver, records } = driverWith(
      `  down: [sh, -c, 'echo "{replica} $PLB_ACTION ${SECRET}"; echo "no ${SECRET}" >&2; exit 7']\n`,
    );
    let message = '';
    try {
      await driver.kill('r1');
    } catch (err) {
      message = isPlbError(err, 'HOOK_FAILED') ? err.message : String(err);
    }
    expect(message).toBe('down hook of r1: exit code 7: no ***');
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ replica: 'r1', hook: 'down', exitCode: 7, stdout: 'r1 down ***\n' });
    expect(JSON.stringify(records)).not.toContain(SECRET);
  });

  it('substitutes the throttle quota; a paused replica is paused as far as its hook says', async () => {
    const { driver, records } = driverWith(
      "  throttle: [echo, '{replica}={cpus}']\n  pause: ['true']\n  unpause: ['true']\n",
    );
    await driver.setCpus('r1', 0.5);
    expect(records[0]?.stdout).toBe('r1=0.5\n');
    await driver.pause('r1');
    expect((await driver.status()).find((s) => s.id === 'r1')?.paused).toBe(true);
    await driver.unpause('r1');
    expect((await driver.status()).find((s) => s.id === 'r1')?.paused).toBe(false);
  });

  it('cpu: cumulative seconds from the cpu hook; none (not measured) without one or when it fails', async () => {
    expect(await driverWith("  cpu: [echo, '12.5']\n").driver.cpuSeconds()).toEqual({ r1: 12.5 });
    expect(await driverWith("  down: ['true']\n").driver.cpuSeconds()).toEqual({});
    const bad = driverWith("  cpu: [echo, 'lots']\n");
    expect(await bad.driver.cpuSeconds()).toEqual({});
    await bad.driver.cpuSeconds();
    // Said once, not every second.
    expect(bad.records.map((r) => r.error)).toEqual([
      'printed "lots", not CPU seconds (reported once; CPU of r1 not measured when it fails)',
    ]);
  });

  it('never brings a cluster up or down', async () => {
    const { driver } = driverWith("  down: ['true']\n");
    await expect(driver.up()).rejects.toThrow(/never creates or removes anything on an external cluster/);
    await expect(driver.down()).rejects.toThrow(/never creates or removes anything on an external cluster/);
  });
});

describe('driver choice', () => {
  it('external is a bench driver; cluster up refuses it with one line', async () => {
    expect(parseDriverChoice('external')).toBe('external');
    await expect(
      upCluster({ driver: 'external', spec: clusterSpec({ stateDir: tmp }), log: () => undefined }),
    ).rejects.toThrow(/^driver: plb never creates or removes anything on an external cluster/);
  });
});

describe('bench flags', () => {
  async function bench(over: Partial<BenchFlagValues>): Promise<{ code: number; text: string }> {
    const lines: string[] = [];
    const code = await executeBench(benchFlagValues(join(tmp, 'runs'), 'plbtest-ext-unit', 32459, over), {
      log: (l) => lines.push(l),
      warn: (l) => lines.push(l),
    });
    return { code, text: lines.join('\n') };
  }

  it('--driver external needs --cluster-file, and --cluster-file needs --driver external', async () => {
    expect(await bench({ driver: 'external' })).toEqual({
      code: 1,
      text: 'Error: --cluster-file: required with --driver external',
    });
    expect(await bench({ 'cluster-file': 'c.yaml' })).toEqual({
      code: 1,
      text: 'Error: --cluster-file: only with --driver external',
    });
  });

  it('a bad cluster file is one line naming file, line and field, before anything starts', async () => {
    const file = join(tmp, 'bad.yaml');
    writeFileSync(file, BASE.replace('dbname: bench', 'dbname: 5'));
    const r = await bench({ driver: 'external', 'cluster-file': file });
    expect(r).toEqual({
      code: 1,
      text: `Error: ${file}:2: dbname must be a string (got 5) (hint: schemas/cluster-file.schema.json describes every field)`,
    });
    expect(existsSync(join(tmp, 'runs'))).toBe(false);
  });
});

describe('examples/external', () => {
  it.each(['k8s', 'systemd', 'ssh', 'local-pgctl'])('%s.yaml is a valid cluster file', (name) => {
    const path = join('examples', 'external', `${name}.yaml`);
    // The password source as a test can provide it (systemd.yaml reads /etc/plb/password).
    const text = readFileSync(path, 'utf8').replace(/^password: .*$/m, 'password: { env: PLB_TEST_PW }');
    const c = parseClusterFile(text, path, ENV);
    expect(c.replicaIds.length).toBeGreaterThan(0);
    for (const id of c.replicaIds) expect(c.hooks.get(id)?.has('down')).toBe(true);
  });
});

describe('report of a run without CPU figures', () => {
  function run(id: string, cpu: boolean): RunSummary {
    const w = createRunWriter({
      outDir: tmp,
      runId: id,
      strategy: 'plb',
      plan: 'p',
      seed: 1,
      clients: 2,
      mix: { premium: 25, freemium: 75 },
      replicas: ['r1'],
      refWindowS: 5,
      warmupS: 0,
    });
    w.writeConfig({});
    for (let t = 0; t < 10_000; t += 100) {
      w.recorder.queryDone('premium', 'r1', t, 1);
      if (cpu) w.recorder.cpu(t, { r1: 0.5 });
      if ((t + 100) % 1000 === 0) w.tick(t + 100);
    }
    return w.finish(10_000, true);
  }

  it('says CPU was not measured, rather than showing idle replicas', () => {
    expect(renderReport(aggregateRuns([run('no-cpu', false)]))).toContain('replica CPU not measured');
    expect(renderReport(aggregateRuns([run('with-cpu', true)]))).not.toContain('not measured');
  });
});
