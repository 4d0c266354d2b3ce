/**
 * One node of a run over several nodes (`--worker-index i`): its run directory is a run of its own
 * (its share's values only), and every recorder call is also appended to calls.jsonl, in the
 * workers' wire format ([instance, method, ...args], -1: not a session's), so `plb bench merge`
 * can replay every node's values into one recorder: the merged run's per-second histograms and
 * summary are then made by the same code as any run's, from the same raw values.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { appendFile, type AppendFile } from '../../metrics/store/append-file.js';
import type { Recorder, RunWriter } from '../../metrics/types.js';
import { WorkerFigures } from '../../metrics/workers/worker-book.js';
import type { RoutersConfig } from '../../run-format/config.js';
import type { WorkersSummary } from '../../run-format/summary.js';
import type { RecordedCall } from './protocol.js';
import { bookFigures, CLIENT_CALLS, isReplayable } from './replay.js';

/** The part's raw values, beside the run's own files. */
export const CALLS_FILE = 'calls.jsonl';

/** This node's share: worker `index` of `count`, on the plan's t0 `startAtMs` (epoch ms). */
export interface NodeShare {
  index: number;
  count: number;
  startAtMs: number;
}

/** The share a run's config gives it (undefined: not a node of several). */
export function nodeShare(r: RoutersConfig | undefined): NodeShare | undefined {
  if (r?.workerIndex === undefined || r.workers === undefined || r.startAt === undefined) return undefined;
  return { index: r.workerIndex, count: r.workers, startAtMs: Date.parse(r.startAt) };
}

export class NodeLog {
  readonly figures: WorkerFigures;
  /** The run's writer, its recorder logging every call (as instance -1) before it records it. */
  readonly writer: RunWriter;
  private lines: string[] = [];
  private readonly file: AppendFile;

  constructor(
    private readonly base: RunWriter,
    share: NodeShare,
    routers: number,
  ) {
    const instances = Array.from({ length: routers }, (_, i) => i).filter(
      (i) => i % share.count === share.index,
    );
    this.figures = new WorkerFigures(share.index, instances, process.pid);
    // There from the start: a part without it is not a part (plb bench merge refuses it).
    writeFileSync(join(base.dir, CALLS_FILE), '');
    this.file = appendFile(join(base.dir, CALLS_FILE));
    const recorder = this.recorder(-1, base.recorder);
    this.writer = {
      dir: base.dir,
      recorder,
      writeConfig: (c) => base.writeConfig(c),
      event: (e) => base.event(e),
      // Each second the run writes, its calls go to disk too (a node killed loses at most a second).
      tick: (nowMs) => {
        this.flush();
        base.tick(nowMs);
      },
      progress: (nowMs, windowS) => base.progress(nowMs, windowS),
      finish: (endMs, complete, errors) => {
        this.close();
        return base.finish(endMs, complete, errors);
      },
    };
  }

  /** `inner` (the base recorder, or a per-router one over it) with every call logged as `instance`'s. */
  recorder(instance: number, inner: Recorder): Recorder {
    return new Proxy(inner, {
      get: (target, key) => {
        const f = (target as unknown as Record<string | symbol, unknown>)[key];
        const method = String(key);
        if (typeof f !== 'function' || !isReplayable(method)) return f;
        return (...args: unknown[]) => {
          const call: RecordedCall = [instance, method, ...args];
          if (CLIENT_CALLS.has(method)) bookFigures(this.figures, call);
          this.lines.push(JSON.stringify(call));
          return (f as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  }

  /** The node's own line of summary.json's `workers`. */
  summary(complete: boolean): WorkersSummary {
    this.figures.exit = complete ? 'done' : 'incomplete';
    return [this.figures.summary()];
  }

  private flush(): void {
    if (this.lines.length === 0) return;
    this.file.write(`${this.lines.join('\n')}\n`);
    this.lines = [];
  }

  private close(): void {
    this.flush();
    this.file.close();
  }
}
