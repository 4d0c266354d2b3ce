/**
 * Hook runs into a run's events.jsonl: the writer is wrapped so hook events carry run time (from
 * the run's 'started' event) and stop once the run is finished. Hooks outside a run (the reset
 * before it) are only logged.
 */
import type { RunEvent, RunWriter } from '../metrics/types.js';
import type { ExternalDriver, HookRecord } from '../cluster/external/index.js';

function hookLine(r: HookRecord): string {
  const how = r.error !== undefined ? `FAILED: ${r.error}` : `exit ${r.exitCode ?? '-'}`;
  return `hook ${r.hook} ${r.replica}: ${how} (${r.durationMs} ms)`;
}

export function hookEvents(
  driver: ExternalDriver,
  writer: RunWriter,
  log: (line: string) => void,
): RunWriter {
  let t0: number | undefined;
  let closed = false;
  driver.onHook = (r) => {
    log(hookLine(r));
    if (t0 === undefined || closed) return;
    writer.event({ type: 'hook', tMs: Math.round(performance.now() - t0), ...r });
  };
  return {
    get dir() {
      return writer.dir;
    },
    get recorder() {
      return writer.recorder;
    },
    writeConfig: (config) => writer.writeConfig(config),
    event: (e: RunEvent) => {
      // The run's clock starts as it writes this event (bench/run.ts): hook times count from here.
      if (e.type === 'run' && e['state'] === 'started') t0 = performance.now() - e.tMs;
      writer.event(e);
    },
    tick: (nowMs) => writer.tick(nowMs),
    progress: (nowMs, windowS) => writer.progress(nowMs, windowS),
    finish: (endMs, complete, errors) => {
      closed = true;
      return writer.finish(endMs, complete, errors);
    },
  };
}
