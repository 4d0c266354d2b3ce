/** The kinds of bench flag whose value is checked as the command line is read (checks.ts). */
import { Flags } from '@oclif/core';
import { checkBenchValue } from './checks.js';

/**
 * A flag whose value is checked when the command line is read, by the same function executeBench
 * uses for a caller that passes values directly: one validation layer, one error line naming the
 * flag, exit 1, and nothing started. The value keeps the type executeBench takes.
 */
export const checkedString = Flags.custom<string>({
  parse: async (input, _ctx, opts) => {
    checkBenchValue(opts.name, input);
    return input;
  },
});
export const checkedNumber = Flags.custom<number>({
  parse: async (input, _ctx, opts) => {
    const n = input.trim() === '' ? NaN : Number(input);
    checkBenchValue(opts.name, n);
    return n;
  },
});

/** The list flags: a comma list, or the flag given several times. */
export const listFlag = Flags.custom<string>({
  multiple: true,
  delimiter: ',',
  parse: async (input, _ctx, opts) => {
    checkBenchValue(opts.name, input);
    return input;
  },
});
