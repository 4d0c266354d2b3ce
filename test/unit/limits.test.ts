import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchFlagValues } from '../helpers/fixtures.js';
import { afterAll, describe, expect, it } from 'vitest';
import { executeBench } from '../../src/bench/execute.js';
import { type BenchFlagValues } from '../../src/bench/options/flags.js';
import { clusterSpec } from '../../src/cluster/select.js';
import { formatError, PlbError } from '../../src/core/errors.js';
import { loadPlan, parsePlan } from '../../src/faults/plan.js';
import { expandSeries } from '../../src/bench/series.js';
import { Rng } from '../../src/core/rng.js';
import { escapeLines } from '../../src/core/text.js';

const work = mkdtempSync(join(tmpdir(), 'plb-limits-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const message = (f: () => unknown): string => {
  try {
    f();
  } catch (err) {
    return formatError(err);
  }
  throw new Error('did not throw');
};

describe('plan limits', () => {
  const H = 'name: t\nduration: 90\nwarmup: 10\nreference: 20\n';

  it('file size: at most 1 MiB, checked before reading', () => {
    const file = join(work, 'big.yaml');
    writeFileSync(file, H + '#'.repeat(1024 * 1024));
    expect(message(() => loadPlan(file))).toMatch(/big\.yaml: size: at most 1048576 bytes \(1 MiB\), got 10/);
  });

  it('event count: at most 10000, at the line of the first one too many', () => {
    const events = Array.from(
      { length: 10_001 },
      () => '  - { at: 30, replica: r1, action: throttle, cpus: 0.1 }',
    );
    const text = H + 'events:\n' + events.join('\n') + '\n';
    expect(message(() => parsePlan(text, 'p.yaml'))).toBe(
      'p.yaml:10006: events: at most 10000 events (got 10001)',
    );
  });

  it('name: at most 100 characters, no control characters', () => {
    expect(message(() => parsePlan(`name: ${'a'.repeat(101)}\nduration: 90\n`, 'p.yaml'))).toBe(
      'p.yaml:1: name: must be at most 100 characters (got 101)',
    );
    const m = message(() => parsePlan('name: "x\\e[2Jy"\nduration: 90\n', 'p.yaml'));
    expect(m).toMatch(/^p\.yaml:1: name: must not contain control characters/);
    expect(m).not.toContain(String.fromCharCode(27));
  });

  it('duration: at most 24 h', () => {
    expect(message(() => parsePlan('name: t\nduration: 25h\n', 'p.yaml'))).toBe(
      'p.yaml:2: duration: must be at most 86400s (24 h) (got 90000s)',
    );
    expect(parsePlan('name: t\nduration: 24h\n', 'p.yaml').duration).toBe(86400);
  });
});

describe('one-line errors escape control characters', () => {
  it('a newline or escape in a message stays on one line', () => {
    expect(formatError(new PlbError('BAD_INPUT', 'path: a\nb\u001b[31m'))).toBe('path: a\\nb\\x1b[31m');
  });
});

describe('seeds are exactly the generator range 0..2^32-1', () => {
  it('0 and 2^32-1 are accepted and differ; 2^32, -1, 1e20 and 1.5 are refused', () => {
    expect(new Rng(0).nextUint32()).not.toBe(new Rng(0xffffffff).nextUint32());
    for (const bad of [2 ** 32, -1, 1e20, 1.5])
      expect(message(() => new Rng(bad))).toMatch(/^seed: must be an integer from 0 to 4294967295/);
  });

  it('repeats past 2^32-1 wrap to seeds the generator takes', () => {
    const runs = expandSeries(['plb'], [{ premium: 25, freemium: 75 }], 3, 0xffffffff);
    expect(runs.map((r) => r.seed)).toEqual([0xffffffff, 0, 1]);
  });
});

describe('cluster spec bounds', () => {
  it('memory and cpus have upper bounds naming the field', () => {
    expect(message(() => clusterSpec({ memoryMb: 1e9 }))).toMatch(
      /^memory: must be an integer from 64 to \d+ MiB/,
    );
    expect(message(() => clusterSpec({ cpus: 1e6 }))).toMatch(/^cpus: must be > 0 and at most \d+/);
    expect(message(() => clusterSpec({ primaryCpus: 1e6 }))).toMatch(
      /^primary-cpus: must be > 0 and at most/,
    );
  });
});

describe('bench flag bounds', () => {
  const flags = (over: Partial<BenchFlagValues>): BenchFlagValues =>
    benchFlagValues(join(work, 'runs'), 'plbtest-limits', 61532, over);

  it.each([
    [{ clients: 100_001 }, '--clients: must be at most 100000 (got 100001)'],
    [{ repeat: 1001 }, '--repeat: must be at most 1000 (got 1001)'],
    [{ rate: '100001' }, '--rate: must be at most 100000 (got 100001)'],
    [{ 'dataset-rows': 100_000_001 }, '--dataset-rows: must be at most 100000000 (got 100000001)'],
    [{ seed: 2 ** 32 }, '--seed: must be an integer from 0 to 4294967295 (got 4294967296)'],
    [{ seed: 1e20 }, '--seed: must be an integer from 0 to 4294967295 (got 100000000000000000000)'],
    [{ cpus: '1000000' }, /^--cpus: must be > 0 and at most \d+ \(this host's cores\), got 1000000$/],
    [{ out: '/proc/plb-x' }, /^--out: cannot create folder \/proc\/plb-x/],
    [{ out: '/dev/null' }, /^--out: \/dev\/null is not a folder$/],
  ] as [Partial<BenchFlagValues>, string | RegExp][])(
    '%o: one-line error, nothing started',
    async (over, expected) => {
      const errors: string[] = [];
      const prev = process.env.PLB_STATE_DIR;
      process.env.PLB_STATE_DIR = join(work, 'state');
      try {
        const code = await executeBench(flags(over), { log: () => undefined, warn: (l) => errors.push(l) });
        expect(code).toBe(1);
      } finally {
        if (prev === undefined) delete process.env.PLB_STATE_DIR;
        else process.env.PLB_STATE_DIR = prev;
      }
      expect(errors).toHaveLength(1);
      const line = errors[0]!.replace(/^Error: /, '');
      if (typeof expected === 'string') expect(line).toBe(expected);
      else expect(line).toMatch(expected);
    },
  );
});

describe('terminal output of user-provided text', () => {
  it('escapes control characters line by line, keeping the lines', () => {
    expect(escapeLines('run directory: /tmp/a\u001b[2Jb\nnext\tline')).toBe(
      'run directory: /tmp/a\\x1b[2Jb\nnext\\tline',
    );
  });
});
