/**
 * The parent side of `--workers W`: W worker processes (worker-main.ts), each running the routers
 * and sessions of the instances i with i mod W = w. The parent keeps the plan, the fault injector
 * and the recorder: every value a worker measured is recorded here as if measured here (its
 * timestamps are on the plan's timeline), so the per-second histograms are the exact merge of the
 * workers' values. A worker that exits before it said it was done is a death: recorded, the run
 * marked incomplete, the others' values kept.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Credentials, Endpoint } from '../../core/endpoint.js';
import { PlbError } from '../../core/errors.js';
import type { RouterBook } from '../../metrics/routers/router-book.js';
import type { Recorder, RunWriter } from '../../metrics/types.js';
import { WorkerFigures } from '../../metrics/workers/worker-book.js';
import type { BenchConfig } from '../../run-format/config.js';
import type { WorkersSummary } from '../../run-format/summary.js';
import { isFlip } from '../router-fleet.js';
import { epochNow, type RecordedCall, type StartMessage, type WorkerMessage } from './protocol.js';
import { bookFigures, CLIENT_CALLS, replayInto } from './replay.js';

const READY_TIMEOUT_MS = 30_000;

export interface PoolInputs {
  config: BenchConfig;
  count: number;
  endpoints: Endpoint[];
  creds: Credentials;
  ids: string[];
  writer: RunWriter;
  /** Per-router figures (--routers N > 1): the calls of instance i booked to router i. */
  book: RouterBook | undefined;
  log: (line: string) => void;
  /** A worker died or failed: the reason (the run is then incomplete). */
  onLost: (reason: string) => void;
}

interface Worker {
  child: ChildProcess;
  figures: WorkerFigures;
  done: boolean;
  exited: Promise<void>;
  /** Every value up to this time (plan ms) has arrived. */
  throughMs: number;
  gone: boolean;
}

export class WorkerPool {
  private readonly workers: Worker[] = [];
  private readonly recorders = new Map<number, Recorder>();

  constructor(private readonly x: PoolInputs) {
    const cores = availableParallelism();
    if (x.count > cores)
      x.log(`--workers ${x.count}: more than this host's ${cores} cores (realism, not speed)`);
  }

  /** Forks the workers and waits until each has loaded (a worker that cannot: one line). */
  async fork(): Promise<void> {
    const n = this.x.config.routers?.count ?? 1;
    const [entry, execArgv] = workerEntry();
    for (let w = 0; w < this.x.count; w++) {
      const child = fork(entry, [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      const instances = Array.from({ length: n }, (_, i) => i).filter((i) => i % this.x.count === w);
      const figures = new WorkerFigures(w, instances, child.pid ?? null);
      const worker: Worker = {
        child,
        figures,
        done: false,
        exited: Promise.resolve(),
        throughMs: 0,
        gone: false,
      };
      this.x.log(`worker ${w}: pid ${child.pid ?? '?'}, instances ${instances.join(', ')}`);
      worker.exited = new Promise((resolve) => {
        child.on('exit', (code, signal) => {
          worker.gone = true;
          figures.exit = worker.done ? 'done' : signal ? `signal ${signal}` : `exit ${code ?? '?'}`;
          if (!worker.done)
            this.x.onLost(
              `worker ${w} (pid ${child.pid ?? '?'}) ended before its share was done: ${figures.exit}`,
            );
          resolve();
        });
      });
      child.on('message', (m: WorkerMessage) => this.receive(worker, m));
      this.workers.push(worker);
    }
    await Promise.all(this.workers.map((w) => ready(w.child)));
  }

  /** Starts every worker on the plan's timeline: `t0EpochMs` is the parent's t0. */
  start(t0EpochMs: number): void {
    for (const w of this.workers) {
      const m: StartMessage = {
        type: 'start',
        config: this.x.config,
        endpoints: this.x.endpoints,
        creds: this.x.creds,
        ids: this.x.ids,
        index: w.figures.worker,
        count: this.x.count,
        t0EpochMs,
      };
      w.child.send(m);
    }
  }

  /** The plan ended: every worker winds down, sends what it has and exits (bounded by `timeoutMs`). */
  async stop(timeoutMs: number): Promise<void> {
    for (const w of this.workers) if (w.child.connected) w.child.send({ type: 'stop' });
    const all = Promise.all(this.workers.map((w) => w.exited));
    const timer = setTimeout(() => {
      for (const w of this.workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    }, timeoutMs);
    await all;
    clearTimeout(timer);
  }

  /** The plan time up to which every live worker's values have arrived (a second is written after it). */
  throughMs(): number {
    let t = Infinity;
    for (const w of this.workers) if (!w.gone) t = Math.min(t, w.throughMs);
    return t;
  }

  summary(): WorkersSummary {
    return this.workers.map((w) => w.figures.summary());
  }

  private receive(w: Worker, m: WorkerMessage): void {
    if (m.type === 'calls') {
      for (const c of m.calls) this.replay(w.figures, c);
      w.throughMs = Math.max(w.throughMs, m.throughMs);
    } else if (m.type === 'event') {
      this.x.writer.event(m.event);
      const router = typeof m.event.router === 'number' ? m.event.router : 0;
      if (m.event.type === 'role' && isFlip(String(m.event.reason))) this.x.book?.flip(router, m.event.tMs);
    } else if (m.type === 'log') {
      this.x.log(`worker ${w.figures.worker}: ${m.line}`);
    } else if (m.type === 'done') {
      w.done = m.error === undefined;
      if (m.error !== undefined) this.x.onLost(`worker ${w.figures.worker} failed: ${m.error}`);
    }
  }

  private replay(figures: WorkerFigures, call: RecordedCall): void {
    if (!CLIENT_CALLS.has(call[1])) return;
    bookFigures(figures, call);
    replayInto(this.recorderOf(call[0]), call);
  }

  private recorderOf(instance: number): Recorder {
    const base = this.x.writer.recorder;
    if (instance < 0 || this.x.book === undefined) return base;
    let r = this.recorders.get(instance);
    if (r === undefined) {
      r = this.x.book.recorderFor(instance, base);
      this.recorders.set(instance, r);
    }
    return r;
  }
}

/** The worker's module and the node flags to run it: the built .js, or the .ts source under tsx (tests). */
function workerEntry(): [string, string[]] {
  const js = fileURLToPath(new URL('./worker-main.js', import.meta.url));
  if (existsSync(js)) return [js, []];
  const ts = fileURLToPath(new URL('./worker-main.ts', import.meta.url));
  return [ts, ['--import', 'tsx']];
}

function ready(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new PlbError('INTERNAL', `--workers: worker pid ${child.pid ?? '?'} did not start`)),
      READY_TIMEOUT_MS,
    );
    child.on('message', (m: WorkerMessage) => {
      if (m.type !== 'ready') return;
      clearTimeout(timer);
      resolve();
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new PlbError('INTERNAL', `--workers: a worker exited (${code ?? 'signal'}) before it started`));
    });
  });
}

/** The parent's t0 as an epoch time: `runNowMs` is the run clock's reading at this moment. */
export function t0Epoch(runNowMs: number): number {
  return epochNow() - runNowMs;
}

/**
 * The writer the sampler ticks: a second is written once every live worker's values of it have
 * arrived (each sends, every 100 ms, the time it has sent everything up to); a dead worker holds
 * nothing back, and the end of the run writes the rest.
 */
export function laggingTicks(writer: RunWriter, pool: WorkerPool): RunWriter {
  const at = (nowMs: number): number => Math.min(nowMs, pool.throughMs());
  return {
    dir: writer.dir,
    recorder: writer.recorder,
    writeConfig: (c) => writer.writeConfig(c),
    event: (e) => writer.event(e),
    tick: (nowMs) => writer.tick(at(nowMs)),
    progress: (nowMs, windowS) => writer.progress(at(nowMs), windowS),
    finish: (endMs, complete, errors) => writer.finish(endMs, complete, errors),
  };
}
