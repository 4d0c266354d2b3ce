import { Flags } from '@oclif/core';

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
