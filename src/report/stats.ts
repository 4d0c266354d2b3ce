import { quantile } from '../metrics/math.js';

// The report states the method (render.ts, html.ts); quantiles live in metrics/math.ts.
export { QUANTILE_METHOD } from '../metrics/math.js';
import type { Stat } from '../run-format/report.js';

export function stat(values: readonly (number | null | undefined)[]): Stat {
  const xs = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  return { median: quantile(xs, 0.5), q1: quantile(xs, 0.25), q3: quantile(xs, 0.75), n: xs.length };
}
