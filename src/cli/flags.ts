import { Flags } from '@oclif/core';
import { parseDuration } from '../core/duration.js';
import { PlbError } from '../core/errors.js';

/**
 * A string flag whose value is checked as the command line is read: `check` throws a BAD_INPUT
 * naming `--<flag>`, so a wrong value is one line and exit 1 before the command starts. The text
 * stays the flag's value (its default shows in --help as written).
 */
export const checkedText = (check: (input: string, flag: string) => unknown) =>
  Flags.custom<string>({
    parse: async (input, _ctx, opts) => {
      check(input, `--${opts.name}`);
      return input;
    },
  });

/**
 * The one parser of a duration flag (`10s`, `500ms`, `1m30s`, a bare number of seconds) into ms:
 * >= 0, or > 0 with `positive`. `flag` is the flag's name, with or without its dashes; the error
 * is one BAD_INPUT naming it.
 */
export function durationMsFlag(flag: string, value: string, opts: { positive?: boolean } = {}): number {
  const s = parseDuration(value);
  if (s === undefined || !(opts.positive ? s > 0 : s >= 0)) {
    const what = opts.positive ? 'a duration > 0' : 'a duration';
    throw new PlbError(
      'BAD_INPUT',
      `--${flag.replace(/^--/, '')}: expected ${what} like 10s or 500ms (got "${value}")`,
    );
  }
  return s * 1000;
}
