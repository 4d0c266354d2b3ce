/**
 * Detection that tells death from overload, against a real server (local driver): a replica at
 * max_connections refuses new sessions with 53300, and is not marked down; a killed one is, with
 * the cause `unreachable`. Skips only when the server binaries are not installed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { haveServerBinaries } from '../helpers/fixtures.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgConnector } from '../../src/cluster/connector.js';
import type { Credentials, Endpoint } from '../../src/core/endpoint.js';
import type { FailureCause } from '../../src/core/failure-cause.js';
import { HealthChecker, type FailureReport, type HealthState } from '../../src/cluster/health.js';
import { createLocalDriver, type LocalDriver } from '../../src/cluster/local/index.js';
import { connect } from '../../src/cluster/pg-util.js';
import { clusterSpec } from '../../src/cluster/select.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Until cond holds or 30 s passed (a deadline for a busy host; no time is asserted). */
async function until(cond: () => boolean): Promise<void> {
  for (const t0 = Date.now(); !cond() && Date.now() - t0 < 30_000; ) await sleep(50);
}

interface Watch {
  checker: HealthChecker;
  changes: { state: HealthState; cause: string }[];
  failures: FailureReport[];
}

describe.skipIf(!haveServerBinaries)('health detection against a real server', () => {
  let stateDir: string;
  let driver: LocalDriver;
  let creds: Credentials;
  let r1: Endpoint;
  const held: pg.Client[] = [];
  const watches: Watch[] = [];

  const watch = (): Watch => {
    const w: Watch = { checker: undefined as unknown as HealthChecker, changes: [], failures: [] };
    w.checker = new HealthChecker(
      [r1.id],
      pgConnector([r1], creds),
      { intervalMs: 200, timeoutMs: 1000, fall: 2, rise: 2, hangMs: 5000 },
      (_replica, state, _via, cause) => w.changes.push({ state, cause }),
      (f) => w.failures.push(f),
    );
    watches.push(w);
    w.checker.start();
    return w;
  };
  const causes = (w: Watch): FailureCause[] => w.failures.map((f) => f.cause);

  beforeAll(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'plb-health-it-'));
    const spec = clusterSpec({
      name: 'plbtest-health',
      replicas: 1,
      basePort: 28632,
      maxConnections: 20,
      stateDir,
    });
    driver = createLocalDriver(spec);
    await driver.down();
    await driver.up();
    creds = await driver.credentials();
    r1 = driver.endpoints().find((e) => e.id === 'r1')!;
  });

  afterAll(async () => {
    for (const w of watches) w.checker.stop();
    for (const c of held) await c.end().catch(() => undefined);
    await driver?.down();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('a replica at max_connections is overloaded, not down', async () => {
    const before = watch(); // holds its connection from before the server filled up
    await sleep(500);
    // Fill every slot: the walreceiver does not count, plb's own checker does.
    let refused: unknown;
    for (let i = 0; i < 40 && refused === undefined; i++) {
      try {
        held.push(await connect(r1, creds, { applicationName: 'plb-fill' }));
      } catch (err) {
        refused = err;
      }
    }
    expect((refused as { code?: string }).code).toBe('53300');
    // A session's refused connect, as the DataSource reports it.
    expect(before.checker.reportFailure(r1.id, refused, 'connect')).toBe('overloaded');
    expect(before.checker.reportFailure(r1.id, refused, 'connect')).toBe('overloaded');
    const after = watch(); // its every connect is refused with 53300
    // More refused checks than fall: had they counted, it would be down by now.
    await until(() => causes(after).filter((c) => c === 'overloaded').length > 3);
    expect(causes(after).filter((c) => c === 'overloaded').length).toBeGreaterThan(3);
    expect(before.changes).toEqual([]);
    expect(after.changes).toEqual([]);
    expect(before.checker.isHealthy(r1.id)).toBe(true);
    expect(after.checker.isHealthy(r1.id)).toBe(true);
    expect(causes(after)).toContain('overloaded');
    expect(causes(after)).not.toContain('unreachable');
    expect(causes(before)).not.toContain('unreachable');
  });

  it('a killed replica is down, with the cause unreachable', async () => {
    for (const c of held.splice(0)) await c.end().catch(() => undefined);
    const w = watches[0]!;
    const t0 = Date.now();
    await driver.kill(r1.id);
    await until(() => w.changes.length > 0);
    console.log(`killed replica marked down after ${Date.now() - t0} ms: ${w.changes[0]?.cause}`);
    expect(w.changes[0]?.state).toBe('down');
    expect(w.changes[0]?.cause).toMatch(/^unreachable: /);
    expect(w.checker.isHealthy(r1.id)).toBe(false);
    // Back up: answered checks mark it up again.
    await driver.start(r1.id);
    await until(() => w.changes.length >= 2);
    expect(w.changes[1]).toEqual({ state: 'up', cause: 'answered' });
  });
});
