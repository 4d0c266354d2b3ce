/**
 * A drain for rolling restarts: the listeners close (new clients are refused by the kernel, so a
 * balancer or another proxy takes them), open sessions go on until they end by themselves, then
 * the runner exits 0. Started by SIGUSR2 or POST /drain (admin-routes.ts). --drain-timeout bounds
 * the wait (0: none); past it the rest are closed as at a stop (57P01).
 */

/** The signal that starts a drain (SIGHUP reloads, SIGINT/SIGTERM stop). */
export const DRAIN_SIGNAL = 'SIGUSR2';

export interface DrainTarget {
  /** Closes the listeners (the same close a stop makes; once). */
  closeListeners(): void;
  readonly clients: { readonly size: number; whenEmpty(): Promise<void> };
}

/** The replica listeners and the primary listener drain as one. */
export function drainTargets(targets: readonly DrainTarget[]): DrainTarget {
  return {
    closeListeners: () => targets.forEach((t) => t.closeListeners()),
    clients: {
      get size() {
        return targets.reduce((n, t) => n + t.clients.size, 0);
      },
      whenEmpty: () => Promise.all(targets.map((t) => t.clients.whenEmpty())).then(() => undefined),
    },
  };
}

export type DrainEnd = 'drained' | 'timeout';

export class ProxyDrain {
  private startedMs: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private end: ((how: DrainEnd) => void) | undefined;
  /** Resolves once a started drain is over: every session ended, or --drain-timeout passed. */
  readonly finished: Promise<DrainEnd>;

  constructor(
    private readonly target: DrainTarget,
    private readonly opts: { timeoutMs: number; log: (line: string) => void },
  ) {
    this.finished = new Promise((resolve) => (this.end = resolve));
  }

  get draining(): boolean {
    return this.startedMs !== undefined;
  }

  /** Starts it (false: it had started already); `why` names the trigger in the log. */
  start(why: string): boolean {
    if (this.startedMs !== undefined) {
      this.opts.log(`draining already (${why}): ${this.target.clients.size} session(s) open`);
      return false;
    }
    const t0 = Date.now();
    this.startedMs = t0;
    this.target.closeListeners();
    const { clients } = this.target;
    const { timeoutMs, log } = this.opts;
    log(
      `draining (${why}): listeners closed; waiting for ${clients.size} session(s) to end ` +
        (timeoutMs > 0 ? `(at most ${fmt(timeoutMs)}, --drain-timeout)` : '(no time limit)'),
    );
    if (timeoutMs > 0)
      this.timer = setTimeout(() => {
        log(
          `draining: --drain-timeout ${fmt(timeoutMs)} passed with ${clients.size} session(s) open; closing them`,
        );
        this.finish('timeout');
      }, timeoutMs);
    void clients.whenEmpty().then(() => {
      if (this.end === undefined) return;
      log(`drained: the last session ended ${fmt(Date.now() - t0)} after the drain began; exiting`);
      this.finish('drained');
    });
    return true;
  }

  /** Stops its timer (the runner stops for another reason). */
  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
  }

  private finish(how: DrainEnd): void {
    this.dispose();
    const end = this.end;
    this.end = undefined;
    end?.(how);
  }
}

const fmt = (ms: number): string => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`);
