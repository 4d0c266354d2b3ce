import { existsSync, readdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchFlagValues } from '../helpers/fixtures.js';
import { afterAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { type BenchFlagValues } from '../../src/bench/options/flags.js';
import { parseBorrowing } from '../../src/cli/router-flags.js';
import { DEFAULT_READINGS, formatReadings, resolveBorrowing } from '../../src/router/index.js';
import type { BorrowingOptions } from '../../src/router/types.js';
import { acquireClusterLock } from '../../src/cluster/lock.js';
import { isPlbError } from '../../src/core/errors.js';
import { clusterSpec } from '../../src/cluster/select.js';
import { newClusterId, writeClusterRecord } from '../../src/cluster/state.js';

const work = mkdtempSync(join(tmpdir(), 'plb-bench-cli-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const flags = (over: Partial<BenchFlagValues>): BenchFlagValues =>
  benchFlagValues(join(work, 'runs'), 'plbtest-cli', 61432, over);

async function run(over: Partial<BenchFlagValues>): Promise<{ code: number; errors: string[] }> {
  const errors: string[] = [];
  const prev = process.env.PLB_STATE_DIR;
  process.env.PLB_STATE_DIR = join(work, 'state');
  try {
    const code = await executeBench(flags(over), { log: () => undefined, warn: (l) => errors.push(l) });
    return { code, errors };
  } finally {
    if (prev === undefined) delete process.env.PLB_STATE_DIR;
    else process.env.PLB_STATE_DIR = prev;
  }
}

describe('bench flags', () => {
  it.each([
    [{ mixes: '2:x' }, /^Error: --mix: expected premium:freemium/],
    [{ strategies: 'plb,fast' }, /^Error: --strategy: unknown strategy "fast"/],
    [{ clients: 0 }, /^Error: --clients: must be a positive integer/],
    [{ 'think-time': 'soon' }, /^Error: --think-time: expected a duration/],
    [{ borrow: '1:2' }, /^Error: --borrow: the premium ratio must be > 1/],
    [{ 'think-time': 'auto', 'target-cpu': '1.5' }, /^Error: --target-cpu: must be below 1/],
    [{ 'hang-timeout': 'never' }, /^Error: --hang-timeout: expected a duration/],
    [{ reference: '2:1' }, /^Error: --reference/],
    [{ plan: join(work, 'missing.yaml') }, /missing\.yaml/],
    [{ 'write-rate': -1 }, /^Error: --write-rate: must be a number of rows\/s/],
    [{ 'write-rate': 100, driver: 'sim' }, /^Error: --write-rate: not with --driver sim/],
    [{ 'lag-weights': '200ms:800ms:10%' }, /^Error: --lag-weights: needs --write-rate/],
    [{ 'lag-weights': '200ms:800ms', 'write-rate': 100 }, /^Error: --lag-weights: expected low:high:floor/],
  ])('%o: one-line error, exit 1, nothing started', async (over, message) => {
    const { code, errors } = await run(over);
    expect(code).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(message);
    expect(errors[0]).not.toContain('\n');
    expect(existsSync(join(work, 'state', 'plbtest-cli'))).toBe(false);
    expect(existsSync(join(work, 'runs'))).toBe(false);
  });

  it('names the plan file and line for a bad plan before anything starts', async () => {
    const plan = join(work, 'bad.yaml');
    writeFileSync(plan, 'name: bad\nduration: 60s\nevents:\n  - { at: 45s, replica: r9, action: down }\n');
    const { code, errors } = await run({ plan });
    expect(code).toBe(1);
    expect(errors[0]).toMatch(/bad\.yaml:4: events\[0\]\.replica/);
    expect(existsSync(join(work, 'state', 'plbtest-cli'))).toBe(false);
  });

  it('refuses, before it starts, a bench that an existing cluster cannot hold', async () => {
    const stateDir = join(work, 'state');
    writeClusterRecord(stateDir, {
      version: 1,
      name: 'plbtest-small',
      id: newClusterId(),
      driver: 'local',
      spec: clusterSpec({ name: 'plbtest-small', stateDir, maxConnections: 100, basePort: 61500 }),
      createdAt: new Date(0).toISOString(),
    });
    const { code, errors } = await run({ name: 'plbtest-small', clients: 1000 });
    expect(code).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /^Error: --clients: 1000 sessions need max_connections >= 1020 on every replica .* cluster plbtest-small has 100/,
    );
    // --out may exist (it is checked first), but no run was started in it.
    expect(existsSync(join(work, 'runs')) ? readdirSync(join(work, 'runs')) : []).toEqual([]);
  });

  it('a second bench on a locked cluster fails at once naming the holder, and keeps its lock', async () => {
    const lock = acquireClusterLock(join(work, 'state'), 'plbtest-cli', 'plb bench run --name plbtest-cli');
    try {
      const { code, errors } = await run({});
      expect(code).toBe(1);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(
        new RegExp(
          `^Error: cluster plbtest-cli is locked by pid ${process.pid}, started \\S+, plb bench run`,
        ),
      );
      expect(readFileSync(lock.file, 'utf8')).toContain(lock.holder.token);
      expect(existsSync(join(work, 'state', 'plbtest-cli', 'cluster.json'))).toBe(false);
    } finally {
      lock.release();
    }
  });

  it('parses borrowing ratios, keeping a band between borrow and return', () => {
    expect(parseBorrowing('off')).toBe(false);
    expect(parseBorrowing('1.5:2')).toEqual({
      premium: { pressureRatio: 1.5, returnRatio: 1 },
      freemium: { pressureRatio: 2, returnRatio: 0.625 },
    });
    // One direction off: only premium borrows, or only freemium.
    expect(parseBorrowing('1.5:off')).toEqual({
      premium: { pressureRatio: 1.5, returnRatio: 1 },
      freemium: { enabled: false },
    });
    expect(parseBorrowing('off:2')).toEqual({
      premium: { enabled: false },
      freemium: { pressureRatio: 2, returnRatio: 0.625 },
    });
    expect(parseBorrowing('off:off')).toBe(false);
    const borrowing = resolveBorrowing(parseBorrowing('1.5:off') as BorrowingOptions);
    expect([borrowing.premium.enabled, borrowing.freemium.enabled]).toEqual([true, false]);
    expect(formatReadings(DEFAULT_READINGS, borrowing)).toMatch(/; borrow 1\.5:off$/);
    let err: unknown;
    try {
      parseBorrowing('fast');
    } catch (e) {
      err = e;
    }
    expect(isPlbError(err, 'BAD_INPUT')).toBe(true);
  });
});
