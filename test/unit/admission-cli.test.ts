// plb-admit end to end on the simulator: the flags are checked (one line naming the flag, nothing
// started), and a run records the admission options, queue time per class and phase, and the
// recovery tail of its rejoin.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { checkBenchValue } from '../../src/bench/options/checks.js';
import { executeBench } from '../../src/bench/execute.js';
import { benchFlagValues } from '../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'plb-admission-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => {
  process.exitCode = undefined;
});

describe('bench --admission-*', () => {
  it.each([
    ['admission-limit', '0', /^--admission-limit: expected sessions per replica >= 1/],
    ['admission-limit', '0x', /^--admission-limit: a share must be > 0/],
    ['admission-target', 'fast', /^--admission-target: expected a duration like 40ms/],
    ['admission-timeout', '0s', /^--admission-timeout: expected a duration > 0/],
    ['admission-queue', '-1', /^--admission-queue: expected an integer >= 1/],
    ['admission-min-share', '1.5', /^--admission-min-share: expected a number in \[0, 1\]/],
    ['admission-premium-reserve', '-0.1', /^--admission-premium-reserve: expected a number in \[0, 1\]/],
  ])('--%s %s is one line naming the flag', (flag, value, re) => {
    expect(() => checkBenchValue(flag, value)).toThrow(re);
  });

  it('a bad value stops executeBench before anything starts', async () => {
    const out = join(root, 'bad');
    const lines: string[] = [];
    const code = await executeBench(
      benchFlagValues(out, 'plb-admission-test', 26390, { 'admission-limit': '0', driver: 'sim' }),
      { log: () => undefined, warn: (l) => lines.push(l) },
    );
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^Error: --admission-limit: /);
    expect(existsSync(out)).toBe(false);
  });

  it('--driver sim --strategy plb-admit,lc-queue: queue time and timeouts per class, the recovery tail', async () => {
    const out = join(root, 'sim');
    const plan = join(root, 'down-up.yaml');
    writeFileSync(
      plan,
      'name: down-up\nduration: 24s\nwarmup: 2s\nreference: 6s\nreplicas: 5\nevents:\n  - { at: 8s, replica: r1, action: down }\n  - { at: 14s, replica: r1, action: rejoin }\n',
    );
    const lines: string[] = [];
    const code = await executeBench(
      benchFlagValues(out, 'plb-admission-test', 26390, {
        plan,
        driver: 'sim',
        seed: 5,
        clients: 30,
        json: true,
        strategies: 'plb-admit,lc-queue',
        'think-time': '200ms',
        'admission-limit': '0.8x',
        'admission-timeout': '2s',
      }),
      { log: () => undefined, warn: (l) => lines.push(l) },
    );
    expect(code, lines.join('\n')).toBe(0);
    const dirs = readdirSync(out)
      .map((d) => join(out, d))
      .filter((d) => existsSync(join(d, 'summary.json')));
    expect(dirs).toHaveLength(2);
    for (const dir of dirs) {
      const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as {
        admission: { limits: { limit: number }; queue: { timeoutMs: number } };
      };
      // 0.8 x (30 clients / 5 replicas) = 4.8 -> 5 sessions per replica
      expect(config.admission.limits.limit).toBe(5);
      expect(config.admission.queue.timeoutMs).toBe(2000);
      const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as {
        phases: {
          name: string;
          classes: Record<string, { queueP95Ms?: number | null; queueTimeouts?: number }>;
        }[];
        recoveryTail?: { phase: string; premiumS: number | null; freemiumS: number | null }[];
      };
      // 30 clients for 20 slots while r1 is down: sessions wait, and the wait is reported apart
      // from query latency, for each class (premium, served first by plb-admit, may wait none).
      const down = summary.phases.find((p) => p.name === 'down-1')!;
      for (const cls of ['premium', 'freemium']) {
        expect(down.classes[cls]!.queueP95Ms).toBeGreaterThanOrEqual(0);
        expect(down.classes[cls]!.queueTimeouts).toBeGreaterThanOrEqual(0);
      }
      expect(Math.max(down.classes.premium!.queueP95Ms!, down.classes.freemium!.queueP95Ms!)).toBeGreaterThan(
        0,
      );
      expect(summary.recoveryTail?.map((t) => t.phase)).toEqual(['rejoin-1']);
    }
  }, 90_000);
});
