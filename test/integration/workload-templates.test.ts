/**
 * A workload file's own SQL on real PostgreSQL (local driver, 1 primary + 2 standbys): the setup
 * runs on the primary, the pre-flight refuses a typo, an unknown table, a value of the wrong type
 * and a read that writes with one line naming the file, line and template (and no run directory),
 * and a custom workload runs end to end with its writes on the primary and figures per template.
 * Skips when the server binaries are not installed, except with CI=true, where that is a failure.
 */
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import type { ClusterDriver } from '../../src/cluster/driver.js';
import type { Credentials, Endpoint } from '../../src/core/endpoint.js';
import { withClient } from '../../src/cluster/pg-util.js';
import { bringUp, clusterSpec } from '../../src/cluster/select.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { preflightTemplates, runSetup } from '../../src/workload/preflight.js';
import { parseWorkloadDocument } from '../../src/workload/workload-file.js';
import { benchFlagValues, haveServerBinaries } from '../helpers/fixtures.js';

const NAME = 'plbtest-templates';
const BASE_PORT = 26130;
const ci = process.env.CI === 'true';

const SETUP = [
  'setup: |',
  '  CREATE TABLE IF NOT EXISTS tpl_items (id int PRIMARY KEY, note text NOT NULL);',
  "  INSERT INTO tpl_items SELECT i, 'n' || i FROM generate_series(1, 1000) AS i ON CONFLICT DO NOTHING;",
  '  CREATE TABLE IF NOT EXISTS tpl_log (id bigserial PRIMARY KEY, item int NOT NULL);',
  '  CREATE SEQUENCE IF NOT EXISTS tpl_seq;',
].join('\n');

describe.skipIf(!haveServerBinaries && !ci)('workload templates on a local cluster', () => {
  const work = mkdtempSync(join(tmpdir(), 'plb-templates-it-'));
  // The local driver's postgres OS user must traverse it to reach the state folder.
  chmodSync(work, 0o755);
  const stateBefore = process.env.PLB_STATE_DIR;
  let driver: ClusterDriver;
  let creds: Credentials;
  let primary: Endpoint;
  let replicas: Endpoint[];

  const file = (name: string, text: string): string => {
    const p = join(work, name);
    writeFileSync(p, text);
    return p;
  };

  beforeAll(async () => {
    if (!haveServerBinaries) throw new Error('CI=true and no PostgreSQL server binaries: install them in CI');
    process.env.PLB_STATE_DIR = join(work, 'state');
    const spec = clusterSpec({ name: NAME, replicas: 2, basePort: BASE_PORT, stateDir: join(work, 'state') });
    driver = (await bringUp({ driver: 'local', spec })).driver;
    creds = await driver.credentials();
    primary = driver.endpoints().find((e) => e.kind === 'primary')!;
    replicas = driver.endpoints().filter((e) => e.kind === 'replica');
  }, 120_000);

  afterAll(async () => {
    await driver?.down();
    if (stateBefore === undefined) delete process.env.PLB_STATE_DIR;
    else process.env.PLB_STATE_DIR = stateBefore;
    rmSync(work, { recursive: true, force: true });
  });

  const preflight = async (template: string): Promise<string> => {
    const text = `${SETUP}\nclasses:\n  premium:\n    templates:\n${template}\n  freemium:\n    templates:\n      one: { sql: "SELECT 1" }\n`;
    const set = parseWorkloadDocument(text, 'w.yaml').templates.set!;
    await runSetup(set, primary, replicas, creds, () => undefined);
    try {
      await preflightTemplates(set, replicas[0]!, creds, 1000, { seed: 1, statementTimeoutMs: 5000 });
    } catch (err) {
      return (err as Error).message;
    }
    return 'no error';
  };

  it('refuses a bad template with one line naming the file, line and template', async () => {
    expect(
      await preflight(
        '      good: { sql: "SELECT note FROM tpl_items WHERE id = $1", params: [{ type: int, min: 1, max: 9 }] }',
      ),
    ).toBe('no error');
    expect(await preflight('      typo: { sql: "SELEC note FROM tpl_items" }')).toBe(
      'w.yaml:9: template typo: syntax error at or near "SELEC"',
    );
    expect(await preflight('      gone: { sql: "SELECT * FROM tpl_nope" }')).toBe(
      'w.yaml:9: template gone: relation "tpl_nope" does not exist',
    );
    expect(
      await preflight(
        '      typed: { sql: "SELECT note FROM tpl_items WHERE id = $1", params: [{ type: choice, values: [abc] }] }',
      ),
    ).toMatch(
      /^w\.yaml:9: template typed: invalid input syntax for type integer: "abc" \(run once with \["abc"\]\)$/,
    );
    expect(await preflight(`      sneaky: { sql: "SELECT nextval('tpl_seq')" }`)).toMatch(
      /^w\.yaml:9: template sneaky: changes data \(cannot execute nextval\(\) in a read-only transaction\): mark it writes: true/,
    );
  }, 60_000);

  it('never starts a run whose template does not prepare', async () => {
    const out = join(work, 'bad-runs');
    const workload = file(
      'bad.yaml',
      `${SETUP}\ntemplates:\n  bad: { sql: "SELECT nope FROM tpl_items" }\nclasses: {}\n`,
    );
    const plan = file(
      'p.yaml',
      'name: short\nduration: 12s\nwarmup: 2s\nreference: 6s\nreplicas: 2\nevents: []\n',
    );
    const lines: string[] = [];
    const code = await executeBench(
      benchFlagValues(out, NAME, BASE_PORT, { plan, driver: 'local', workload, clients: 4 }),
      { log: () => undefined, warn: (l) => lines.push(l) },
    );
    expect(code).toBe(1);
    expect(lines.join('\n')).toContain(`${workload}:7: template bad: column "nope" does not exist`);
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
  }, 60_000);

  it('runs a custom workload: reads on the replicas, writes on the primary, figures per template', async () => {
    const out = join(work, 'runs');
    const workload = file(
      'ok.yaml',
      [
        SETUP,
        'allowWrites: true',
        'templates:',
        '  lookup: { sql: "SELECT note FROM tpl_items WHERE id = $1", weight: 3, params: [{ type: zipf, min: 1, max: 1000, s: 1.2 }] }',
        '  log: { sql: "INSERT INTO tpl_log (item) VALUES ($1)", params: [{ type: int, min: 1, max: 1000 }] }',
        'classes:',
        '  premium: { queriesPerSession: 5, thinkTime: 20ms }',
        '  freemium: { queriesPerSession: 5, thinkTime: 20ms, queryWeights: { lookup: 1 } }',
      ].join('\n'),
    );
    const plan = file(
      'p2.yaml',
      'name: short\nduration: 12s\nwarmup: 2s\nreference: 6s\nreplicas: 2\nevents: []\n',
    );
    const before = await withClient(primary, creds, (c) =>
      c.query<{ n: string }>('SELECT count(*) AS n FROM tpl_log'),
    );
    const lines: string[] = [];
    const code = await executeBench(
      benchFlagValues(out, NAME, BASE_PORT, {
        plan,
        driver: 'local',
        workload,
        clients: 6,
        mixes: '50:50',
        seed: 3,
      }),
      { log: (l) => lines.push(l), warn: (l) => lines.push(l) },
    );
    expect(code, lines.join('\n')).toBe(0);
    expect(lines.join('\n')).toMatch(/2 template\(s\) prepared and checked on r1/);
    const dir = join(out, readdirSync(out)[0]!);
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as RunSummary;
    const phase = summary.phases[0]!.name;
    const row = (cls: string, t: string) =>
      summary.templates!.find((x) => x.phase === phase && x.class === cls && x.template === t);
    expect(row('premium', 'lookup')!.queries).toBeGreaterThan(0);
    expect(row('premium', 'log')!.queries).toBeGreaterThan(0);
    expect(row('premium', 'log')!.errors).toBe(0);
    expect(row('premium', 'lookup')!.p95).toBeGreaterThan(0);
    expect(row('freemium', 'log')).toBeUndefined();
    const after = await withClient(primary, creds, (c) =>
      c.query<{ n: string }>('SELECT count(*) AS n FROM tpl_log'),
    );
    expect(Number(after.rows[0]!.n)).toBeGreaterThan(Number(before.rows[0]!.n));
  }, 90_000);
});
