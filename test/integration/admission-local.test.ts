/**
 * plb-admit on a real cluster (local postgres processes): sessions wait for a slot when every
 * replica is at its limit, the wait is reported per class apart from query latency, the router
 * never holds more sessions on a replica than its limit, and the rejoin's recovery tail is in the
 * summary. With CI=true missing server binaries fail the suite instead of skipping it.
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
import { downCluster } from '../../src/cluster/select.js';
import { benchFlagValues, haveServerBinaries } from '../helpers/fixtures.js';

const ci = process.env.CI === 'true';
const NAME = 'plbtest-admit';
const BASE_PORT = 26340;
const PLAN = `name: admit-it
duration: 24s
warmup: 3s
reference: 5s
replicas: 3
events:
  - { at: 9s, replica: r1, action: down }
  - { at: 15s, replica: r1, action: rejoin }
`;

describe.skipIf(!haveServerBinaries && !ci)('plb-admit on a local cluster', () => {
  let work = '';
  let saved: string | undefined;

  beforeAll(() => {
    if (!haveServerBinaries)
      throw new Error('CI=true and no postgres server binaries: this test must run in CI');
    saved = process.env.PLB_STATE_DIR;
    work = mkdtempSync(join(tmpdir(), 'plb-admit-it-'));
    chmodSync(work, 0o755); // the postgres OS user must reach the state folder inside
    process.env.PLB_STATE_DIR = join(work, 'state');
  });

  afterAll(async () => {
    await downCluster(NAME, join(work, 'state'), { explicit: true }).catch(() => undefined);
    if (saved === undefined) delete process.env.PLB_STATE_DIR;
    else process.env.PLB_STATE_DIR = saved;
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('queues past the limit, reports queue time per class, never exceeds a limit', async () => {
    const plan = join(work, 'plan.yaml');
    writeFileSync(plan, PLAN);
    const out = join(work, 'runs');
    const lines: string[] = [];
    const code = await executeBench(
      benchFlagValues(out, NAME, BASE_PORT, {
        plan,
        strategies: 'plb-admit',
        clients: 12,
        seed: 4,
        'think-time': '50ms',
        'queries-per-session': 8,
        // 0.7 x (12 clients / 3 replicas) = 2.8 -> 3 sessions per replica: 9 slots for 12 clients
        'admission-limit': '0.7x',
        'admission-timeout': '3s',
        'health-interval': '500ms',
      }),
      { log: () => undefined, warn: (l) => lines.push(l) },
    );
    expect(code, lines.join('\n')).toBe(0);
    const dir = readdirSync(out)
      .map((d) => join(out, d))
      .find((d) => existsSync(join(d, 'summary.json')))!;
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as {
      phases: { name: string; classes: Record<string, { queueP95Ms?: number | null; queries: number }> }[];
      recoveryTail?: { phase: string }[];
    };
    const waited = summary.phases.flatMap((p) =>
      ['premium', 'freemium'].map((c) => p.classes[c]?.queueP95Ms ?? 0),
    );
    expect(Math.max(...waited)).toBeGreaterThan(0);
    expect(summary.phases.every((p) => p.classes.premium!.queueP95Ms !== undefined)).toBe(true);
    expect(summary.recoveryTail?.map((t) => t.phase)).toEqual(['rejoin-1']);
    // Every second, the router's sessions on each replica stay within the limit of 3.
    const [head, ...rows] = readFileSync(join(dir, 'timeline.csv'), 'utf8').trim().split('\n');
    const cols = head!.split(',');
    for (const row of rows) {
      const v = row.split(',');
      for (const r of ['r1', 'r2', 'r3']) {
        const n = Number(v[cols.indexOf(`${r}_premium`)]) + Number(v[cols.indexOf(`${r}_freemium`)]);
        expect(n).toBeLessThanOrEqual(3);
      }
    }
  }, 60_000);
});
