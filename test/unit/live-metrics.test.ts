// --metrics-port: the live series (a teed recorder on its own registry), the 127.0.0.1 server,
// and a short simulated bench that serves them and closes the port at its end.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { register } from 'prom-client';
import { executeBench } from '../../src/bench/execute.js';
import { createLiveMetrics } from '../../src/metrics/live-metrics.js';
import { startMetricsServer } from '../../src/metrics/metrics-server.js';
import type { Recorder, RunWriter } from '../../src/metrics/types.js';
import type { RunSummary } from '../../src/run-format/summary.js';
import { benchFlagValues } from '../helpers/fixtures.js';

const root = mkdtempSync(join(tmpdir(), 'plb-live-metrics-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A writer that records nothing: the live series are what is under test. */
function fakeWriter(calls: string[]): RunWriter {
  const recorder = new Proxy({} as Recorder, {
    get: (_t, name) => () => calls.push(String(name)),
  });
  return {
    dir: '/runs/20261130-000000-plb-demo',
    recorder,
    writeConfig: () => undefined,
    event: () => undefined,
    tick: () => undefined,
    progress: () => ({
      phase: 'ref',
      premium: { p95: null, goodput: 0 },
      freemium: { p95: null, goodput: 0 },
    }),
    finish: () => ({}) as RunSummary,
  };
}

const up = (premium: number, freemium: number) => ({ premium, freemium, role: 'shared', healthy: true });

/** The value of one sample line of the exposition (`name{labels} value`). */
function sample(text: string, line: string): number | undefined {
  const hit = text.split('\n').find((l) => l.startsWith(`${line} `));
  return hit === undefined ? undefined : Number(hit.slice(line.length + 1));
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('live metrics', () => {
  it('tees every call to the run recorder and exposes latency, replicas, signals and phase', async () => {
    const live = createLiveMetrics();
    const calls: string[] = [];
    const w = live.tee(fakeWriter(calls), { strategy: 'plb', mix: '25:75' });
    const rec = w.recorder;
    for (let i = 0; i < 30; i++) rec.queryDone('premium', 'r1', 500 + i, 3);
    for (let i = 0; i < 10; i++) rec.queryDone('freemium', 'r2', 600 + i, 40);
    rec.sessionOpened('premium', 'r1', 100, 1);
    rec.cpu(900, { r1: 0.9, r2: 0.3, r3: null });
    rec.replicaState(1000, { r1: up(3, 0), r2: up(0, 5), r3: { ...up(0, 0), healthy: false } });
    expect(calls).toEqual([
      ...new Array<string>(40).fill('queryDone'),
      'sessionOpened',
      'cpu',
      'replicaState',
    ]);
    const text = await live.text();
    expect(sample(text, 'plb_query_latency_seconds_count{class="premium"}')).toBe(30);
    expect(sample(text, 'plb_query_latency_seconds_bucket{le="0.005",class="premium"}')).toBe(30);
    expect(sample(text, 'plb_query_latency_seconds_bucket{le="0.025",class="freemium"}')).toBe(0);
    expect(sample(text, 'plb_replica_queries_total{replica="r1"}')).toBe(30);
    expect(sample(text, 'plb_replica_sessions{replica="r2",class="freemium"}')).toBe(5);
    expect(sample(text, 'plb_replica_cpu_ratio{replica="r1"}')).toBe(0.9);
    expect(sample(text, 'plb_replica_cpu_ratio{replica="r3"}')).toBeUndefined();
    expect(sample(text, 'plb_replica_healthy{replica="r3"}')).toBe(0);
    // r1 and r2 healthy: queries 30/10 -> 1.5; CPU 0.9/0.3 -> 1.5; r2 never opened a session (silent at 10 s).
    expect(sample(text, 'plb_signal_query_share_spread')).toBe(1.5);
    expect(sample(text, 'plb_signal_cpu_share_spread')).toBe(1.5);
    expect(sample(text, 'plb_signal_alert{signal="queryShareSpread"}')).toBe(1);
    expect(sample(text, 'plb_signal_alert{signal="cpuShareSpread"}')).toBe(0);
    expect(sample(text, 'plb_signal_silent_replicas')).toBe(0);
    expect(
      sample(text, 'plb_run_info{run="20261130-000000-plb-demo",strategy="plb",mix="25:75",phase="ref"}'),
    ).toBe(1);
    rec.replicaState(11_000, { r1: up(3, 0), r2: up(0, 5), r3: up(0, 0) });
    expect(sample(await live.text(), 'plb_signal_silent_replicas')).toBe(2);
    rec.lag(11_000, { r1: { lagMs: 250, replayLagMs: null, lagBytes: 0 } });
    expect(sample(await live.text(), 'plb_replica_lag_seconds{replica="r1"}')).toBe(0.25);
    // Its own registry: nothing on prom-client's global one.
    expect(await register.metrics()).not.toContain('plb_');
    // A new run starts from zero.
    live.tee(fakeWriter([]), { strategy: 'rr', mix: '25:75' });
    expect(sample(await live.text(), 'plb_replica_queries_total{replica="r1"}')).toBeUndefined();
    live.close();
    expect(await live.text()).toBe('\n');
  });

  it('serves GET /metrics on 127.0.0.1; a port in use is one line naming the flag', async () => {
    const server = await startMetricsServer(0, () => Promise.resolve('plb_x 1\n'));
    const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    expect(await res.text()).toBe('plb_x 1\n');
    expect((await fetch(`http://127.0.0.1:${server.port}/`)).status).toBe(404);
    await expect(startMetricsServer(server.port, () => Promise.resolve(''))).rejects.toThrow(
      `--metrics-port: 127.0.0.1:${server.port} is in use`,
    );
    await server.close();
  });

  it('a simulated bench with --metrics-port runs, then frees the port; a port in use starts nothing', async () => {
    const plan = join(root, 'short.yaml');
    writeFileSync(plan, 'name: short\nduration: 12s\nwarmup: 2s\nreference: 5s\nreplicas: 3\nevents: []\n');
    const port = await freePort();
    const flags = (out: string) =>
      benchFlagValues(out, 'plb-live-test', 25432, {
        plan,
        clients: 8,
        seed: 3,
        driver: 'sim',
        json: true,
        'metrics-port': port,
      });
    const lines: string[] = [];
    const code = await executeBench(flags(join(root, 'a')), {
      log: () => undefined,
      warn: (l) => lines.push(l),
    });
    expect(code, lines.join('\n')).toBe(0);
    expect(lines).toContain(`live metrics: http://127.0.0.1:${port}/metrics`);
    // Closed at the end: the port is free again.
    const again = await startMetricsServer(port, () => Promise.resolve(''));
    const busy: string[] = [];
    const out = join(root, 'b');
    const code2 = await executeBench(flags(out), { log: () => undefined, warn: (l) => busy.push(l) });
    await again.close();
    expect(code2).toBe(1);
    expect(busy.at(-1)).toBe(`Error: --metrics-port: 127.0.0.1:${port} is in use`);
    expect(readdirSync(out)).toEqual([]);
  });
});
