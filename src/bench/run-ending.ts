import type { Clock } from '../clock/index.js';
import { errorText } from '../core/errors.js';
import type { RunWriter } from '../metrics/types.js';
import type { RunSummary } from '../run-format/summary.js';

/**
 * Errors anywhere in a run are recorded and make it not complete; the first is rethrown after the
 * run directory is finished. Every step of the ending runs whatever failed before it.
 */
export class RunEnding {
  private readonly errors: string[] = [];
  private thrown: unknown;
  private failed = false;

  constructor(
    private readonly writer: RunWriter,
    private readonly clock: Clock,
    private readonly log: (line: string) => void,
  ) {}

  async guard<T>(what: string, step: () => Promise<T> | T): Promise<T | undefined> {
    try {
      return await step();
    } catch (err) {
      if (!this.failed) this.thrown = err;
      this.failed = true;
      const message = `${what}: ${errorText(err)}`;
      this.errors.push(message);
      this.log(`error: ${message}`);
      try {
        this.writer.event({ type: 'note', tMs: this.clock.now(), what: 'error', message });
      } catch {
        // The run directory itself failed: the error still goes into the summary.
      }
      return undefined;
    }
  }

  /** A part of the run was lost (a worker died): recorded as an error, the run incomplete, nothing thrown. */
  lost(message: string): void {
    this.errors.push(message);
  }

  async finish(endMs: number, interrupted: boolean): Promise<RunSummary> {
    const state = interrupted ? 'interrupted' : this.errors.length > 0 ? 'failed' : 'finished';
    await this.guard('closing the run', () => {
      this.writer.event({ type: 'run', tMs: endMs, state });
      this.writer.tick(endMs);
    });
    const summary = this.writer.finish(endMs, !interrupted, this.errors);
    if (this.failed) throw this.thrown;
    return summary;
  }
}
