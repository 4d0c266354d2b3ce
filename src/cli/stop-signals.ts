// Every way a bench is told to stop takes the same graceful path as Ctrl-C.
import { markOpenRunsIncomplete } from '../metrics/store/run-writer.js';

/** Signals that stop a bench, with the exit code each ends it with (128 + signal number). */
export const STOP_SIGNALS = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;
type StopSignal = keyof typeof STOP_SIGNALS;

export interface StopSignals {
  /** Aborted by the first stop signal. */
  signal: AbortSignal;
  /** Exit code of the first signal received (undefined: none yet). */
  code(): number | undefined;
  /** Removes the handlers. */
  dispose(): void;
}

export interface StopSignalDeps {
  warn: (line: string) => void;
  /** Default process.exit; tests pass their own. */
  exit?: (code: number) => void;
  /** Default the process; tests pass an EventEmitter. */
  target?: Pick<NodeJS.Process, 'on' | 'off'>;
  /** Given (`plb proxy`): SIGHUP calls it instead of stopping, as a daemon's reload. */
  reload?: () => void;
}

/**
 * First SIGINT/SIGTERM/SIGHUP (SIGHUP: unless `reload` is given): abort (faults reverted, the partial summary kept). The second:
 * exit at once, but first mark every run directory still open as incomplete (synchronous writes),
 * so even a hurried stop never leaves a run that looks whole.
 */
export function handleStopSignals(deps: StopSignalDeps): StopSignals {
  const abort = new AbortController();
  const target = deps.target ?? process;
  const exit = deps.exit ?? ((code: number) => process.exit(code));
  let first: number | undefined;
  const handlers = (Object.keys(STOP_SIGNALS) as StopSignal[]).map((sig) => {
    const reload = sig === 'SIGHUP' ? deps.reload : undefined;
    const on = (): void => {
      if (reload) return reload();
      if (first === undefined) {
        first = STOP_SIGNALS[sig];
        deps.warn(`${sig}: stopping gracefully (a second Ctrl-C or signal exits at once)`);
        abort.abort();
        return;
      }
      markOpenRunsIncomplete(`${sig} (second stop signal): exited at once`);
      exit(first);
    };
    target.on(sig, on);
    return { sig, on };
  });
  return {
    signal: abort.signal,
    code: () => first,
    dispose: () => {
      for (const { sig, on } of handlers) target.off(sig, on);
    },
  };
}
