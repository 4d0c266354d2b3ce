// Issue 11, item 5: a run killed hard is still reportable. Its summary is rebuilt from what it
// appended as it went (per-second histograms and counts), marked incomplete.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRun } from '../../src/metrics/store/load-run.js';
import { createRunWriter, RUN_FILES, type RunWriterOptions } from '../../src/metrics/store/run-writer.js';
import type { RunWriter } from '../../src/metrics/types.js';
import { writeReports } from '../../src/report/report.js';

const root = mkdtempSync(join(tmpdir(), 'plb-crash-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const options = (runId: string): RunWriterOptions => ({
  outDir: root,
  runId,
  strategy: 'plb',
  plan: 'crash',
  seed: 7,
  clients: 4,
  mix: { premium: 25, freemium: 75 },
  replicas: ['r1', 'r2'],
  refWindowS: 10,
  warmupS: 2,
  clock: () => new Date(Date.UTC(2026, 10, 30, 9, 0, 0)),
});

/** 40 s: queries every 10 ms on both classes, r1 down at 20 s, sessions, CPU, lag, the client's loop. */
function feed(w: RunWriter, untilMs: number): void {
  const rec = w.recorder;
  w.event({ type: 'run', tMs: 0, state: 'started' });
  for (let t = 0; t < untilMs; t += 10) {
    const down = t >= 20_000;
    if (t === 20_000) w.event({ type: 'fault', tMs: t, replica: 'r1', action: 'down' });
    if (t === 21_500) w.event({ type: 'detect', tMs: t, replica: 'r1', state: 'down', via: 'health' });
    rec.queryDone('premium', down ? 'r2' : 'r1', t, down ? 3 + (t % 7) : 1 + (t % 3));
    rec.queryDone('freemium', 'r2', t, 2 + (t % 5));
    if (t % 1000 === 0) rec.sessionOpened('freemium', 'r2', t, 1 + (t % 3000) / 1000);
    if (t % 1000 === 500) {
      rec.sessionClosed('freemium', 'r2', t - 500, t, t % 4000 === 500 ? 'failed' : 'finished');
      rec.cpu(t, { r1: down ? null : 0.4, r2: down ? 0.8 : 0.5 });
      rec.harnessCpu(t, 0.2);
      rec.hostCpu(t, 0.5 + (t % 3000) / 10_000, t % 2000 === 500 ? 0.02 : 0);
      // A write run: r2's lag grows, r1 answers nothing once down.
      rec.lag(t, {
        r1: { lagMs: down ? null : 0, replayLagMs: null, lagBytes: down ? null : 0 },
        r2: { lagMs: (t % 7000) / 10, replayLagMs: null, lagBytes: t % 9000 },
      });
    }
    if (t === 20_000) rec.queryFailed('premium', 'r1', t + 3, 'terminated');
    if (t === 20_000) rec.replicaFailure('r1', t + 1, 'unreachable');
    rec.loopDelay(t, 1 + (t % 4));
    if (t % 1000 === 900)
      rec.replicaState(t, {
        r1: { premium: down ? 0 : 1, freemium: 0, role: 'premium', healthy: !down },
        r2: { premium: down ? 1 : 0, freemium: 1, role: 'freemium', healthy: true },
      });
    if ((t + 10) % 1000 === 0) w.tick(t + 10);
  }
}

/** A pid that is surely gone: a child that ran and exited. */
const deadPid = (): number => spawnSync(process.execPath, ['-e', '0']).pid;

describe('a run killed before finish()', () => {
  // The same feed twice: one finished at 35 s (exact), one "killed" right after its 35th second.
  const exactWriter = createRunWriter(options('exact'));
  exactWriter.writeConfig({ strategy: 'plb' });
  feed(exactWriter, 35_000);
  const exact = exactWriter.finish(35_000, false);
  const killed = createRunWriter(options('killed'));
  killed.writeConfig({ strategy: 'plb' });
  feed(killed, 35_000);
  // What kill -9 leaves: no finish(); the RUNNING marker names a process that is gone.
  const marker = JSON.parse(readFileSync(join(killed.dir, RUN_FILES.running), 'utf8')) as { pid: number };
  writeFileSync(join(killed.dir, RUN_FILES.running), JSON.stringify({ ...marker, pid: deadPid() }));

  it('writes per-second interval histograms per class as it goes', () => {
    const hlog = readFileSync(join(killed.dir, 'histograms', 'premium.hlog'), 'utf8');
    const intervals = hlog.split('\n').filter((l) => /^\d/.test(l));
    expect(intervals).toHaveLength(35);
    expect(intervals[3]).toMatch(/^3\.000,1\.000,/);
    expect(existsSync(join(killed.dir, RUN_FILES.summary))).toBe(false);
  });

  it('rebuilds the summary up to the last whole second, marked incomplete, matching the exact one', () => {
    const run = loadRun(killed.dir);
    const s = run.summary;
    expect(run.status).toBe('incomplete');
    expect(s.complete).toBe(false);
    expect(s.rebuilt).toBe(true);
    expect(s.errors?.[0]).toMatch(/^killed before it finished \(pid \d+ is gone\): .* up to 35 s/);
    expect(s.durationS).toBe(35);
    expect(s.runId).toBe('killed');
    expect([s.strategy, s.plan, s.seed, s.clients]).toEqual(['plb', 'crash', 7, 4]);
    expect(s.phases.map((p) => [p.name, p.startS, p.endS, p.survivors])).toEqual(
      exact.phases.map((p) => [p.name, p.startS, p.endS, p.survivors]),
    );
    expect(s.phases.map((p) => p.name)).toEqual(['ref', 'down-1']);
    expect(exact.phases[1]?.classes.premium.queries).toBe(1500);
    expect(s.detection).toEqual(exact.detection);
    s.phases.forEach((p, i) => {
      const e = exact.phases[i]!;
      for (const cls of ['premium', 'freemium'] as const) {
        const a = p.classes[cls];
        const b = e.classes[cls];
        expect([
          a.queries,
          a.errors,
          a.goodput,
          a.sessionsOpened,
          a.sessionsClosed,
          a.sessionsFailed,
        ]).toEqual([b.queries, b.errors, b.goodput, b.sessionsOpened, b.sessionsClosed, b.sessionsFailed]);
        // Same HdrHistogram values: identical percentiles.
        expect([a.p50, a.p95, a.p99]).toEqual([b.p50, b.p95, b.p99]);
        expect(a.goodputRetention).toEqual(b.goodputRetention);
        expect(a.connectP95Ms).toEqual(b.connectP95Ms);
        // Lifetimes from a 3-digit histogram instead of exact values.
        if (b.lifetimeP95Ms !== null) expect(a.lifetimeP95Ms).toBeCloseTo(b.lifetimeP95Ms, -1);
      }
      for (const id of ['r1', 'r2']) {
        const a = p.replicas[id]!;
        const b = e.replicas[id]!;
        expect([a.up, a.sessionsOpened, a.queries, a.unreachable]).toEqual([
          b.up,
          b.sessionsOpened,
          b.queries,
          b.unreachable,
        ]);
        expect(a.cpuMean).toEqual(b.cpuMean);
        expect(a.lag).toEqual(b.lag);
        if (id === 'r2') expect(a.lag?.samples).toBeGreaterThan(0);
      }
      expect(p.harness?.loopP99Ms).toEqual(e.harness?.loopP99Ms);
      // The host's CPU comes back from timeline.csv's host columns.
      expect(e.harness?.host?.busyMean).toBeGreaterThan(0);
      expect(p.harness?.host).toEqual(e.harness?.host);
    });
  });

  it('rebuilds the fault interval too, and adds it to a summary written before it existed', () => {
    const rebuilt = loadRun(killed.dir).summary.faultInterval!;
    const want = exact.faultInterval!;
    expect([rebuilt.name, rebuilt.startS, rebuilt.endS]).toEqual(['fault', 20, 35]);
    for (const cls of ['premium', 'freemium'] as const) {
      const a = rebuilt.classes[cls];
      const b = want.classes[cls];
      expect([a.queries, a.goodput, a.p95, a.goodputRetention]).toEqual([
        b.queries,
        b.goodput,
        b.p95,
        b.goodputRetention,
      ]);
    }
    // An older summary.json without the entry: loadRun computes it from the per-second files.
    const file = join(exactWriter.dir, RUN_FILES.summary);
    const { faultInterval: _gone, ...older } = JSON.parse(readFileSync(file, 'utf8')) as typeof exact;
    writeFileSync(file, JSON.stringify(older));
    const again = loadRun(exactWriter.dir).summary.faultInterval!;
    expect([again.startS, again.endS, again.classes.premium.queries, again.classes.premium.p95]).toEqual([
      20,
      35,
      want.classes.premium.queries,
      want.classes.premium.p95,
    ]);
    expect(again.cpuMean).toEqual(want.cpuMean);
  });

  it('plb report lists it (rendered, incomplete, reason given) and keeps it out of the medians', async () => {
    const done = createRunWriter(options('finished'));
    done.writeConfig({});
    feed(done, 35_000);
    done.event({ type: 'run', tMs: 35_000, state: 'finished' });
    done.finish(35_000, true);
    rmSync(exactWriter.dir, { recursive: true });
    const out = await writeReports([root], { format: 'table' });
    expect(out.runs.map((r) => [r.summary.runId, r.status])).toEqual([
      ['finished', 'complete'],
      ['killed', 'incomplete'],
    ]);
    expect(out.groups[0]?.runIds).toEqual(['finished']);
    expect(out.text).toMatch(/incomplete run killed: killed before it finished/);
    expect(out.text).toMatch(/left out of the medians .*: killed/);
    expect(readFileSync(join(killed.dir, 'report.html'), 'utf8')).toMatch(/did not finish/);
    // Reading does not change the run directory (beyond report.html).
    expect(readdirSync(killed.dir)).not.toContain('summary.json');
  });
});

describe('a run killed in its first second', () => {
  it('has no whole second on disk, yet reports (no phases, incomplete)', async () => {
    const w = createRunWriter({ ...options('instant'), outDir: join(root, 'instant') });
    w.writeConfig({});
    w.event({ type: 'run', tMs: 0, state: 'started' });
    const marker = JSON.parse(readFileSync(join(w.dir, RUN_FILES.running), 'utf8')) as { pid: number };
    writeFileSync(join(w.dir, RUN_FILES.running), JSON.stringify({ ...marker, pid: deadPid() }));
    const out = await writeReports([w.dir], { format: 'table' });
    expect(out.runs[0]?.summary.phases).toEqual([]);
    expect(out.runs[0]?.summary.errors?.[0]).toMatch(/up to 0 s/);
    expect(existsSync(join(w.dir, 'report.html'))).toBe(true);
  });
});

describe('a writer process killed with SIGKILL', () => {
  it('leaves a run directory the report can summarise', async () => {
    const script = `
      import { createRunWriter } from ${JSON.stringify(join(import.meta.dirname, '../../src/metrics/store/run-writer.ts'))};
      const w = createRunWriter({ outDir: ${JSON.stringify(root)}, runId: 'sigkill', strategy: 'rr', plan: 'p',
        seed: 1, clients: 2, mix: { premium: 50, freemium: 50 }, replicas: ['r1'], refWindowS: 1, warmupS: 0 });
      w.writeConfig({});
      const t0 = Date.now();
      setInterval(() => {
        const t = Date.now() - t0;
        w.recorder.queryDone('premium', 'r1', t, 2);
        w.recorder.queryDone('freemium', 'r1', t, 3);
        w.tick(t);
        if (t > 2200) console.log('ready');
      }, 5);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const run = loadRun(join(root, 'sigkill'));
    expect(run.status).toBe('incomplete');
    expect(run.summary.errors?.[0]).toMatch(/^killed before it finished/);
    expect(run.summary.durationS).toBeGreaterThanOrEqual(2);
    const steady = run.summary.phases[0];
    expect(steady?.name).toBe('steady');
    expect(steady?.classes.premium.queries).toBeGreaterThan(100);
    expect(steady?.classes.premium.p50).toBeCloseTo(2, 1);
  }, 20_000);
});
