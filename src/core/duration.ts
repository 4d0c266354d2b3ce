/**
 * Parses a duration in seconds: a number, or a string like `90`, `90s`, `2m`, `1m30s`, `500ms`, `1h`.
 * Returns undefined when the value is not a duration (negative numbers are returned as such).
 */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const s = value.trim();
  if (/^-?\d+(\.\d+)?$/.test(s)) return Number(s);
  const m =
    /^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$/.exec(s);
  if (!m || s === '') return undefined;
  const [, h, min, sec, ms] = m;
  const total = Number(h ?? 0) * 3600 + Number(min ?? 0) * 60 + Number(sec ?? 0) + Number(ms ?? 0) / 1000;
  // Round to the millisecond so "1m30.1s" does not print as 90.10000000000001.
  return Math.round(total * 1000) / 1000;
}
