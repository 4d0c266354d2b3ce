// Progress of a series (bench matrix, or bench run with several runs): runs done of total, time
// elapsed, and an ETA from the plan's length and the overhead measured per run so far.

/** 75 -> "1m15s", 3700 -> "1h01m40s". */
export function formatSeconds(totalS: number): string {
  const s = Math.max(0, Math.round(totalS));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h > 0) return `${h}h${String(m).padStart(2, '0')}m${String(sec).padStart(2, '0')}s`;
  if (m > 0) return `${m}m${String(sec).padStart(2, '0')}s`;
  return `${sec}s`;
}

export interface SeriesProgressState {
  total: number;
  /** Runs finished. */
  done: number;
  /** Seconds since the series started. */
  elapsedS: number;
  /** Each run's plan length, seconds. */
  planS: number;
  /** Wall-clock seconds of the finished runs, each (reset, dataset, warm-up, plan, finishing). */
  runWallS: readonly number[];
}

/**
 * Seconds left: the runs not finished times (plan length + the mean overhead a finished run had
 * beyond its plan), less what the current run has already spent. Null before a run has finished:
 * the overhead (cluster reset, dataset, calibration) is not known yet, only the plan's floor.
 */
export function etaSeconds(p: SeriesProgressState, currentRunS = 0): number | null {
  if (p.runWallS.length === 0) return null;
  const overhead = p.runWallS.reduce((a, b) => a + Math.max(0, b - p.planS), 0) / p.runWallS.length;
  const left = (p.total - p.done) * (p.planS + overhead) - currentRunS;
  return Math.max(0, left);
}

/** `[######------]`: a text bar, for a terminal only. */
export function progressBar(done: number, total: number, width = 20): string {
  const filled = total > 0 ? Math.round((done / total) * width) : 0;
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
}

/** One line: "series: 2/9 runs done, elapsed 4m10s, ETA 10m30s (plan 1m00s + 5s a run)". */
export function seriesProgressLine(p: SeriesProgressState, opts: { bar?: boolean } = {}): string {
  const eta = etaSeconds(p);
  const overhead =
    p.runWallS.length === 0
      ? null
      : p.runWallS.reduce((a, b) => a + Math.max(0, b - p.planS), 0) / p.runWallS.length;
  const etaText =
    eta === null
      ? `ETA at least ${formatSeconds((p.total - p.done) * p.planS)} (plan ${formatSeconds(p.planS)} a run; overhead measured after the first)`
      : `ETA ${formatSeconds(eta)} (plan ${formatSeconds(p.planS)} + ${formatSeconds(overhead ?? 0)} a run)`;
  const head = opts.bar ? `${progressBar(p.done, p.total)} ` : '';
  return `${head}series: ${p.done}/${p.total} runs done, elapsed ${formatSeconds(p.elapsedS)}, ${etaText}`;
}

/**
 * Follows a series from the outside: `runStarted` when a run begins (the series builds its writer
 * then), `finished` at the end. Calls `emit` with a progress line at each.
 */
export function trackSeries(opts: {
  total: number;
  planS: number;
  emit: (line: string) => void;
  bar?: boolean;
  now?: () => number;
}): { runStarted: (index: number) => void; finished: () => void } {
  const now = opts.now ?? Date.now;
  const start = now();
  const runWallS: number[] = [];
  let current: { index: number; at: number } | null = null;
  const state = (done: number): SeriesProgressState => ({
    total: opts.total,
    done,
    elapsedS: (now() - start) / 1000,
    planS: opts.planS,
    runWallS,
  });
  const close = (): void => {
    if (current !== null) runWallS.push((now() - current.at) / 1000);
  };
  return {
    runStarted: (index) => {
      if (current?.index === index) return;
      close();
      current = { index, at: now() };
      opts.emit(seriesProgressLine(state(index), { bar: opts.bar ?? false }));
    },
    finished: () => {
      close();
      current = null;
      opts.emit(seriesProgressLine(state(runWallS.length), { bar: opts.bar ?? false }));
    },
  };
}
