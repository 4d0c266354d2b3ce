/**
 * Colours are for a person at a terminal: never when stdout is piped or redirected, never with
 * NO_COLOR set to anything (no-color.org), nor on a dumb terminal. Every table plb draws takes its
 * style from here.
 */
export function colourEnabled(
  stream: { isTTY?: boolean } = process.stdout,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  return stream.isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
}

/** cli-table3's `style`: coloured head and border at a terminal, none otherwise. */
export function tableStyle(colour = colourEnabled()): { head: string[]; border: string[] } {
  // Empty lists, not cli-table3's defaults (red head, grey border): those colour whenever
  // @colors/colors sees a TTY, NO_COLOR or not.
  return colour ? { head: ['cyan'], border: ['grey'] } : { head: [], border: [] };
}
