import type { Command } from '@oclif/core';
import { formatError } from './errors.js';

/**
 * Prints the error as one line on stderr and exits. Not Command.error(): oclif wraps its message
 * at the terminal width (80 columns when piped), which breaks the one-line error.
 */
export function fail(cmd: Command, err: unknown, exit = 1): never {
  process.stderr.write(`Error: ${formatError(err)}\n`);
  return cmd.exit(exit);
}
