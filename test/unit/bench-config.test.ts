// One resolved configuration: the flags become config.json's fields once (resolveBench), each
// run's config is the series' with its own strategy, mix, seed and repeat (runConfig), and the
// router is built from that config alone (routerFor).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkBasePort } from '../../src/cluster/ports.js';
import { resolveBenchFlags } from '../../src/bench/options/resolve.js';
import { routerFor } from '../../src/bench/options/router-settings.js';
import { runConfig } from '../../src/bench/series.js';
import { configSchema } from '../../src/run-format/config.js';
import { benchFlagValues } from '../helpers/fixtures.js';

const out = mkdtempSync(join(tmpdir(), 'plb-bench-config-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('the resolved configuration of a bench', () => {
  const flags = benchFlagValues(out, 'config', 20432, {
    strategies: 'plb,plb-admit,via',
    mixes: '25:75,50:50',
    via: '127.0.0.1:20400',
    seed: 9,
    'slow-start': '12s',
    borrow: 'off',
  });

  it('resolves the flags into config.json fields, every run from them', () => {
    const bench = resolveBenchFlags(flags);
    expect(bench.strategies).toEqual(['plb', 'plb-admit', 'via:127.0.0.1:20400']);
    expect(bench.runs).toHaveLength(6);
    expect(bench.config.slowStartMs).toBe(12_000);
    expect(bench.config.borrowing?.premium.enabled).toBe(false);
    expect(bench.config.via).toEqual({
      label: '127.0.0.1:20400',
      endpoints: { premium: '127.0.0.1:20400', freemium: '127.0.0.1:20400' },
    });
    const series = { ...bench.config, replicaCpus: 0.25 };
    const [plb, admit, via] = bench.runs.slice(0, 3).map((r) => runConfig(series, r));
    // Admission options and the balancer belong to the strategies that use them.
    expect(plb?.admission).toBeUndefined();
    expect(plb?.via).toBeUndefined();
    expect(admit?.admission).toEqual(bench.config.admission);
    expect(via?.via).toEqual(bench.config.via);
    expect(plb).toMatchObject({ strategy: 'plb', seed: 9, repeat: 1, workload: { mix: { premium: 25 } } });
    // What the runner writes is what config.json's schema reads.
    expect(configSchema.safeParse(JSON.parse(JSON.stringify(admit))).success).toBe(true);
  });

  it("builds each run's router from its config alone", () => {
    const bench = resolveBenchFlags(flags);
    const config = runConfig({ ...bench.config, replicaCpus: 0.25 }, bench.runs[0]!);
    const router = routerFor(config)(['r1', 'r2', 'r3', 'r4', 'r5'], () => undefined);
    expect(router.snapshot().map((s) => s.id)).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
    expect(router.admit('premium', 0).replica).toMatch(/^r[1-5]$/);
  });
});

describe('checkBasePort: the one check of a base port', () => {
  it('takes 1024 up to 65535 less the replicas, and names the field', () => {
    expect(checkBasePort(1024, 5)).toBe(1024);
    expect(checkBasePort(65530, 5)).toBe(65530);
    expect(() => checkBasePort(80, 5)).toThrow(
      /^--base-port: must be an integer from 1024 to 65530 \(got 80\)$/,
    );
    expect(() => checkBasePort(65531, 5, 'base-port')).toThrow(/^base-port: must be at most 65530/);
    expect(() => checkBasePort(70000, 0)).toThrow(/^--base-port: must be at most 65535 \(got 70000\)$/);
    expect(() => checkBasePort(2000.5, 0)).toThrow(/must be an integer/);
  });
});
