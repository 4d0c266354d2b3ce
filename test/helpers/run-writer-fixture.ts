// A run writer's options and a synthetic run fed through its recorder, for the run-writer tests.
import type { RunWriterOptions } from '../../src/metrics/store/run-writer.js';
import type { RunWriter } from '../../src/metrics/types.js';
export const startedAt = new Date(Date.UTC(2026, 10, 30, 5, 15, 0));
export const options = (outDir: string): RunWriterOptions => ({
  outDir,
  strategy: 'plb',
  plan: 'Demo Cascade',
  seed: 42,
  clients: 8,
  mix: { premium: 25, freemium: 75 },
  replicas: ['r1', 'r2', 'r3'],
  refWindowS: 20,
  warmupS: 5,
  clock: () => startedAt,
});

/**
 * A synthetic run: both classes complete a query every 10 ms; premium runs on r1 (1 ms) until r1
 * goes down at 30 s, then on r2 (2 ms); freemium on r3 (0.5 ms, then 1.5 ms). One session per
 * second for freemium; premium's session on r1 fails at the fault. CPU and router state each second.
 */
export function feed(w: RunWriter, endMs: number, checkDuringRun?: (t: number) => void): void {
  const rec = w.recorder;
  w.event({ type: 'run', tMs: 0, state: 'started' });
  rec.sessionOpened('premium', 'r1', 0, 2);
  for (let t = 0; t < endMs; t += 10) {
    const down = t >= 30_000;
    if (t === 30_000) w.event({ type: 'fault', tMs: t, replica: 'r1', action: 'down' });
    if (t === 32_500) w.event({ type: 'detect', tMs: t, replica: 'r1', state: 'down', via: 'health' });
    rec.queryDone('premium', down ? 'r2' : 'r1', t, down ? 2 : 1);
    rec.queryDone('freemium', 'r3', t, down ? 1.5 : 0.5);
    if (t === 30_000) rec.queryFailed('premium', 'r1', t + 5, 'connection terminated');
    if (t === 30_000) {
      rec.replicaFailure('r1', t + 1, 'unreachable');
      rec.replicaFailure('r1', t + 2, 'unreachable');
      rec.sessionClosed('premium', 'r1', 0, 30_010, 'failed');
      rec.admissionFailed('premium', 30_011, 'NO_REPLICA');
      rec.admissionFailed('premium', 30_012, 'NO_REPLICA');
      rec.sessionOpened('premium', 'r2', 30_020, 4);
    }
    if (t === 15_000) rec.replicaFailure('r2', t, 'overloaded');
    if (t === 40_000) rec.replicaFailure('r3', t, 'slow');
    if (t === 40_000) rec.replicaFailure('r3', t, 'other'); // heard of, not counted
    if (t === 59_000) rec.sessionClosed('premium', 'r2', 30_020, 59_000, 'finished');
    if (t === 59_500) rec.sessionClosed('premium', 'r2', 50_000, 59_500, 'cut');
    if (t % 1000 === 0) rec.sessionOpened('freemium', 'r3', t, 1);
    if (t % 1000 === 500) {
      rec.sessionClosed('freemium', 'r3', t - 500, t, 'finished');
      rec.cpu(t, { r1: down ? null : 0.5, r2: down ? 0.7 : 0.3, r3: 0.4 });
      rec.harnessCpu(t, 0.25);
      rec.hostCpu(t, 0.6, 0.01);
    }
    // The client's 10 ms timer: 2 ms late, but 30 ms late for all of 45..46 s (3% of down-1).
    rec.loopDelay(t, t >= 45_000 && t < 46_000 ? 30 : 2);
    if (t === 20_000) rec.loopDelay(t, 40);
    if (t % 1000 === 900) {
      rec.replicaState(t, {
        r1: { premium: down ? 0 : 1, freemium: 0, role: 'premium', healthy: t < 32_500 },
        r2: { premium: down ? 1 : 0, freemium: 0, role: 'mixed', healthy: true },
        r3: { premium: 0, freemium: 1, role: 'freemium', healthy: true },
      });
    }
    if ((t + 10) % 1000 === 0) {
      w.tick(t + 10);
      checkDuringRun?.(t + 10);
    }
  }
}
