// The run-format schemas: what every writer produces parses, readers refuse bad files with one line
// naming the file and the field, and the published JSON Schema files are the generated ones.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { collectEnvironment, gitCommit } from '../../src/bench/environment.js';
import { DEFAULT_HEALTH } from '../../src/cluster/health.js';
import { clusterSpec } from '../../src/cluster/select.js';
import { newClusterId, readClusterRecord, recordFile, writeClusterRecord } from '../../src/cluster/state.js';
import { isPlbError } from '../../src/core/errors.js';
import { loadPlan } from '../../src/faults/plan.js';
import { loadRun } from '../../src/metrics/store/load-run.js';
import { createRunWriter } from '../../src/metrics/store/run-writer.js';
import { aggregateRuns } from '../../src/report/aggregate.js';
import { renderRunHtml } from '../../src/report/html.js';
import { renderReport } from '../../src/report/tables/render.js';
import { loadBaseline } from '../../src/report/gate/tolerance.js';
import { DEFAULT_BORROWING, resolveBorrowing } from '../../src/router/index.js';
import { DEFAULT_WORKLOAD } from '../../src/workload/spec.js';
import { clusterRecordSchema } from '../../src/run-format/cluster-record.js';
import { CONFIG_SCHEMA_VERSION, configSchema, environmentSchema } from '../../src/run-format/config.js';
import { runEventSchema } from '../../src/run-format/events.js';
import {
  jsonSchemaFile,
  jsonSchemaText,
  PUBLISHED_SCHEMAS,
  type PublishedSchemaName,
} from '../../src/run-format/json-schema.js';
import { faultPlanSchema, planFileSchema } from '../../src/run-format/plan.js';
import { reportJsonSchema } from '../../src/run-format/report.js';
import { summarySchema } from '../../src/run-format/summary.js';

const ROOT = join(import.meta.dirname, '../..');
const FIXTURES = join(ROOT, 'test/fixtures/runs/demo-cascade');
const tmp = mkdtempSync(join(tmpdir(), 'plb-run-format-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const readJson = (file: string): unknown => JSON.parse(readFileSync(file, 'utf8'));
const jsonLines = (file: string): unknown[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as unknown);

/** Expects a PlbError whose message matches, on one line. */
function expectRefused(fn: () => unknown, code: string, message: RegExp): void {
  try {
    fn();
  } catch (err) {
    expect(isPlbError(err)).toBe(true);
    if (!isPlbError(err)) return;
    expect(err.code).toBe(code);
    expect(err.message).toMatch(message);
    expect(err.message).not.toContain('\n');
    return;
  }
  throw new Error('expected an error');
}

const planPath = join(ROOT, 'plans/demo-cascade.yaml');

/** A run written the way runBench writes one: config, every kind of event, a summary. */
async function writeRun(outDir: string, runId: string, finish = true): Promise<string> {
  const plan = loadPlan(planPath);
  const replicas = ['r1', 'r2', 'r3', 'r4', 'r5'];
  const w = createRunWriter({
    outDir,
    runId,
    strategy: 'plb',
    plan: plan.name,
    seed: 7,
    clients: 4,
    mix: { premium: 25, freemium: 75 },
    replicas,
    refWindowS: 2,
    warmupS: 1,
    clock: () => new Date(Date.UTC(2026, 10, 30, 12, 0, 0)),
  });
  w.writeConfig({
    plbVersion: '0.1.0',
    environment: await collectEnvironment(),
    driver: 'local',
    borrowing: resolveBorrowing(DEFAULT_BORROWING),
    repeat: 1,
    cluster: clusterSpec({ name: 'plb', stateDir: tmp }),
    strategy: 'plb',
    seed: 7,
    plan: { ...plan, path: planPath },
    mix: DEFAULT_WORKLOAD.mix,
    clients: 4,
    workload: DEFAULT_WORKLOAD,
    health: DEFAULT_HEALTH,
    oracle: false,
    reference: { premium: 2, mixed: 1, freemium: 2 },
    partition: { premium: 3, freemium: 2 },
    slowStartMs: 10_000,
    replicaCpus: 0.25,
    replicas,
  });
  const rec = w.recorder;
  w.event({ type: 'run', tMs: 0, state: 'started' });
  rec.sessionOpened('premium', 'r1', 0, 2);
  for (let t = 0; t < 6000; t += 50) {
    rec.queryDone('premium', 'r1', t, 1);
    rec.queryDone('freemium', 'r4', t, 2);
    if (t === 3500) {
      w.event({ type: 'fault', tMs: t, issuedMs: t - 5, doneMs: t, replica: 'r2', action: 'down' });
      rec.replicaFailure('r2', t + 1, 'unreachable');
      w.event({ type: 'role', tMs: t + 1, replica: 'r3', from: 'mixed', to: 'premium', reason: 'repair' });
      w.event({
        type: 'detect',
        tMs: t + 2,
        replica: 'r2',
        state: 'down',
        via: 'connect',
        cause: 'unreachable: ECONNREFUSED',
      });
      w.event({ type: 'note', tMs: t + 3, what: 'error', message: 'something' });
    }
    if (t % 1000 === 0) {
      rec.cpu(t, { r1: 0.5, r2: t >= 3500 ? null : 0.3, r3: 0.4, r4: 0.2, r5: 0.1 });
      rec.loopDelay(t, 1);
      rec.harnessCpu(t, 0.1);
      // The host ran out of room once r2 was down.
      rec.hostCpu(t, t >= 3500 ? 0.96 : 0.5, 0);
    }
    if ((t + 50) % 1000 === 0) w.tick(t + 50);
  }
  if (finish) {
    w.event({ type: 'run', tMs: 6000, state: 'finished' });
    w.finish(6000, true);
  }
  return w.dir;
}

describe('writers produce what the schemas accept (round trip)', () => {
  it('a run directory: config.json, summary.json and every events.jsonl line', async () => {
    const dir = await writeRun(tmp, 'round-trip');
    const config = configSchema.parse(readJson(join(dir, 'config.json')));
    expect(config.schemaVersion).toBe(CONFIG_SCHEMA_VERSION);
    expect(config.environment?.node).toBe(process.version);
    expect(config.plan?.name).toBe('demo-cascade');
    summarySchema.parse(readJson(join(dir, 'summary.json')));
    const events = jsonLines(join(dir, 'events.jsonl')).map((e) => runEventSchema.parse(e));
    expect(new Set(events.map((e) => e.type))).toEqual(
      new Set(['run', 'fault', 'role', 'detect', 'note', 'failures']),
    );
    // The reader returns the file as written: nothing dropped from config or events.
    const run = loadRun(dir);
    expect(run.config).toEqual(readJson(join(dir, 'config.json')));
    expect(run.events).toEqual(jsonLines(join(dir, 'events.jsonl')));
    expect(run.summary).toEqual(readJson(join(dir, 'summary.json')));
  });

  it("report.html charts the host's CPU and says where it had no room", async () => {
    const run = loadRun(await writeRun(tmp, 'host'));
    const down = run.summary.phases.find((p) => p.harness?.host && p.harness.host.busyMean >= 0.9);
    expect(down?.name).toBeDefined();
    const html = await renderRunHtml(run);
    expect(html).toContain('Host CPU busy');
    expect(html).toContain(`Phase ${down?.name}: the host&#39;s cores were 96% busy`);
  });

  it('the summary rebuilt for a run killed before it finished', async () => {
    const dir = await writeRun(tmp, 'killed', false);
    const run = loadRun(dir);
    expect(run.summary.rebuilt).toBe(true);
    summarySchema.parse(run.summary);
  });

  it('the cluster record', () => {
    const stateDir = join(tmp, 'state');
    const record = {
      version: 1 as const,
      name: 'c1',
      id: newClusterId(),
      driver: 'docker' as const,
      spec: clusterSpec({ name: 'c1', stateDir, image: 'postgres:15' }),
      createdAt: new Date().toISOString(),
      cpus: { r1: 0.5 },
      extra: { binDir: '/usr/lib/postgresql/15/bin' },
    };
    writeClusterRecord(stateDir, record);
    clusterRecordSchema.parse(readJson(recordFile(stateDir, 'c1')));
    expect(readClusterRecord(stateDir, 'c1')).toEqual(record);
  });

  it('plb report --json', () => {
    const runs = readdirSync(FIXTURES).map((d) => loadRun(join(FIXTURES, d)));
    const text = renderReport(aggregateRuns(runs.map((r) => r.summary)), { format: 'json' });
    const report = reportJsonSchema.parse(JSON.parse(text));
    expect(report.comparison?.entries.length).toBeGreaterThan(0);
  });

  it('the committed fixtures (test/fixtures/runs/make-fixtures.ts)', () => {
    const dirs = readdirSync(FIXTURES);
    expect(dirs.length).toBe(9);
    for (const d of dirs) {
      const dir = join(FIXTURES, d);
      configSchema.parse(readJson(join(dir, 'config.json')));
      summarySchema.parse(readJson(join(dir, 'summary.json')));
      for (const e of jsonLines(join(dir, 'events.jsonl'))) runEventSchema.parse(e);
    }
  });

  it('the fixture generator: its output parses, loads, and is what is committed', () => {
    const out = join(tmp, 'fixtures');
    const script = join(ROOT, 'test/fixtures/runs/make-fixtures.ts');
    const r = spawnSync(process.execPath, ['--import', 'tsx', script, out], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    for (const d of readdirSync(FIXTURES)) {
      const dir = join(out, 'demo-cascade', d);
      for (const f of readdirSync(join(FIXTURES, d)))
        expect(readFileSync(join(dir, f), 'utf8'), `${d}/${f}`).toBe(
          readFileSync(join(FIXTURES, d, f), 'utf8'),
        );
      configSchema.parse(readJson(join(dir, 'config.json')));
      summarySchema.parse(readJson(join(dir, 'summary.json')));
      for (const e of jsonLines(join(dir, 'events.jsonl'))) runEventSchema.parse(e);
      expect(loadRun(dir).status).toBe('complete');
    }
  });

  it('the bundled plans: as files (what editors check) and as parsed', () => {
    const plans = readdirSync(join(ROOT, 'plans')).filter((f) => f.endsWith('.yaml'));
    expect(plans.length).toBeGreaterThan(0);
    for (const f of plans) {
      const path = join(ROOT, 'plans', f);
      planFileSchema.parse(parseYaml(readFileSync(path, 'utf8')));
      faultPlanSchema.parse(loadPlan(path));
      // The editor modeline is a comment: harmless to the parser.
      expect(readFileSync(path, 'utf8').split('\n')[0]).toBe(
        '# yaml-language-server: $schema=../schemas/plan.schema.json',
      );
    }
  });

  it('the environment', async () => {
    const env = environmentSchema.parse(await collectEnvironment());
    expect(env.cpu.count).toBeGreaterThan(0);
    expect(env.postgres).toBeNull();
    expect(env.image).toBeNull();
    // Not a checkout of its own: no commit (a parent repository's would be wrong).
    expect(gitCommit(tmp)).toBeNull();
  });
});

describe('readers refuse a bad file with one line naming the file and the field', () => {
  const fresh = async (name: string): Promise<string> => writeRun(join(tmp, 'bad'), name);

  it('config.json', async () => {
    const dir = await fresh('bad-config');
    const file = join(dir, 'config.json');
    const config = readJson(file) as Record<string, unknown>;
    writeFileSync(file, JSON.stringify({ ...config, seed: 'seven' }));
    expectRefused(
      () => loadRun(dir),
      'RUN_DIR_INVALID',
      /config\.json: seed must be a number \(got "seven"\)$/,
    );
    writeFileSync(file, JSON.stringify({ ...config, schemaVersion: 2 }));
    expectRefused(() => loadRun(dir), 'RUN_DIR_INVALID', /config\.json: schemaVersion must be 1 \(got 2\)$/);
    writeFileSync(file, '[]');
    expectRefused(() => loadRun(dir), 'RUN_DIR_INVALID', /config\.json: must be an object \(got a list\)$/);
  });

  it('summary.json', async () => {
    const dir = await fresh('bad-summary');
    const file = join(dir, 'summary.json');
    const summary = readJson(file) as { phases: { classes: { premium: Record<string, unknown> } }[] };
    const phase = summary.phases[0];
    if (phase) delete phase.classes.premium['goodput'];
    writeFileSync(file, JSON.stringify(summary));
    expectRefused(
      () => loadRun(dir),
      'RUN_DIR_INVALID',
      /summary\.json: phases\[0\]\.classes\.premium\.goodput is missing$/,
    );
  });

  it('events.jsonl: the line and the field', async () => {
    const dir = await fresh('bad-events');
    const file = join(dir, 'events.jsonl');
    writeFileSync(
      file,
      '{"type":"run","tMs":0,"state":"started"}\n{"type":"fault","tMs":5,"replica":"r1","action":"explode"}\n',
    );
    expectRefused(
      () => loadRun(dir),
      'RUN_DIR_INVALID',
      /events\.jsonl: line 2: action must be one of "down", .* \(got "explode"\)$/,
    );
    writeFileSync(file, '{"type":"gossip","tMs":0}\n');
    expectRefused(
      () => loadRun(dir),
      'RUN_DIR_INVALID',
      /events\.jsonl: line 1: type must be one of "fault", .*\(got "gossip"\)$/,
    );
    writeFileSync(file, '{"type":"detect","tMs":"soon","replica":"r1","state":"down","via":"health"}\n');
    expectRefused(() => loadRun(dir), 'RUN_DIR_INVALID', /events\.jsonl: line 1: tMs must be a number/);
  });

  it('the cluster record', () => {
    const stateDir = join(tmp, 'state-bad');
    mkdirSync(join(stateDir, 'c2'), { recursive: true });
    const good = {
      version: 1,
      name: 'c2',
      id: newClusterId(),
      driver: 'local',
      spec: clusterSpec({ name: 'c2', stateDir }),
      createdAt: new Date().toISOString(),
    };
    const file = recordFile(stateDir, 'c2');
    writeFileSync(file, JSON.stringify({ ...good, spec: { ...good.spec, basePort: '5432' } }));
    expectRefused(
      () => readClusterRecord(stateDir, 'c2'),
      'INTERNAL',
      /cluster\.json has an unknown format: spec\.basePort must be a number \(got "5432"\)$/,
    );
    writeFileSync(file, JSON.stringify({ ...good, driver: 'podman' }));
    expectRefused(() => readClusterRecord(stateDir, 'c2'), 'INTERNAL', /driver must be "docker" or "local"/);
  });
});

describe('a --compare-to baseline (report JSON)', () => {
  it('loads the committed nightly baseline (written before later fields) and refuses a bad stat', () => {
    const file = join(ROOT, 'benchmarks/baseline/summary.json');
    expect(loadBaseline(file).length).toBe(3);
    const raw = readJson(file) as { groups: { phases: { classes: { premium: { p95: unknown } } }[] }[] };
    const phase = raw.groups[0]?.phases[1];
    if (phase) phase.classes.premium.p95 = { median: 'fast' };
    const bad = join(tmp, 'baseline.json');
    writeFileSync(bad, JSON.stringify(raw));
    expectRefused(
      () => loadBaseline(bad),
      'BAD_INPUT',
      /baseline\.json: groups\[0\]\.phases\[1\]\.classes\.premium\.p95\.median must be a number \(got "fast"\)$/,
    );
  });
});

describe('the report shows the plb version the bench recorded (plbVersion)', () => {
  it('in report.html', async () => {
    const html = await renderRunHtml(loadRun(join(FIXTURES, 'demo-cascade-plb-1')));
    expect(html).toContain('plb <b>0.1.0</b>');
  });
});

describe('published JSON Schema files', () => {
  it('schemas/*.schema.json are the generated ones (run npm run schemas after a change)', () => {
    const names = Object.keys(PUBLISHED_SCHEMAS) as PublishedSchemaName[];
    for (const name of names) {
      const committed = readFileSync(join(ROOT, 'schemas', jsonSchemaFile(name)), 'utf8');
      expect(committed, `schemas/${jsonSchemaFile(name)}`).toBe(jsonSchemaText(name));
    }
    expect(readdirSync(join(ROOT, 'schemas')).sort()).toEqual(names.map(jsonSchemaFile).sort());
  });

  it('are shipped with the package', () => {
    const pkg = readJson(join(ROOT, 'package.json')) as { files: string[] };
    expect(pkg.files).toContain('schemas');
  });
});
