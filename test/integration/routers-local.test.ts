/**
 * Issue 49: two routers with the `replica` view on a real cluster (local postgres processes). The
 * sessions carry their class in application_name, the one poller of the process reads every
 * replica's counts by class from pg_stat_activity every interval and feeds both routers, each
 * router's own checker sees the kill, and the summary reports each router. With CI=true missing
 * server binaries fail the suite instead of skipping it.
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
import { connect } from '../../src/cluster/pg-util.js';
import { downCluster, openCluster } from '../../src/cluster/select.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { benchFlagValues, haveServerBinaries } from '../helpers/fixtures.js';

const ci = process.env.CI === 'true';
const NAME = 'plbtest-routers';
// Ports 28100-28103 (primary and three replicas).
const BASE_PORT = 28100;
const PLAN = `name: routers-it
duration: 20s
warmup: 3s
reference: 5s
replicas: 3
events:
  - { at: 9s, replica: r1, action: down }
  - { at: 14s, replica: r1, action: rejoin }
`;

describe.skipIf(!haveServerBinaries && !ci)('two routers with the replica view on a local cluster', () => {
  let work = '';
  let saved: string | undefined;

  beforeAll(() => {
    if (!haveServerBinaries)
      throw new Error('CI=true and no postgres server binaries: this test must run in CI');
    saved = process.env.PLB_STATE_DIR;
    work = mkdtempSync(join(tmpdir(), 'plb-routers-it-'));
    chmodSync(work, 0o755); // the postgres OS user must reach the state folder inside
    process.env.PLB_STATE_DIR = join(work, 'state');
  });

  afterAll(async () => {
    await downCluster(NAME, join(work, 'state'), { explicit: true }).catch(() => undefined);
    if (saved === undefined) delete process.env.PLB_STATE_DIR;
    else process.env.PLB_STATE_DIR = saved;
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('reads the sessions by class from pg_stat_activity and reports each router', async () => {
    const plan = join(work, 'plan.yaml');
    writeFileSync(plan, PLAN);
    const out = join(work, 'runs');
    const lines: string[] = [];
    const code = await executeBench(
      benchFlagValues(out, NAME, BASE_PORT, {
        plan,
        clients: 8,
        seed: 3,
        'think-time': '50ms',
        'queries-per-session': 8,
        'health-interval': '500ms',
        routers: '2',
        'router-view': 'replica',
        'view-interval': '500ms',
        'keep-cluster': true,
      }),
      { log: () => undefined, warn: (l) => lines.push(l) },
    );
    expect(code, lines.join('\n')).toBe(0);
    // The poller read the replicas all along (only r1's reads while it was down may fail).
    const read = lines.map((l) => /replica view: (\d+) reads .*, (\d+) failed/.exec(l)).find((m) => m);
    expect(read, lines.join('\n')).toBeTruthy();
    // How many depends on the host's speed; r1's (a third of them) fail while it is down.
    expect(Number(read?.[1])).toBeGreaterThan(Number(read?.[2]));
    const dir = readdirSync(out)
      .map((d) => join(out, d))
      .find((d) => existsSync(join(d, 'summary.json')))!;
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as RunSummary;
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { routers?: unknown };
    expect(config.routers).toEqual({
      count: 2,
      view: 'replica',
      assignment: 'round-robin',
      viewIntervalMs: 500,
    });
    expect(summary.routers).toMatchObject({ count: 2, view: 'replica' });
    expect(summary.routers?.perRouter.every((p) => p.sessions.premium + p.sessions.freemium > 0)).toBe(true);
    // Each router's own checker saw the kill: the second router's detections carry its number.
    const events = readFileSync(join(dir, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const downs = events.filter(
      (e) => e['type'] === 'detect' && e['replica'] === 'r1' && e['state'] === 'down',
    );
    expect(downs.map((e) => e['router'] ?? 0).sort()).toEqual([0, 1]);
  }, 180_000);

  it("counts a replica's sessions by the class in application_name, and nobody else's", async () => {
    const driver = await openCluster(NAME, join(work, 'state'));
    const creds = await driver.credentials();
    const r2 = driver.endpoints().find((e) => e.id === 'r2')!;
    const names = ['plb-premium', 'plb-premium', 'plb-freemium', 'plb-health', 'psql'];
    const clients = await Promise.all(
      names.map((applicationName) => connect(r2, creds, { applicationName })),
    );
    const reader = driver.sessionCounts!(creds, 5000);
    try {
      expect(await reader.read('r2')).toEqual({ premium: 2, freemium: 1 });
      await clients[0]!.end();
      // The backend's exit reaches pg_stat_activity a moment after the client's goodbye.
      let counts = await reader.read('r2');
      for (let i = 0; i < 50 && counts.premium !== 1; i++) {
        await new Promise((r) => setTimeout(r, 100));
        counts = await reader.read('r2');
      }
      expect(counts).toEqual({ premium: 1, freemium: 1 });
    } finally {
      await reader.close();
      await Promise.all(clients.slice(1).map((c) => c.end()));
    }
  });
});
